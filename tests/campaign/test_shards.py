"""Shards: parsing ``--shard``, disjoint and reproducible work, and merging shard outputs into one."""

from __future__ import annotations

import itertools
import json

import pytest

from fuzz.campaign.campaign import CampaignConfig, run_campaign
from fuzz.campaign.merge import merge_runs
from fuzz.campaign.progress import Progress
from fuzz.campaign.shard import Shard, work_units
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
