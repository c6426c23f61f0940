"""What every op's swarm shares: the builds in worker processes are the backends' one list."""

from __future__ import annotations

from fuzz.backends.registry import WORKER_BUILDS
from fuzz.campaign import swarm
from fuzz.corpus.known_issues import WORKER_BUILD_STACKS


def test_the_swarm_and_the_catalogue_name_the_same_worker_builds() -> None:
    assert set(swarm.WORKER_BUILD_SHARES) == set(WORKER_BUILDS) == set(WORKER_BUILD_STACKS)
    assert set(WORKER_BUILDS) < set(swarm.ORT_BUILDS)
