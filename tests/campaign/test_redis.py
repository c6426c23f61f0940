"""Two shards sharing one Redis example database (a real redis-server on loopback) see each other's findings."""

from __future__ import annotations

import pytest
from support.redis_server import redis_server

from fuzz.campaign.campaign import CampaignConfig, run_campaign
from fuzz.campaign.progress import Progress
from fuzz.campaign.shard import Shard
from fuzz.campaign.summary import Summary


@pytest.fixture
def redis_url():
    with redis_server() as server:
        yield server.url


def _shard(tmp_path, url: str, index: int) -> Summary:
    config = CampaignConfig(properties=["backends-agree"], backends=["oracle", "support.fakes:BrokenBackend"],
                            seed=5, shard=Shard(index, 2), time_budget=None, example_budget=20,
                            examples_per_unit=20, limits="ci", out=tmp_path / f"s{index}", database=url,
                            known_corpus=None)
    return run_campaign(config, Progress(interval=60))


@pytest.mark.slow
def test_shards_share_findings_through_redis(tmp_path, redis_url):
    first = _shard(tmp_path, redis_url, 1)
    assert first.findings, "shard 1 should find the planted bug"
    second = _shard(tmp_path, redis_url, 2)
    shared = [f for f in second.findings if "published by another shard" in f["report"]]
    assert shared, "shard 2 did not see shard 1's finding"
    assert {f["id"] for f in shared} <= {f["id"] for f in first.findings} | {f["id"] for f in second.findings}
    assert set(first.database_keys).isdisjoint(second.database_keys)
