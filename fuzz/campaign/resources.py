"""How many campaign workers this machine can hold: the CPUs this process may use, and the memory
available for the workers' backends.

The memory a worker costs is the line through two measured peaks of the whole process tree (the main
process, its workers and their crash-isolated ORT workers) in default campaigns: 2722 MiB at ``-j 2`` on
lavapipe and 6567 MiB at ``-j 8`` on an H200 machine (docs/campaign.md#memory). So ``WORKER_MIB`` =
(6567 - 2722) / 6 = 641 MiB per worker and ``BASE_MIB`` = 2722 - 2 * 641 = 1440 MiB for the rest (the main
process creates every backend once to probe it). The two runs used different adapters and the bounded
caches keep filling after 3 minutes, so this is an estimate, not a bound: ``-j`` overrides it.

psutil's available memory is the machine's: a container's cgroup limit (Kubernetes ``limits``, Docker
``--memory``) is not seen, nor is a CPU quota; give ``-j`` explicitly there.
"""

from __future__ import annotations

import os

import psutil

WORKER_MIB = (6567 - 2722) / (8 - 2)
"""Resident memory one more worker adds to a default campaign, about 641 MiB (see the module docstring)."""
BASE_MIB = 2722 - 2 * WORKER_MIB
"""Resident memory of a default campaign besides its workers, about 1440 MiB."""


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
