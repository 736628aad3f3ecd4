from hpactl.cli import main

raise SystemExit(main())
