"""CausalConvWithState cases: valid ones within their limits and reaching every axis, invalid ones breaking one
rule each, the window's cases (short, poisoned, resume) drawn by the strategies written once for both ops, and
a conv case through the one serialisation (corpus entry, example database) with its op."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from support.sampling import broken_rules, sample

from fuzz.campaign.coverage import buckets, reached_by_op, universe
from fuzz.corpus.entry import Entry, from_bytes, read_entry, to_bytes, write_entry
from fuzz.engine.op_testing import for_limits
from fuzz.engine.properties import PROPERTIES
from fuzz.model.case import Case
from fuzz.model.findings import Finding, Kind
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION
from fuzz.ops.causal_conv.bad_inputs import CONV_RULES
from fuzz.ops.causal_conv.strategies import ConvLimits
from fuzz.ops.causal_conv.testing import TESTING as CAUSAL_CONV_TESTING

LIMITS = ConvLimits.ci()




@pytest.fixture(scope="module")
def valid() -> list[Case]:
    return sample(CAUSAL_CONV_TESTING.cases(LIMITS), 300)


def test_valid_cases_are_valid_conv_cases_within_the_limits(valid: list[Case]) -> None:
    for case in valid:
        d = case.dims()
        assert case.op is CAUSAL_CONV and d.batch <= LIMITS.max_batch and d.seq_len <= LIMITS.max_seq_len
        assert d.channels <= LIMITS.max_channels and d.kernel[-1] in LIMITS.kernel_sizes
        assert d.dilation <= LIMITS.max_dilation and d.state_window <= LIMITS.max_window


def test_valid_cases_reach_every_axis_of_the_conv_contract(valid: list[Case]) -> None:
    seen = Counter(label for case in valid for label in buckets(case))
    for axis in ("conv ndim", "conv layout", "conv activation", "conv bias", "conv dtype", "conv T vs W",
                 "conv T vs L"):
        missing = [b for b in universe()[axis] if not seen[f"{axis}: {b}"]]
        assert not missing, f"{axis}: never drawn {missing}"
    assert {"conv kernel: 1", "conv dilation: 2", "conv state: past", "conv state: no past"} <= set(seen)
    assert any(not case.attrs for case in valid) and any(len(case.attrs) == 5 for case in valid), \
        "attributes left out and attributes written at their defaults"
    hit, total = reached_by_op(seen)[CAUSAL_CONV.name]
    assert hit > total // 2


def test_window_cases_are_drawn_once_for_both_ops() -> None:
    for case in sample(CAUSAL_CONV_TESTING.short_cases(LIMITS), 30):
        assert case.op is CAUSAL_CONV and 1 <= case.seq_len < case.state_window and "past_state" in case.inputs
    for case in sample(CAUSAL_CONV_TESTING.poisoned_cases(LIMITS), 30):
        past = case.inputs["past_state"]
        assert case.poison and case.state_window >= 2 and np.isfinite(past[-1]).all()
    for case in sample(CAUSAL_CONV_TESTING.resume_cases(LIMITS), 30):
        draft = case.notes["draft_len"]
        assert 1 <= draft < case.seq_len <= draft + LIMITS.max_next_tokens and case.state_window >= 1


def test_invalid_cases_break_each_rule() -> None:
    broken = broken_rules(CAUSAL_CONV_TESTING.invalid_cases(LIMITS), 400)
    assert broken == set(CONV_RULES), set(CONV_RULES) - broken


def test_every_window_property_has_conv_cases() -> None:
    """Every property of the windowed ops has conv cases, the device chain too: the conv kernel runs chains (of
    ndim 1 calls, all it runs)."""
    windowed = [p for p in PROPERTIES.values() if p.applies_to(LINEAR_ATTENTION.name)]
    assert all(p.applies_to(CAUSAL_CONV.name) for p in windowed)
    for prop in windowed:
        assert all(case.op is CAUSAL_CONV for case in sample(prop.strategy(LIMITS), 5)), prop.name
    chains = sample(PROPERTIES["device-chain"].strategy(LIMITS), 20)
    assert all(c.dims().ndim == 1 and c.state_window >= 1 and "past_state" in c.inputs for c in chains)
    assert for_limits(LIMITS) is CAUSAL_CONV_TESTING


def test_a_conv_case_round_trips_with_its_op(valid: list[Case], tmp_path: Path) -> None:
    for case in valid[:20]:
        entry = Entry(Finding(property="prefix-oracle", backends=("oracle",), kind=Kind.REFERENCE,
                              signature=case.summary(), report="", case=case))
        again = read_entry(write_entry(tmp_path, entry)).finding.case
        assert again.op is CAUSAL_CONV and again.identical(case)
        assert from_bytes(to_bytes(entry)).finding.case.identical(case)


def test_an_entry_without_an_op_reads_as_linear_attention(tmp_path: Path) -> None:
    """Entries written before there were two ops carry no ``op``: they are LinearAttention's."""
    old = next(Path("corpus").glob("*/*/entry.json"))
    document = json.loads(old.read_text())
    assert "op" not in document["case"]
    assert read_entry(old.parent).finding.case.op is LINEAR_ATTENTION


def test_an_unknown_op_is_refused_in_one_line(valid: list[Case], tmp_path: Path) -> None:
    entry = Entry(Finding(property="prefix-oracle", backends=("oracle",), kind=Kind.REFERENCE, signature="s",
                          report="", case=valid[0]))
    where = write_entry(tmp_path, entry)
    document = json.loads((where / "entry.json").read_text())
    document["case"]["op"] = "Softmax"
    (where / "entry.json").write_text(json.dumps(document))
    with pytest.raises(ValueError, match="unknown op 'Softmax'"):
        read_entry(where)


def test_findings_of_two_ops_never_share_an_id(valid: list[Case]) -> None:
    conv = Finding.of(property="backends-agree", backends=("ort-cpu", "oracle"), kind=Kind.MISMATCH,
                      detail="output:value", report="", case=valid[0])
    assert conv.signature.endswith("@CausalConvWithState")
    la = Finding.of(property="backends-agree", backends=("ort-cpu", "oracle"), kind=Kind.MISMATCH,
                    detail="output:value", report="", case=Case(inputs={n: np.ones((1, 1, 1), np.float32)
                                                                        for n in ("query", "key", "value")},
                                                                attrs={"q_num_heads": 1, "kv_num_heads": 1}))
    assert la.signature == "backends-agree/ort-cpu+oracle/mismatch/output:value" and la.id != conv.id
