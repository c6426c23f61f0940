"""Shards: parsing ``--shard`` (and ``--shard auto`` from a CI's variables), disjoint and reproducible
work, and merging shard outputs into one."""

from __future__ import annotations

import itertools
import json

import pytest

from fuzz.campaign.campaign import CampaignConfig, run_campaign
from fuzz.campaign.merge import merge_runs
from fuzz.campaign.progress import Progress
from fuzz.campaign.shard import ENVIRONMENT_SOURCES, Shard, work_units
from fuzz.cli import main

PROPS = ["backends-agree", "leading-zeros", "error-parity"]


@pytest.mark.parametrize("text", ["0/2", "3/2", "1/0", "a/b", "2", "1/2/3", "-1/2", ""])
def test_bad_shard_is_a_clear_error(text):
    with pytest.raises(ValueError, match="shard"):
        Shard.parse(text)


def test_bad_shard_on_the_command_line_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["campaign", "--shard", "3/2", "--examples", "1"])
    assert exit_info.value.code == 2
    assert "need 1 <= i <= n" in capsys.readouterr().err


@pytest.mark.parametrize(("env", "shard", "source"), [
    ({"LAFUZZ_SHARD": "3/4"}, Shard(3, 4), "LAFUZZ_SHARD"),
    ({"CI_NODE_INDEX": "4", "CI_NODE_TOTAL": "4"}, Shard(4, 4), "CI_NODE_INDEX"),
    ({"CIRCLE_NODE_INDEX": "0", "CIRCLE_NODE_TOTAL": "3"}, Shard(1, 3), "CIRCLE_NODE_INDEX"),
    ({"BUILDKITE_PARALLEL_JOB": "4", "BUILDKITE_PARALLEL_JOB_COUNT": "5"}, Shard(5, 5), "BUILDKITE_PARALLEL_JOB"),
    ({"JOB_COMPLETION_INDEX": "1", "LAFUZZ_SHARD_COUNT": "8"}, Shard(2, 8), "JOB_COMPLETION_INDEX"),
    # first match wins: LAFUZZ_SHARD over the CI's own variables
    ({"LAFUZZ_SHARD": "1/2", "CI_NODE_INDEX": "3", "CI_NODE_TOTAL": "3"}, Shard(1, 2), "LAFUZZ_SHARD"),
    # a GitLab job without `parallel:` has CI_NODE_TOTAL=1 and no CI_NODE_INDEX: the next source decides
    ({"CI_NODE_TOTAL": "1", "CIRCLE_NODE_INDEX": "1", "CIRCLE_NODE_TOTAL": "2"}, Shard(2, 2), "CIRCLE_NODE_INDEX"),
])
def test_shard_from_each_ci_and_batch_system(env, shard, source):
    found, used = Shard.from_environment(env)
    assert found == shard
    assert used.startswith(source)


