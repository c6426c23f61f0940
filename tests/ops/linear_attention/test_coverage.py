"""Coverage buckets: every case lands in one bucket per axis, the universe lists them all, and a
summary names the ones never reached."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from fuzz.campaign.coverage import buckets, never_reached, reached, table, universe
from fuzz.model.pack import PACK, slice_of
from fuzz.ops.linear_attention.bad_inputs import BREAKERS, break_case
from fuzz.ops.linear_attention.coverage import AXES, d_k_classes
from fuzz.ops.linear_attention.strategies import Layout, Numerics, Shape, build_case
from kernels.shader import CHUNK_SIZE, KernelSpec


def _case(*, batch=1, seq_len=3, q_heads=2, kv_heads=2, key_heads=1, d_k=8, d_v=8, window=0, rule="gated_delta"):
    shape = Shape(batch=batch, seq_len=seq_len, q_heads=q_heads, kv_heads=kv_heads, key_heads=key_heads, d_k=d_k,
                  d_v=d_v, state_window=window)
    layout = Layout(update_rule=rule, dtype="float32", decay_per_row=False, beta_shared=True, has_past=True,
                    scale=None)
    return build_case(shape, layout, Numerics(magnitude="unit", keys="normalised", decay="moderate",
                                              beta="uniform", seed=0))


def test_d_k_classes_are_the_kernels_geometry_classes() -> None:
    classes = d_k_classes()
    assert classes[0][0] == 1 and classes[-1][1] == 256
    for (_, hi, _), (next_lo, _, _) in itertools.pairwise(classes):
        assert next_lo == hi + 1
    geometry = [KernelSpec.for_dims(_case(d_k=d, d_v=1).dims()) for lo, hi, _ in classes for d in (lo, hi)]
    keys = [(spec.rows_per_thread, spec.row_groups) for spec in geometry]
    assert all(keys[i] == keys[i + 1] for i in range(0, len(keys), 2)), "a class spans two geometries"
    assert len(set(keys)) == len(classes), "two classes share a geometry"


def test_a_case_falls_in_one_bucket_of_each_axis_it_has() -> None:
    labels = buckets(_case(batch=3, seq_len=70, q_heads=8, kv_heads=4, key_heads=2, d_k=33, d_v=40, window=4))
    axes = [label.partition(": ")[0] for label in labels]
    assert len(axes) == len(set(axes))
    assert "T: 65-256" in labels and "n_k: 1 < n_k < H_kv" in labels and "heads: GQA 2" in labels
    assert "d_v tiles: 3-4 tiles" in labels and "B: 3" in labels and "W x T vs W: W 4, T > W" in labels
    assert "delta rule x beta x H_kv: gated_delta, beta shared, H_kv > 1" in labels
    for label in labels:
        axis, _, bucket = label.partition(": ")
        assert bucket in universe()[axis], label


@pytest.mark.parametrize(("seq_len", "chunks"), [(1, "part of one"), (CHUNK_SIZE - 1, "part of one"),
                                                 (CHUNK_SIZE, "one whole"), (2 * CHUNK_SIZE, "whole chunks"),
                                                 (CHUNK_SIZE + 1, "a part after whole ones")])
def test_the_chunks_bucket_counts_the_chunked_prefills_chunks(seq_len: int, chunks: str) -> None:
    assert f"chunks: {chunks}" in buckets(_case(seq_len=seq_len))


@pytest.mark.parametrize(("seq_len", "bucket"), [(32, "17-32"), (33, "33-64"), (64, "33-64"), (65, "65-256"),
                                                 (256, "65-256"), (257, "257+"), (2048, "257+")])
def test_long_calls_have_buckets_of_their_own(seq_len: int, bucket: str) -> None:
    assert f"T: {bucket}" in buckets(_case(seq_len=seq_len, q_heads=1, kv_heads=1, d_k=2, d_v=2))


@pytest.mark.parametrize(("seq_len", "chunks"), [(1, "1"), (CHUNK_SIZE, "1"), (CHUNK_SIZE + 1, "2"),
                                                 (2 * CHUNK_SIZE, "2"), (2 * CHUNK_SIZE + 1, "3-15"),
                                                 (15 * CHUNK_SIZE + 1, "16-99"), (99 * CHUNK_SIZE, "16-99"),
                                                 (99 * CHUNK_SIZE + 1, "100+"), (128 * CHUNK_SIZE + 1, "100+")])
def test_the_chunks_a_chunked_prefill_ran_are_counted_only_where_one_ran(seq_len: int, chunks: str) -> None:
    case = _case(seq_len=seq_len, q_heads=1, kv_heads=1, d_k=2, d_v=2)
    assert f"prefill chunks: {chunks}" in buckets(case, chunked=True)
    assert not any(label.startswith("prefill chunks") for label in buckets(case))


@pytest.mark.parametrize(("d_k", "d_v", "bucket"), [(128, 128, "128"), (256, 256, "256"), (64, 64, "64"),
                                                    (128, 64, None), (127, 127, None)])
def test_the_head_sizes_models_use_have_buckets_of_their_own(d_k: int, d_v: int, bucket: str | None) -> None:
    labels = [label for label in buckets(_case(q_heads=1, kv_heads=1, d_k=d_k, d_v=d_v))
              if label.startswith("head size")]
    assert labels == ([f"head size: {bucket}"] if bucket else [])


def test_an_invalid_case_is_counted_by_its_broken_rule() -> None:
    broken = break_case(_case(), BREAKERS[0], seed=0)
    assert f"broken rule: {BREAKERS[0].rule}" in buckets(broken)


@pytest.mark.parametrize("axis", list(AXES))
def test_every_axis_has_buckets(axis: str) -> None:
    assert universe()[axis]


def test_table_keeps_zeros_and_names_what_was_never_reached() -> None:
    counts = Counter(buckets(_case()))
    rows = table(counts)
    assert set(rows) == set(universe()) and rows["rule"]["gated_delta"] == 1 and rows["rule"]["linear"] == 0
    missing = never_reached(rows)
    hit, total = reached(counts)
    assert hit == len(counts) and total == sum(len(v) for v in universe().values()) == hit + len(missing)
    assert "rule: linear" in missing and "rule: gated_delta" not in missing


def test_a_packed_case_falls_in_the_buckets_of_its_slices() -> None:
    """A pack of three cases of batch 2 counts as cases of batch 2, not as a batch of 6 outside every bucket."""
    pack = _case(batch=6, seq_len=3, window=2).with_(notes={PACK: 3})
    assert buckets(pack) == buckets(slice_of(pack, 0)) and "B: 2" in buckets(pack)
