"""What a unit of each long tier costs: run a few swarm units of each tier in one worker, as a campaign does.

Run from the repository root: ``nice .venv/bin/python docs/results/2026-12-06-long-calls/unit_costs.py [UNITS]``.
For each tier of ``fuzz.ops.linear_attention.swarm.TIERS`` and ``fuzz.ops.causal_conv.swarm.CONV_TIERS`` whose
calls exceed 64 tokens, it finds the first UNITS (default 2) unit seeds of that tier among the properties'
round-robin and runs them on every backend available here (the unit's plan decides which sit out), printing per
unit: wall seconds, examples, the ``T`` and chunk buckets reached, the plan and the seconds per backend.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from fuzz.backends import probe_all
from fuzz.campaign import swarm
from fuzz.campaign.campaign import CampaignConfig
from fuzz.campaign.shard import Shard, work_units
from fuzz.campaign.worker import Worker, plan_for
from fuzz.engine.properties import PROPERTIES
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION
from fuzz.ops.causal_conv import swarm as conv_swarm
from fuzz.ops.linear_attention import swarm as la_swarm

OPS = [LINEAR_ATTENTION.name, CAUSAL_CONV.name]
LONG = [t.name for t in la_swarm.TIERS if max(hi for _, hi in t.seq_lens) > 64] + \
    [t.name for t in conv_swarm.CONV_TIERS if max(hi for _, hi in t.seq_lens) > 64]


def main() -> None:
    per_tier = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    backends = [a.name for a in probe_all() if a.capabilities is not None]
    config = CampaignConfig(properties=list(PROPERTIES), backends=backends, ops=OPS,
                            out=Path(tempfile.mkdtemp(prefix="unit-costs-")))
    worker = Worker(config)
    found: dict[str, int] = {}
    for unit in work_units(list(PROPERTIES), 1, Shard(1, 1)):
        if all(found.get(t, 0) >= per_tier for t in LONG):
            break
        if unit.number < swarm.WARM_UP_ROUNDS or PROPERTIES[unit.property].invalid_input:
            continue
        plan = plan_for("swarm", unit, 50, OPS)
        if plan.tier not in LONG or found.get(plan.tier, 0) >= per_tier:
            continue
        found[plan.tier] = found.get(plan.tier, 0) + 1
        started = time.monotonic()
        result, _ = worker.run(unit)
        seconds = {b: round(s, 2) for b, s in sorted(result.backend_seconds.items(), key=lambda x: -x[1]) if s >= 0.05}
        reached = sorted(label for label in result.coverage if label.startswith(("T: ", "conv T: ", "prefill chunks")))
        print(f"{unit.property} {time.monotonic() - started:.1f} s, {result.examples} examples ({', '.join(reached)})"
              f"\n    {plan.describe()}\n    backend seconds {seconds}", flush=True)
    worker.close()


if __name__ == "__main__":
    main()
