"""docs/flags.md and the example config are generated from the code and must be current."""

from __future__ import annotations

from pathlib import Path

from hpactl.cli import flagdoc
from hpactl.config import SETTINGS
from hpactl.model.featuregates import KNOWN_GATES

ROOT = Path(__file__).parents[2]


def test_docs_flags_md_is_current() -> None:
    committed = (ROOT / "docs" / "flags.md").read_text(encoding="utf-8")
    assert committed == flagdoc.render_markdown(), (
        f"docs/flags.md is stale; run: {flagdoc.REGENERATE}"
    )


def test_example_config_is_current() -> None:
    committed = (ROOT / "config" / "kube-controller-manager-config.yaml").read_text(
        encoding="utf-8"
    )
    assert committed == flagdoc.render_example_config(), (
        f"the example config is stale; run: {flagdoc.REGENERATE_EXAMPLE}"
    )


def test_reference_mentions_every_flag_field_and_gate() -> None:
    text = flagdoc.render_markdown()
    for setting in SETTINGS:
        for flag in setting.flags:
            assert f"`{flag}`" in text, flag
        if setting.file_field:
            assert f"`{setting.file_field}`" in text, setting.file_field
    for gate in KNOWN_GATES:
        assert f"`{gate}`" in text, gate


def test_example_lists_every_file_field() -> None:
    text = flagdoc.render_example_config()
    for setting in SETTINGS:
        if setting.file_field:
            assert f"{setting.file_field.rpartition('.')[2]}:" in text, setting.file_field
