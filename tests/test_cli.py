import subprocess
import sys

from hpactl import __version__
from hpactl.cli import main


def test_version_flag_prints_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "hpactl", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"hpactl {__version__}"


def test_no_command_prints_help(capsys: object) -> None:
    assert main([]) == 0
