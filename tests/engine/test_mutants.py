"""Deliberately wrong backends: each property must catch its mutant and shrink it to a small case.

Every mutant wraps the float64 oracle and breaks one thing a real kernel could get wrong. The
mutants live here, not in the product: they exist only to prove that the properties have teeth.
Each test also proves the failure is reproducible from the saved corpus entry alone, with the
``lafuzz repro`` command its report prints.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings
from support.oracle_mutants import KeepsLeadingSlots, OracleMutant, SeedsFromFirstSlot

import oracles
from fuzz.backends import Crashed, Rejected
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.unit import UnitResult, run_unit
from fuzz.corpus.entry import read_entry
from fuzz.engine.properties import PROPERTIES
from fuzz.model.case import Case
from fuzz.model.findings import PropertyFailure
from fuzz.ops.linear_attention.strategies import Limits
from oracles.recurrence import run_recurrence, seed_state
from oracles.validation import GATED_RULES

HUNT_EXAMPLES = 500
"""Mutants hide in corners (fp16, T < W, GQA): the search gets at least this much room (under the
default ``ci`` profile, derandomized, so stable)."""


def _hunt(prop: str, mutant: OracleMutant, tmp_path: Path, examples: int = HUNT_EXAMPLES) -> UnitResult:
    """Run ``prop`` on the oracle and ``mutant`` through the suite's one Hypothesis driver."""
    hunt = settings(settings(), max_examples=max(examples, settings().max_examples))
    return run_unit(WorkUnit(prop, 0, 0), [mutant.oracle, mutant], limits=Limits.ci(), settings=hunt,
                    save_dir=tmp_path)


def _all_states(case: Case) -> tuple[np.ndarray, list[np.ndarray]]:
    """The oracle's output and the states after 0, 1, ..., T tokens (index 0 = the seed)."""
    dims = case.dims()
    x = case.inputs
    seed = seed_state(dims, x.get("past_state"))
    output, states = run_recurrence(dims, x["query"], x["key"], x["value"], seed, x.get("decay"), x.get("beta"))
    return output, [seed, *states]


