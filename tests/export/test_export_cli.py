"""``lafuzz export``: the subcommand writes the four files, and bad input is one line and exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.cli import main
from fuzz.usage import EXIT_USAGE

CORPUS = Path(__file__).resolve().parents[2] / "corpus"


def test_export_writes_the_report(tmp_path, capsys):
    out = tmp_path / "report"
    status = main(["export", str(CORPUS / "backends-agree/ort-webgpu-shared-beta"), "--out", str(out),
                   "--backends", "oracle", "--no-run"])
    assert status == 0
    assert sorted(p.name for p in out.iterdir()) == ["ISSUE.md", "case.json", "model.onnx", "repro-core.mjs",
                                                      "repro.html", "repro.mjs", "repro.py", "serve.mjs",
                                                      "test_data_set_0"]
    assert "| oracle | host CPU (float64 NumPy) | yes | the reference (float64) |" in (out / "ISSUE.md").read_text()
    assert f"to {out}" in capsys.readouterr().out


def test_a_directory_that_is_not_an_entry_is_one_line(tmp_path, capsys):
    assert main(["export", str(tmp_path), "--out", str(tmp_path / "out")]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert err.startswith("lafuzz export: ") and len(err.splitlines()) == 1


def test_an_entry_one_call_cannot_show_is_one_line(tmp_path, capsys):
    entry = CORPUS / "prefix-oracle" / "ort-cpu-subnormal-readout"
    assert main(["export", str(entry), "--out", str(tmp_path / "out"), "--backends", "oracle"]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert err.startswith("lafuzz export: ") and len(err.splitlines()) == 1, err
    assert "ran this case as W = 0 prefix runs" in err


@pytest.mark.slow
def test_a_campaign_exports_each_onnx_runtime_finding_beside_its_entry(tmp_path, capsys):
    """``lafuzz campaign`` hands every entry it writes to the upstream export (the campaign itself knows export
    only as that callback): an EP finding gets its ``upstream/`` folder."""
    out = tmp_path / "run"
    status = main(["campaign", "--examples", "60", "--examples-per-unit", "30", "-j", "1", "--limits", "ci",
                   "--seed", "2", "--properties", "backends-agree", "--corpus", str(tmp_path / "no-corpus"),
                   "--backends", "oracle,support.fakes:SharedBetaAt050", "--out", str(out)])
    assert status == 1
    [entry] = [p.parent for p in (out / "corpus").rglob("entry.json")]
    assert sorted(p.name for p in (entry / "upstream").iterdir()) == [
        "ISSUE.md", "case.json", "model.onnx", "repro-core.mjs", "repro.html", "repro.mjs", "repro.py", "serve.mjs",
        "test_data_set_0"]
