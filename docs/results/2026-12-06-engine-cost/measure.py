"""The engine's own cost per example, and the cases checked per second, of the main properties.

Runs each property through ``fuzz.campaign.unit.run_unit`` (the suite's one Hypothesis driver), unit after unit as a
campaign's worker would (``--limits swarm``: each unit's own swarm plan, its example count and whether it climbs the
error ratio; or one fixed preset), from a fixed seed, with no example database, and prints per op and property:
examples, cases checked (a packed example checks one case per slice), wall seconds, the wall seconds inside the
backends, this process's CPU time per example (the engine's own cost, with the oracle's calls and a kernel backend's
driver threads: on a shared machine wall time is mostly other processes' load; a timer around every backend call
would cost a system call each), and cases per second of wall time. A digest of every
example's summary and worst ratio shows that two trees drew and judged the same cases.

    PYTHONPATH=. .venv/bin/python docs/results/2026-12-06-engine-cost/measure.py --backends oracle,wgpu,wgpu-conv
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import time
from collections.abc import Sequence
from dataclasses import replace

from hypothesis import settings

from fuzz import environment
from fuzz.backends import Backend, create
from fuzz.campaign import profiles
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.swarm import WARM_UP_ROUNDS
from fuzz.campaign.unit import run_unit
from fuzz.campaign.worker import plan_for
from fuzz.corpus.known_issues import KNOWN_ISSUES
from fuzz.engine.checking import CheckResult, Property
from fuzz.engine.properties import PROPERTIES
from fuzz.model.case import Case

MAIN = ("backends-agree", "prefix-oracle", "output-parity", "poison-invariance", "leading-zeros")
"""The properties measured: the single-call ones, which every backend runs."""

KNOWN = frozenset(issue.id for issue in KNOWN_ISSUES)
"""Passed as already shrunk: a backend sits out the cases its documented issues affect, as in a campaign once each
issue is shrunk, so no unit ends in shrinking a known failure."""

SEEN: list[str] = []
"""``summary ratio slices`` of every example checked, in order (the digest)."""


def _recording(prop: Property) -> Property:
    def check(case: Case, backends: Sequence[Backend]) -> CheckResult | None:
        result = prop.check(case, backends) or CheckResult()
        SEEN.append(f"{case.summary()} {result.max_ratio!r} {case.notes.get('pack', 1)}")
        return result
    return replace(prop, check=check)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backends", default="oracle", help="comma-separated; the oracle is always first")
    parser.add_argument("--ops", default="LinearAttention,CausalConvWithState")
    parser.add_argument("--properties", default=",".join(MAIN))
    parser.add_argument("--limits", default="swarm", help="swarm (each unit its own plan) or a preset name")
    parser.add_argument("--units", type=int, default=4, help="units per op and property")
    parser.add_argument("--examples", type=int, default=50, help="examples per unit (a swarm plan may change it)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", help="write a cProfile of the units here")
    args = parser.parse_args()
    environment.prepare()
    PROPERTIES.update({name: _recording(PROPERTIES[name]) for name in MAIN})  # in this process only
    names = ["oracle", *(n for n in args.backends.split(",") if n and n != "oracle")]
    backends = [create(n, isolate=True) for n in names]  # isolated as a campaign creates them
    profiler = cProfile.Profile() if args.profile else None
    print(f"{'op':20} {'property':18} {'examples':>8} {'cases':>6} {'wall s':>7} {'backend s':>9} "
          f"{'cpu ms/ex':>16} {'cases/s':>8}  digest")
    totals: list[float] = [0, 0, 0.0, 0.0, 0.0]
    for op in args.ops.split(","):
        runs = [b for b in backends if op in b.capabilities().ops]
        for prop in args.properties.split(","):
            SEEN.clear()
            examples, wall, inside, findings = 0, 0.0, 0.0, []
            cpu = time.process_time()
            for number in range(WARM_UP_ROUNDS, WARM_UP_ROUNDS + args.units):  # past the warm-up's small units
                unit = WorkUnit(prop, number, args.seed * 1000 + number)
                plan = plan_for(args.limits, unit, args.examples, (op,))
                started = time.perf_counter()
                if profiler:
                    profiler.enable()
                result = run_unit(unit, runs, limits=plan.limits, targeting=plan.targeting, shrunk_issues=set(KNOWN),
                                  settings=settings(profiles.get("campaign"), max_examples=plan.examples,
                                                    database=None))
                if profiler:
                    profiler.disable()
                wall += time.perf_counter() - started
                inside += sum(result.backend_seconds.values())
                examples += result.examples
                findings += [f"{result.finding.kind}"] if result.finding else []
            engine = time.process_time() - cpu
            cases = sum(int(s.rsplit(" ", 1)[1]) for s in SEEN)
            digest = hashlib.sha256("\n".join(SEEN).encode()).hexdigest()[:12]
            totals = [totals[0] + examples, totals[1] + cases, totals[2] + wall, totals[3] + inside, totals[4] + engine]
            print(f"{op:20} {prop:18} {examples:8d} {cases:6d} {wall:7.2f} {inside:9.2f} "
                  f"{1000 * engine / max(1, examples):16.2f} {cases / wall:8.1f}  {digest}"
                  + (f"  findings: {', '.join(findings)}" if findings else ""))
    print(f"{'all':39} {int(totals[0]):8d} {int(totals[1]):6d} {totals[2]:7.2f} {totals[3]:9.2f} "
          f"{1000 * totals[4] / max(1, totals[0]):16.2f} {totals[1] / totals[2]:8.1f}")
    if profiler:
        profiler.dump_stats(args.profile)


if __name__ == "__main__":
    main()
