"""The corpus format: lossless round trips (inline and npz), atomic writes, merging, CUDA import."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fuzz.corpus import entry as corpus
from fuzz.corpus.cuda_reference import import_reference, load_reference
from fuzz.model.case import Case
from fuzz.model.findings import Finding, Kind, KnownMark


def _case(t: int = 2, poison: str | None = None) -> Case:
    rng = np.random.default_rng(0)
    shape = (1, t, 2)
    inputs = {n: rng.standard_normal(shape).astype(np.float32) for n in ("query", "key", "value")}
    inputs["past_state"] = rng.standard_normal((2, 1, 1, 2, 2)).astype(np.float32)
    if poison:
        inputs["past_state"][0] = np.nan
    return Case(inputs=inputs, attrs={"q_num_heads": 1, "kv_num_heads": 1, "update_rule": "linear",
                                      "state_window": 2}, poison=poison)


def _entry(case: Case, known: KnownMark | None = None, **extra) -> corpus.Entry:
    finding = Finding(property="backends-agree", backends=("oracle", "wgpu"), kind=Kind.MISMATCH,
                      signature="backends-agree/oracle+wgpu/mismatch/present_state:value", report="text", case=case,
                      known=known)
    return corpus.Entry(finding, provenance={"found": "now"}, **extra)


MARK = KnownMark(backend="wgpu", issue="", implementation="x", explanation="y")


def test_tiny_finite_entry_is_inline_and_exact(tmp_path):
    entry = _entry(_case())
    path = corpus.write_entry(tmp_path, entry)
    document = json.loads((path / "entry.json").read_text())
    assert document["format"] == corpus.FORMAT and isinstance(document["arrays"], dict)
    assert not (path / "arrays.npz").exists()
    back = corpus.read_entry(path)
    assert back.finding.to_json() == entry.finding.to_json() and back.finding.case.identical(entry.finding.case)


def test_poisoned_or_large_entry_uses_npz_and_keeps_bits(tmp_path):
    entry = _entry(_case(t=40, poison="nan"), expected_arrays={"output": np.arange(3.0)}, known=MARK)
    path = corpus.write_entry(tmp_path, entry)
    assert (path / "arrays.npz").is_file()
    back = corpus.read_entry(path)
    assert back.finding.case.identical(entry.finding.case)
    assert np.array_equal(back.expected_arrays["output"], np.arange(3.0))
    assert back.finding.known == MARK
    assert corpus.marks(tmp_path) == {entry.id: MARK}


def test_unknown_format_is_refused_with_the_file_name(tmp_path):
    path = corpus.write_entry(tmp_path, _entry(_case()))
    document = json.loads((path / "entry.json").read_text())
    document["format"] = "lafuzz-corpus/99"
    (path / "entry.json").write_text(json.dumps(document))
    with pytest.raises(ValueError, match=r"entry\.json"):
        corpus.read_entry(path)


def test_merge_keeps_the_first_copy(tmp_path):
    marked = _entry(_case(), known=MARK)
    corpus.write_entry(tmp_path / "a", marked)
    corpus.write_entry(tmp_path / "b", _entry(_case()))
    corpus.write_entry(tmp_path / "b", corpus.Entry(Finding(property="leading-zeros", backends=("oracle",),
                                                            kind=Kind.MISMATCH, signature="other", report="",
                                                            case=_case(t=3))))
    assert corpus.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "m") == (2, 1)
    merged = corpus.load(tmp_path / "m")
    assert len(merged) == 2
    assert next(e for e in merged if e.id == marked.id).finding.known == MARK


@pytest.mark.slow
def test_cuda_import_round_trips(tmp_path):
    refs = load_reference()
    written = import_reference(tmp_path)
    assert len(written) == len(refs) == 64
    entry = corpus.read_entry(written[5])
    assert entry.finding.case.identical(refs[5].case) and entry.finding.kind == Kind.REFERENCE
    assert np.array_equal(entry.expected_arrays["present_state"], refs[5].present_state)
