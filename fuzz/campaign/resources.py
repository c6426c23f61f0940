"""How many campaign workers this machine can hold: the CPUs this process may use, and the memory
available for the workers' backends.

The memory a worker costs is the line through two measured peaks of the whole process tree (the main
process, its workers and their crash-isolated ORT workers) in default campaigns (``MEASURED_PEAKS``; the runs,
their machines and dates: docs/campaign.md#memory): ``WORKER_MIB`` is its slope, ``BASE_MIB`` the rest (the main
process creates every backend once to probe it). The two runs used different adapters and the bounded caches keep
filling during a run, so this is an estimate, not a bound: ``-j`` overrides it.

psutil's available memory is the machine's: a container's cgroup limit (Kubernetes ``limits``, Docker
``--memory``) is not seen, nor is a CPU quota; give ``-j`` explicitly there.
"""

from __future__ import annotations

import os

import psutil

MEASURED_PEAKS = ((2, 2722), (8, 6567))
"""``(-j, MiB)``: the peak resident memory of two default campaigns (docs/campaign.md#memory)."""
(_FEW_JOBS, _FEW_MIB), (_MANY_JOBS, _MANY_MIB) = MEASURED_PEAKS
WORKER_MIB = (_MANY_MIB - _FEW_MIB) / (_MANY_JOBS - _FEW_JOBS)
"""Resident memory one more worker adds to a default campaign (see the module docstring)."""
BASE_MIB = _FEW_MIB - _FEW_JOBS * WORKER_MIB
"""Resident memory of a default campaign besides its workers."""


def usable_cpus() -> int:
    """CPUs this process may run on: its affinity mask (taskset, a cpuset, a batch scheduler's
    allocation), or every CPU where the platform has no ``sched_getaffinity``."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def workers_for_memory(available_mib: float) -> int:
    """How many workers ``available_mib`` holds besides the campaign's base (may be 0 or less)."""
    return int((available_mib - BASE_MIB) // WORKER_MIB)


def default_jobs() -> int:
    """The default ``-j``: one worker per usable CPU, no more than the available memory holds, at least 1."""
    available_mib = psutil.virtual_memory().available / 2**20
    return max(1, min(usable_cpus(), workers_for_memory(available_mib)))