@pytest.mark.parametrize(("env", "message"), [
    ({}, "LAFUZZ_SHARD=i/n.*CI_NODE_INDEX.*CIRCLE_NODE_INDEX.*BUILDKITE_PARALLEL_JOB.*JOB_COMPLETION_INDEX"),
    ({"CI_NODE_TOTAL": "1"}, "found no shard"),
    ({"LAFUZZ_SHARD": "5/4"}, "LAFUZZ_SHARD: shard 5/4"),
    ({"JOB_COMPLETION_INDEX": "0"}, "LAFUZZ_SHARD_COUNT is not: an Indexed Job does not tell its pods"),
    ({"CIRCLE_NODE_INDEX": "x", "CIRCLE_NODE_TOTAL": "2"}, "CIRCLE_NODE_INDEX='x' is not a whole number"),
    ({"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "2"}, r"CI_NODE_INDEX=0, CI_NODE_TOTAL=2 \(GitLab"),
])
def test_no_or_a_bad_shard_in_the_environment_is_a_clear_error(env, message):
    with pytest.raises(ValueError, match=message):
        Shard.from_environment(env)


def _without_shard_variables(monkeypatch) -> None:
    for source in ENVIRONMENT_SOURCES:
        monkeypatch.delenv(source.index, raising=False)
    monkeypatch.delenv("LAFUZZ_SHARD", raising=False)


def test_shard_auto_needs_a_seed_and_a_shard_in_the_environment(monkeypatch, capsys):
    _without_shard_variables(monkeypatch)
    assert main(["campaign", "--shard", "auto", "--examples", "1"]) == 2
    assert "--shard auto needs --seed" in capsys.readouterr().err
    assert main(["campaign", "--shard", "auto", "--seed", "1", "--examples", "1"]) == 2
    assert "found no shard in the environment: set LAFUZZ_SHARD=i/n" in capsys.readouterr().err


@pytest.mark.slow
def test_shard_auto_runs_the_shard_the_environment_names(tmp_path, monkeypatch, capsys):
    _without_shard_variables(monkeypatch)
    monkeypatch.setenv("CI_NODE_INDEX", "2")
    monkeypatch.setenv("CI_NODE_TOTAL", "3")
    out = tmp_path / "run"
    assert main(["campaign", "--shard", "auto", "--seed", "9", "--examples", "2", "--examples-per-unit", "1",
                 "-j", "1", "--backends", "oracle", "--limits", "ci", "--out", str(out),
                 "--corpus", str(tmp_path / "none")]) == 0
    assert "[lafuzz] shard 2/3 from CI_NODE_INDEX/CI_NODE_TOTAL (GitLab" in capsys.readouterr().err
    config = json.loads((out / "summary.json").read_text())["config"]
    assert (config["shard"], config["seed"]) == ("2/3", 9)


def _keys(shard: Shard, rounds: int = 100) -> list[str]:
    """The shard's unit keys among the first ``rounds`` rounds of the round-robin."""
    units = itertools.takewhile(lambda u: u.number < rounds, work_units(PROPS, 7, shard))
    return [u.key for u in units]


def test_shards_are_disjoint_cover_everything_and_repeat():
    per_shard = [set(_keys(Shard(i, 3))) for i in (1, 2, 3)]
    for a, b in itertools.combinations(per_shard, 2):
        assert not a & b
    assert set().union(*per_shard) == set(_keys(Shard(1, 1)))
    assert all(len(keys) > 60 for keys in per_shard), "shards should be roughly balanced"
    assert _keys(Shard(2, 3)) == _keys(Shard(2, 3))
    seeds = [u.seed for u in itertools.islice(work_units(PROPS, 7, Shard(1, 2)), 20)]
    other = [u.seed for u in itertools.islice(work_units(PROPS, 8, Shard(1, 2)), 20)]
    assert seeds != other, "the campaign seed must change the unit seeds"


def _shard_run(tmp_path, index: int) -> CampaignConfig:
    config = CampaignConfig(properties=PROPS, backends=["oracle"], seed=3, shard=Shard(index, 2),
                            time_budget=None, example_budget=30, examples_per_unit=10, limits="ci",
                            out=tmp_path / f"shard{index}", known_corpus=None)
    run_campaign(config, Progress(interval=60))
    return config


@pytest.mark.slow
def test_two_shards_run_disjoint_units_and_merge(tmp_path):
    summaries = []
    for index in (1, 2):
        _shard_run(tmp_path, index)
        summaries.append(json.loads((tmp_path / f"shard{index}" / "summary.json").read_text()))
    keys = [set(s["database_keys"]) for s in summaries]
    assert keys[0] and keys[1] and not keys[0] & keys[1], "shards must not share work units"
    merged = merge_runs([tmp_path / "shard1", tmp_path / "shard2"], tmp_path / "merged")
    assert merged.examples == summaries[0]["examples"] + summaries[1]["examples"]
    assert merged.units == 6
    assert set(merged.database_keys) == keys[0] | keys[1]
    assert (tmp_path / "merged" / "report.html").read_text().startswith("<!doctype html>")
    assert sum(merged.database_values_copied.values()) > 0
    assert main(["report", str(tmp_path / "merged")]) == 0
