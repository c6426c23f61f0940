"""What the campaign says about compiling: pipelines per backend and the seconds of the calls that compiled
them (``Backend.pipelines_compiled``, counted by ``CountingBackend``), the first run's price on a software
adapter."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import settings
from support.fakes import CompilingBackend

from fuzz.backends.oracle import OracleBackend
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.unit import run_unit
from fuzz.cli import main
from fuzz.ops.linear_attention.strategies import Limits


def test_a_unit_counts_what_each_backend_compiled() -> None:
    compiling = CompilingBackend()
    result = run_unit(WorkUnit("backends-agree", 0, 0), [OracleBackend(), compiling], limits=Limits.ci(),
                      settings=settings(settings(), max_examples=20))
    assert result.checked > 0
    assert result.backend_compiles == {"compiling": len(compiling.built)} and compiling.built
    assert 0 < result.compile_seconds["compiling"] <= result.backend_seconds["compiling"]
    again = run_unit(WorkUnit("backends-agree", 0, 0), [OracleBackend(), compiling], limits=Limits.ci(),
                     settings=settings(settings(), max_examples=20))
    assert again.backend_compiles["compiling"] == 0 and again.compile_seconds["compiling"] == 0, \
        "the same cases again compile nothing new"


def test_the_campaign_reports_compilations(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    status = main(["campaign", "--examples", "20", "--examples-per-unit", "10", "-j", "1", "--seed", "3",
                   "--properties", "backends-agree", "--backends", "oracle,support.fakes:CompilingBackend",
                   "--limits", "ci", "--out", str(out)])
    assert status == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend_compiles"]["compiling"] > 0 and "oracle" not in summary["backend_compiles"]
    assert summary["compile_seconds"]["compiling"] <= summary["backend_seconds"]["compiling"]
    assert f"{summary['backend_compiles']['compiling']} pipelines compiled" in capsys.readouterr().out