class OffByOneSlot(OracleMutant):
    """Slot ``j`` holds the state after ``T - W + j`` tokens: one token short."""

    name = "off-by-one-slot"

    def mutate(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        output, present = self.oracle.run(case)
        w, t = case.state_window, case.seq_len
        if w:
            _, states = _all_states(case)
            present = np.stack([states[t - w + j] if t - w + j >= 0 else np.zeros_like(states[0])
                                for j in range(w)])
        return output, present


class StaleLeadingSlot(KeepsLeadingSlots):
    """Leading slots (``T < W``) are left unwritten: they keep the caller's ``past_state[j]``."""

    name = "stale-leading-slot"


class ReadsFirstSlot(SeedsFromFirstSlot):
    """Seeds the recurrence from ``past_state[0]`` instead of ``past_state[W-1]``."""

    name = "reads-past-slot-0"


class WrongHeadMapping(OracleMutant):
    """GQA read as interleaved: query head ``i`` reads kv head ``i % H_kv`` (not ``i // (H_q/H_kv)``),
    and in inverse GQA kv head ``h`` is read by query head ``h % H_q`` (not ``h // (H_kv/H_q)``)."""

    name = "wrong-head-mapping"

    def mutate(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        _, present = self.oracle.run(case)
        d = case.dims()
        _, states = _all_states(case)
        s = np.stack(states[1:], axis=1)  # (B, T, H_kv, d_k, d_v)
        q = case.inputs["query"].astype(np.float64).reshape(d.batch, d.seq_len, d.q_heads, d.d_k)
        heads = np.arange(d.out_heads)
        kv, qh = (heads % d.kv_heads, heads) if d.q_heads >= d.kv_heads else (heads, heads % d.q_heads)
        output = d.scale * np.einsum("bthkv,bthk->bthv", s[:, :, kv], q[:, :, qh])
        return output.reshape(d.output_shape), present


class DecaySkippedOnOneRow(OracleMutant):
    """The gated rules forget to decay the last key row of the state."""

    name = "decay-skipped-on-one-row"

    def mutate(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        d = case.dims()
        if d.update_rule in GATED_RULES:
            g = case.inputs["decay"].astype(np.float64).reshape(d.batch, d.seq_len, d.kv_heads, -1)
            rows = np.broadcast_to(g, (d.batch, d.seq_len, d.kv_heads, d.d_k)).copy()
            rows[..., -1] = 0.0
            case = case.with_inputs(decay=rows.reshape(d.batch, d.seq_len, -1).astype(case.dtype))
        return self.oracle.run(case)


class Fp16RoundedTwice(OracleMutant):
    """fp16 state carried between tokens in fp16: every later result is rounded twice (or more)."""

    name = "fp16-rounded-twice"

    def mutate(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        if case.dtype != np.float16:
            return self.oracle.run(case)
        w, t = case.state_window, case.seq_len
        past = case.inputs.get("past_state")
        state = None if past is None else (past[-1] if w else past)
        outputs, states = [], []
        for i in range(t):
            step = {n: (x[:, i:i + 1] if n != "past_state" else x) for n, x in case.inputs.items()}
            step["past_state"] = state
            out, state = oracles.linear_attention(**step, **{**case.attrs, "state_window": 0})
            outputs.append(out.astype(np.float16))
            state = state.astype(np.float16)
            states.append(state)
        if not w:
            return np.concatenate(outputs, axis=1), states[-1]
        zero = np.zeros_like(states[0])
        present = np.stack([states[t - w + j] if t - w + j >= 0 else zero for j in range(w)])
        return np.concatenate(outputs, axis=1), present


class ClobbersPast(OracleMutant):
    """Writes the new state into the caller's ``past_state`` array, though the binding is not aliased."""

    name = "clobbers-past"

    def mutate(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        output, present = self.oracle.run(case)
        past = case.inputs.get("past_state")
        if past is not None:
            past[...] = present.astype(past.dtype)
        return output, present


class AliasHazard(OracleMutant):
    """With one buffer for past and present, clears it before reading the seed: the past is lost."""

    name = "alias-hazard"
    aliasing = True

    def mutate(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        if case.aliased:
            case = case.with_inputs(past_state=None)
        return self.oracle.run(case)


class LenientBeta(OracleMutant):
    """Accepts a beta whose last axis is neither ``H_kv`` nor 1, using its first column."""

    name = "lenient-beta"

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        beta = case.inputs.get("beta")
        try:
            return self.oracle.run(case)
        except Rejected as err:
            if beta is None or beta.ndim != 3 or not err.message.startswith("beta:"):
                raise
            return self.oracle.run(case.with_inputs(beta=beta[..., :1]))


class CrashesOnBadKey(OracleMutant):
    """Dies (as the crash isolation reports it) on any key its validation would refuse."""

    name = "crashes-on-bad-key"

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        try:
            return self.oracle.run(case)
        except Rejected as err:
            if "key" in err.message:
                raise Crashed(self.name, "worker killed by SIGSEGV") from err
            raise


SMALL = {"batch": 2, "seq_len": 3, "q_heads": 4, "kv_heads": 4, "d_k": 2, "d_v": 2}
"""What "shrunk to a small case" means: every size at most this (Limits.ci() allows 9 tokens, 8-wide heads)."""

MUTANTS = [
    # (property, mutant, expected failure kind, bounds on the shrunk case)
    ("prefix-oracle", OffByOneSlot, "mismatch", SMALL),
    ("leading-zeros", StaleLeadingSlot, "mismatch", SMALL),
    ("poison-invariance", ReadsFirstSlot, "mismatch", SMALL),
    ("output-parity", ReadsFirstSlot, "mismatch", SMALL),
    ("backends-agree", WrongHeadMapping, "mismatch", SMALL),
    ("prefix-oracle", DecaySkippedOnOneRow, "mismatch", SMALL),
    ("prefix-oracle", Fp16RoundedTwice, "mismatch", SMALL),
    ("select-resume", ClobbersPast, "clobbered-input", SMALL),
    ("aliasing", AliasHazard, "mismatch", SMALL),
    ("error-parity", LenientBeta, "accepted-invalid", {}),
    ("error-parity", CrashesOnBadKey, "crash", {}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("prop", "mutant", "kind", "bounds"), MUTANTS,
                         ids=[f"{p}-{m.name}" for p, m, _, _ in MUTANTS])
def test_property_catches_mutant(prop: str, mutant: type[OracleMutant], kind: str, bounds: dict[str, int],
                                 tmp_path: Path) -> None:
    bad = mutant()
    failure = _hunt(prop, bad, tmp_path).finding
    assert failure is not None, f"{prop} did not catch {bad.name}"
    assert (failure.property, failure.kind) == (prop, kind), failure.report
    assert bad.name in failure.backends
    case = failure.case
    if bounds:
        dims = case.dims()
        too_big = {k: getattr(dims, k) for k, cap in bounds.items() if getattr(dims, k) > cap}
        assert not too_big, f"shrunk case still large {too_big}: {case.summary()}"
    else:
        assert case.inputs["query"].size <= 64, case.summary()
    print(f"shrunk: {case.summary()}")

    saved = read_entry(tmp_path / prop / failure.id)
    assert saved.finding.case.identical(case)
    assert f"reproduce: lafuzz repro {tmp_path / prop / failure.id}" in failure.report
    with pytest.raises(PropertyFailure) as again:
        PROPERTIES[prop].check(saved.finding.case, [bad.oracle, mutant()])
    assert again.value.finding.signature == failure.signature


@pytest.mark.slow
def test_the_printed_repro_command_reproduces(tmp_path: Path) -> None:
    """The ``lafuzz repro`` line of a failure report, run as printed, re-checks the saved case and fails."""
    failure = _hunt("prefix-oracle", OffByOneSlot(), tmp_path).finding
    assert failure is not None
    command = failure.report.rsplit("reproduce: ", 1)[1].split()
    assert command[:2] == ["lafuzz", "repro"] and command[-2] == "--backends"
    command[-1] = f"oracle,{__name__}:OffByOneSlot"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    run = subprocess.run([sys.executable, "-m", "fuzz.cli", *command[1:]], capture_output=True, text=True,
                         timeout=120, env=env)
    assert run.returncode == 1 and "regression" in run.stdout, run.stdout + run.stderr


class SometimesReadsFirstSlot(ReadsFirstSlot):
    """Reads ``past_state[0]`` on every third call only: a racy kernel, as Hypothesis sees it."""

    name = "sometimes-reads-past-slot-0"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def mutate(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        self.calls += 1
        return super().mutate(case) if self.calls % 3 == 0 else self.oracle.run(case)


def test_flaky_failure_is_still_reported(tmp_path: Path) -> None:
    failure = _hunt("poison-invariance", SometimesReadsFirstSlot(), tmp_path, examples=0).finding
    assert failure is not None and failure.kind == "mismatch"
    assert "flaky" in failure.report
