"""The README walkthrough's pods look as on a cluster: `kubectl get pods` shows them
1/1 Ready (the emulator runs no kubelet, so the manifest gives their containerStatuses)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from hpactl.emulator import Emulator
from hpactl.emulator.tables import _print_pod

README = Path(__file__).resolve().parents[1] / "README.md"


def _web_yaml() -> str:
    text = README.read_text(encoding="utf-8")
    m = re.search(r"cat > \"\$W/web.yaml\" <<'EOF'\n(.*?)\nEOF\n", text, re.S)
    assert m is not None, "the README's web.yaml heredoc moved"
    return m.group(1)


def test_the_walkthrough_pods_are_ready_in_kubectls_ready_column() -> None:
    emu = Emulator()
    assert emu.load_manifests([_web_yaml()]) == 3
    now = datetime.now(UTC)
    for name in ("web-1", "web-2"):
        pod = emu.store.get("", "pods", "default", name)
        assert pod is not None
        row = _print_pod(pod, now)
        assert row[1:3] == ["1/1", "Running"], row


def test_the_walkthrough_stops_hpactl_before_the_emulator() -> None:
    text = README.read_text(encoding="utf-8")
    step = text[text.index("**6. Stop**") :]
    assert step.index("kill %3") < step.index("kill $(jobs -p)")
    # %3 is hpactl: the third command started with & in the walkthrough.
    background = re.findall(r"^(?:OTEL\S* )?(\S+)[^\n]*(?:\n  [^\n]*)*&$", text, re.M)
    assert [b.split("/")[-1] for b in background][:3] == ["hpactl", "python", "hpactl"]
