"""Backend names that come from data (a corpus entry, a summary, the example database) import nothing:
only registry names, or the names of backends given on the command line, are used; any other name is one
line, and the entry is still checked on the backends that exist. ``module:Class`` from the command line
must name a ``Backend`` subclass before anything is created."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from fuzz import cli
from fuzz.backends.registry import backend_class
from fuzz.campaign.campaign import CampaignConfig, run_campaign
from fuzz.campaign.database import shared_key
from fuzz.campaign.progress import Progress
from fuzz.campaign.worker import Worker
from fuzz.corpus import entry as corpus
from fuzz.model.case import Case
from fuzz.model.findings import Finding, Kind

PROBE = "lafuzz_hostile_probe"
HOSTILE = f"{PROBE}:Probe"
GOOD = Path(__file__).resolve().parents[2] / "corpus" / "backends-agree" / "00d86dda26a3e9f8"


@pytest.fixture
def imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A module on ``sys.path`` that leaves a file when imported; the test's ``imported()`` says if it was."""
    marker = tmp_path / "imported"
    module = f"from pathlib import Path\nPath({str(marker)!r}).touch()\nclass Probe: pass\n"
    (tmp_path / f"{PROBE}.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield lambda: marker.exists() or PROBE in sys.modules
    sys.modules.pop(PROBE, None)


def _entry(backends: tuple[str, ...]) -> corpus.Entry:
    """A small valid case, recorded as a mismatch between ``backends`` (as an entry edited by hand would say)."""
    inputs = {n: np.full((1, 1, 2), 0.5, dtype=np.float32) for n in ("query", "key", "value")}
    case = Case(inputs=inputs, attrs={"q_num_heads": 1, "kv_num_heads": 1, "update_rule": "linear"})
    return corpus.Entry(Finding(property="backends-agree", backends=backends, kind=Kind.MISMATCH, signature="s",
                                report="", case=case))


def test_repro_refuses_a_module_named_by_an_entry_without_importing_it(tmp_path: Path, capsys, imported) -> None:
    path = corpus.write_entry(tmp_path / "corpus", _entry((HOSTILE, "oracle")))
    assert cli.main(["repro", str(path)]) == 2
    out, err = capsys.readouterr()
    assert not imported()
    assert err.count("\n") == 1 and f"names backend {HOSTILE!r}, which is not a registry name" in err
    assert re.search(r"^pass +backends-agree/\S+ \[oracle\]$", out, re.M), out  # still checked on the oracle


def test_repro_of_the_hand_edited_entry_naming_os_getpid_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    path = corpus.write_entry(tmp_path / "corpus", _entry(("oracle",)))
    document = json.loads((path / "entry.json").read_text())
    document["backends"] = ["os:getpid", "oracle"]
    (path / "entry.json").write_text(json.dumps(document))
    assert cli.main(["repro", str(path)]) == 2
    out, err = capsys.readouterr()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"lafuzz repro: entry backends-agree/{path.name} names backend 'os:getpid', which is not a "
                          "registry name (oracle, ") and "refused without importing anything" in err
    assert "[oracle]" in out and "Traceback" not in out + err


def test_replay_refuses_it_in_one_line_checks_the_rest_and_exits_2(tmp_path: Path, capsys, imported) -> None:
    root = tmp_path / "corpus"
    hostile = corpus.write_entry(root, _entry((HOSTILE, "oracle")))
    corpus.write_entry(root, corpus.read_entry(GOOD))
    assert cli.main(["replay", str(root), "--backends", "oracle", "-v"]) == 2
    out = capsys.readouterr().out.splitlines()
    assert not imported()
    refused = [line for line in out if line.startswith("refused")]
    assert len(refused) == 1 and f"backends-agree/{hostile.name} [{HOSTILE}]: " in refused[0], out
    assert any(line.startswith(f"pass          backends-agree/{hostile.name} [oracle]") for line in out), out
    assert out[-1].startswith("replayed 2 entries (0 unreadable), 3 checks: ") and "1 refused" in out[-1], out


def test_a_name_given_on_the_command_line_is_used_for_an_entry_that_records_it(tmp_path: Path, capsys) -> None:
    """An entry found with ``module:Class`` records the backend's own name; given again, it is replayed."""
    path = corpus.write_entry(tmp_path / "corpus", _entry(("oracle", "broken")))
    assert cli.main(["replay", str(path), "--backends", "oracle,support.fakes:BrokenBackend", "-v"]) == 0
    assert "pass          backends-agree/" in capsys.readouterr().out  # W = 0: the planted bug is not hit


def test_a_finding_another_shard_published_is_rechecked_on_this_workers_backends(tmp_path: Path, imported) -> None:
    config = CampaignConfig(properties=["backends-agree"], backends=["oracle"], out=tmp_path, known_corpus=None)
    worker = Worker(config)
    try:
        worker.database.save(shared_key("backends-agree", worker.names), corpus.to_bytes(_entry((HOSTILE, "oracle"))))
        assert worker.shared_findings("backends-agree") == []  # the oracle agrees with itself
    finally:
        worker.close()
    assert not imported()


def test_merging_and_reporting_summaries_that_name_a_module_import_nothing(tmp_path: Path, imported) -> None:
    out = tmp_path / "run"
    config = CampaignConfig(properties=["backends-agree"], backends=["oracle"], time_budget=None, example_budget=5,
                            examples_per_unit=5, limits="ci", out=out, known_corpus=None)
    run_campaign(config, Progress(interval=60))
    summary = json.loads((out / "summary.json").read_text())
    summary["config"]["backends"] = [HOSTILE]
    summary["backends"] = {HOSTILE: summary["backends"]["oracle"]}
    summary["findings"] = [{**_entry((HOSTILE,)).finding.to_json(), "corpus_path": None, "reproduce": "-",
                            "first_unit": "x", "count": 1}]
    (out / "summary.json").write_text(json.dumps(summary))
    assert cli.main(["merge", str(out), "--out", str(tmp_path / "merged")]) == 0
    assert cli.main(["report", str(tmp_path / "merged")]) == 0
    assert not imported()


def test_a_module_class_that_is_not_a_backend_is_refused_before_anything_is_created(capsys) -> None:
    with pytest.raises(KeyError, match=re.escape("os.getpid is not a fuzz.backends.Backend subclass")):
        backend_class("os:getpid")
    assert cli.main(["repro", str(GOOD), "--backends", "os:getpid"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a fuzz.backends.Backend subclass" in err
