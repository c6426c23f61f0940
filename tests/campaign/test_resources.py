"""The default ``-j``: one worker per CPU this process may use, no more than the available memory holds."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from fuzz.campaign import resources

GIB = 2**30


@pytest.fixture
def machine(monkeypatch):
    """Pretend this process may use ``cpus`` CPUs and the machine has ``available_gib`` GiB available."""

    def set_up(cpus: int, available_gib: float) -> None:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
        monkeypatch.setattr(resources.psutil, "virtual_memory",
                            lambda: SimpleNamespace(available=int(available_gib * GIB)))

    return set_up


def test_the_estimate_is_the_line_through_the_two_measured_campaigns():
    def tree_mib(jobs: int) -> int:
        return round(resources.BASE_MIB + jobs * resources.WORKER_MIB)

    assert (tree_mib(2), tree_mib(8)) == (2722, 6567)
    assert (round(resources.BASE_MIB), round(resources.WORKER_MIB)) == (1440, 641)


@pytest.mark.parametrize(("cpus", "available_gib", "jobs"), [
    (16, 128, 16),  # plenty of memory: one per CPU
    (64, 16, 23),   # (16384 - 1440) / 641 = 23.3 workers fit
    (4, 3, 2),      # (3072 - 1440) / 641 = 2.5
    (8, 1, 1),      # not even the base: still one worker
])
def test_default_jobs_is_the_smaller_of_cpus_and_memory(machine, cpus, available_gib, jobs):
    machine(cpus, available_gib)
    assert resources.default_jobs() == jobs


def test_affinity_not_the_cpu_count_decides(machine, monkeypatch):
    machine(cpus=2, available_gib=64)
    monkeypatch.setattr(os, "cpu_count", lambda: 32)
    assert resources.default_jobs() == 2


def test_without_sched_getaffinity_every_cpu_counts(machine, monkeypatch):
    machine(cpus=2, available_gib=64)
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert resources.usable_cpus() == 6
    assert resources.default_jobs() == 6
