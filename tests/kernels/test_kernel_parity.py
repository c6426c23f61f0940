"""The WGSL kernel against the float64 oracle and against itself, on both WebGPU implementations.

Every test runs on wgpu-native and on Dawn. Sizes are tiny (lavapipe compiles each kernel
variant in ~0.1-1 s, which dominates), and each test's configuration is derived from its
parameters so that together they cover every rule, both GQA directions, both decay and beta
layouts, n_k < H_kv, odd head sizes, batch 1-3, default and explicit scale, with and without
past state, every W in 0..8 with every T from 1 to W+1, fp32 and fp16, both state bindings,
d_k split over 1 to 4 row groups (ragged last groups, non-power-of-two reduction trees), and up
to 7 query heads per kv head (readouts batched over several reductions). The window sweep runs on
both reductions over d_k (workgroup memory and subgroup shuffles), and every kernel path (scalar
columns, vector columns, either reduction) must give the same bits.
"""

from __future__ import annotations

import numpy as np
import pytest

from fuzz.engine.compare import assert_agrees_with_oracle
from fuzz.model.case import Case
from kernels.device import DeviceUnavailable, FeatureMissing
from kernels.linear_attention import MAX_D_K, LinearAttentionKernel, get_kernel, linear_attention
from kernels.options import ROW_GROUP_CHOICES, WIDE_ROW_GROUPS, KernelOptions
from kernels.shader import MAX_INVOCATIONS, MAX_ROW_GROUPS, VECTOR_LANES, KernelSpec
from oracles.prefix import prefix_inputs
from oracles.rollback import represented_acceptances
from oracles.validation import UPDATE_RULES, Dims

IMPLEMENTATIONS = ("wgpu", "dawn")
DTYPES = (np.float32, np.float16)
REDUCTIONS = ("workgroup", "subgroup")
"""The kernel paths the sweep runs on: the workgroup reduction (the fallback) and the subgroup one."""


def kernel_or_skip(implementation: str, dtype: type = np.float32, path: str = "auto") -> LinearAttentionKernel:
    """The process-wide kernel of an implementation and path, or a loud skip saying why it cannot run ``dtype``.

    float16 needs ``shader-f16``, which some adapters lack (wgpudawn on NVIDIA), and the subgroup
    path the subgroups feature: a skip, not a failure.
    """
    try:
        kernel = get_kernel(KernelOptions(implementation, path=path))
    except DeviceUnavailable as err:
        pytest.skip(f"WebGPU implementation {implementation!r} unavailable: {err}")
    if path == "subgroup" and kernel.device.subgroup_size is None:
        pytest.skip(f"{implementation}: adapter {kernel.device.description} has no subgroups feature")
    if np.dtype(dtype) == np.float16:
        try:
            kernel.device.require("shader-f16", "float16 LinearAttention")
        except FeatureMissing as err:
            pytest.skip(str(err))
    return kernel


def make_inputs(
    rng: np.random.Generator,
    *,
    dtype: type,
    batch: int,
    seq_len: int,
    heads: tuple[int, int, int],
    d_k: int,
    d_v: int,
    window: int,
    past: bool,
    decay_per_row: bool,
    beta_shared: bool,
) -> dict[str, np.ndarray]:
    """Well-conditioned inputs: unit-norm keys, decay in [-1, 0], beta in [0, 1].

    Decay and beta are always present, so their shapes are validated even for rules that ignore them.
    """
    h_q, h_kv, n_k = heads
    key = rng.standard_normal((batch, seq_len, n_k, d_k))
    key /= np.linalg.norm(key, axis=-1, keepdims=True)
    inputs = {
        "query": rng.standard_normal((batch, seq_len, h_q * d_k)),
        "key": key.reshape(batch, seq_len, n_k * d_k),
        "value": rng.standard_normal((batch, seq_len, h_kv * d_v)),
        "decay": -rng.uniform(0.0, 1.0, (batch, seq_len, h_kv * d_k if decay_per_row else h_kv)),
        "beta": rng.uniform(0.0, 1.0, (batch, seq_len, 1 if beta_shared else h_kv)),
    }
    if past:
        slot = (batch, h_kv, d_k, d_v)
        inputs["past_state"] = 0.5 * rng.standard_normal((window, *slot) if window else slot)
    return {name: x.astype(dtype) for name, x in inputs.items()}


def sweep_config(window: int, dtype: type) -> dict:
    """The configuration of one (W, dtype) sweep test; see the module docstring for the coverage."""
    bit = int(dtype == np.float16)
    inverse = (window // 4 + bit) % 2 == 1
    h_kv = 2 + 2 * ((window + bit) % 2)
    heads = (1 if h_kv == 2 else 2, h_kv) if inverse else (2 * h_kv, h_kv)
    n_k = 1 if window % 3 == 0 else h_kv // 2
    return {
        "rule": UPDATE_RULES[window % 4],
        "heads": (*heads, n_k),
        "d_k": (3, 5, 8, 1, 7, 16, 9, 2, 13)[window],
        "d_v": (5, 1, 3, 8, 2, 7, 4, 9, 6)[(window + bit) % 9],
        "batch": 1 + (window + bit) % 3,
        "past": window % 3 != 2,
        "decay_per_row": (window // 2 + bit) % 2 == 1,
        "beta_shared": (window // 4 + bit) % 2 == 0,
        "scale": 0.0 if window % 2 == 0 else 0.37,
    }


def attrs_of(config: dict, window: int) -> dict:
    h_q, h_kv, _ = config["heads"]
    return {"q_num_heads": h_q, "kv_num_heads": h_kv, "update_rule": config["rule"], "scale": config["scale"],
            "state_window": window}


def assert_bitwise(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    same = actual.view(np.uint8) == expected.view(np.uint8)
    assert same.all(), f"{what}: {int((~same).sum())} bytes differ"


def poisoned(past: np.ndarray) -> np.ndarray:
    """Past state with every slot but W-1 set to NaN, +Inf and -Inf in turn."""
    bad = past.copy()
    fill = np.array([np.nan, np.inf, -np.inf], dtype=past.dtype)
    bad[:-1] = np.resize(fill, bad[:-1].shape)
    return bad


@pytest.mark.parametrize("d_v", [1, 3, 64, 67, 128, 1000])
def test_geometry_covers_every_row_and_column(d_v: int) -> None:
    """For every d_k: the row blocks hold rows 0..d_k-1 (at most half the groups empty), the tiles
    cover d_v, the workgroup fits the size limit, and all of d_k = 1..256 needs only 8 geometry classes."""
    classes = set()
    for d_k in range(1, MAX_D_K + 1):
        dims = Dims(batch=1, seq_len=1, q_heads=1, kv_heads=1, key_heads=1, d_k=d_k, d_v=d_v, state_window=0,
                    update_rule="linear", scale=1.0, dtype=np.dtype("float32"), has_past=False,
                    decay_per_row=None, beta_shared=None)
        spec = KernelSpec.for_dims(dims)
        rows, groups = spec.rows_per_thread, spec.row_groups
        assert groups & (groups - 1) == 0 and (groups // 2) * rows < d_k <= groups * rows, (d_k, rows, groups)
        assert rows <= MAX_D_K // MAX_ROW_GROUPS
        tiles = spec.workgroups(dims)[0]
        assert spec.invocations <= MAX_INVOCATIONS and (tiles - 1) * spec.columns < d_v <= tiles * spec.columns
        assert spec.lanes == (VECTOR_LANES if d_v % VECTOR_LANES == 0 else 1) and spec.columns % spec.lanes == 0
        classes.add(spec)
    assert len(classes) <= 8, sorted(classes, key=str)


@pytest.mark.slow
@pytest.mark.parametrize("path", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("window", range(9))
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_window_sweep(implementation: str, window: int, dtype: type, path: str) -> None:
    """For every T in 1..W+1: oracle parity, W=0 parity, aliased = separate, poison-proof, zero slots."""
    kernel_or_skip(implementation, dtype, path)
    rng = np.random.default_rng(1000 * window + int(dtype == np.float16))
    check_window_contract(KernelOptions(implementation, path=path), sweep_config(window, dtype), window, dtype, rng)


@pytest.mark.parametrize(("dtype", "d_v", "paired"), [(np.float32, 12, False), (np.float16, 12, False),
                                                     (np.float16, 16, True)], ids=["fp32", "fp16", "fp16-paired"])
@pytest.mark.parametrize("window", [1, 5])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_staged_stores_keep_the_window_contract(implementation: str, window: int, dtype: type, d_v: int,
                                               paired: bool) -> None:
    """32 row groups (d_k > 64 at the bound GPUs take) store checkpoints through workgroup memory, where an
    invocation writes other invocations' elements: the same contract as the sweep, aliasing included; fp16
    with an even count of vector columns stores them in pairs (``KernelSpec.paired_stores``). Always with a
    past state, so that W = 5 poisons the leading slots each path must clear (a fresh buffer is zeros already)."""
    kernel_or_skip(implementation, dtype)
    config = {**sweep_config(window, dtype), "d_k": 100 + window, "d_v": d_v, "past": True}
    spec = KernelSpec.for_sizes(np.dtype(dtype).name, config["d_k"], config["d_v"], 32)
    assert spec.staged_stores and spec.paired_stores == paired
    options = KernelOptions(implementation, path="workgroup", max_row_groups=32)
    rng = np.random.default_rng(window)
    check_window_contract(options, config, window, dtype, rng)


def check_window_contract(options: KernelOptions, config: dict, window: int, dtype: type,
                          rng: np.random.Generator) -> None:
    """For every T in 1..W+1 of one configuration: oracle parity, W=0 parity, aliased = separate,
    poison-proof, zero slots."""
    for seq_len in range(1, window + 2):
        inputs = make_inputs(
            rng, dtype=dtype, batch=config["batch"], seq_len=seq_len, heads=config["heads"], d_k=config["d_k"],
            d_v=config["d_v"], window=window, past=config["past"], decay_per_row=config["decay_per_row"],
            beta_shared=config["beta_shared"],
        )
        attrs = attrs_of(config, window)
        where = f"{options.implementation} {options.path}@{options.max_row_groups} W={window} T={seq_len} " \
                f"{np.dtype(dtype)} {config}"
        output, present = linear_attention(**inputs, **attrs, options=options)
        assert_agrees_with_oracle(Case(inputs, attrs), (output, present), label=options.implementation)

        aliased = linear_attention(**inputs, **attrs, aliased=True, options=options)
        assert_bitwise(aliased[0], output, f"aliased output, {where}")
        assert_bitwise(aliased[1], present, f"aliased present_state, {where}")
        if window == 0:
            continue

        legacy = {**inputs}
        if "past_state" in inputs:
            legacy["past_state"] = inputs["past_state"][window - 1]
        legacy_output, legacy_state = linear_attention(**legacy, **{**attrs, "state_window": 0}, options=options)
        assert_bitwise(output, legacy_output, f"output vs W=0, {where}")
        assert_bitwise(present[window - 1], legacy_state, f"slot W-1 vs W=0 state, {where}")
        leading = max(0, window - seq_len)
        assert not present[:leading].any(), f"leading {leading} slots not exactly zero, {where}"
        assert not np.signbit(present[:leading]).any(), f"leading slots hold -0.0, {where}"

        if "past_state" in inputs and window > 1:
            bad = {**inputs, "past_state": poisoned(inputs["past_state"])}
            for alias in (False, True):
                got = linear_attention(**bad, **attrs, aliased=alias, options=options)
                assert_bitwise(got[0], output, f"poisoned output (aliased={alias}), {where}")
                assert_bitwise(got[1], present, f"poisoned present_state (aliased={alias}), {where}")


PATH_SIZES = [(1, 4), (8, 5), (7, 8), (9, 12), (17, 16), (128, 128)]
"""(d_k, d_v): one to sixteen row groups, vector (d_v % 4 == 0) and scalar columns, one and two tiles. Each size
takes the rule at its index in ``UPDATE_RULES``: (7, 8) runs two row groups of vector columns under ``delta``, whose
retrieval needs the reduce-scatter's pair gather in every row group."""


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_every_kernel_path_gives_the_same_bits(implementation: str, dtype: type) -> None:
    """Scalar or vector columns, workgroup or subgroup reduction: one tree order per geometry (16 or 32 row
    groups at most), so identical outputs and states; the subgroup path wherever the device's subgroups
    hold a column's row groups."""
    kernels = {path: kernel_or_skip(implementation, dtype, path) for path in ("scalar", "workgroup")}
    size = kernels["scalar"].device.subgroup_size
    compared_subgroup = 0
    for index, (d_k, d_v) in enumerate(PATH_SIZES):
        rule = UPDATE_RULES[index % 4]
        inputs = make_inputs(np.random.default_rng(index), dtype=dtype, batch=2, seq_len=5, heads=(4, 2, 1), d_k=d_k,
                             d_v=d_v, window=3, past=True, decay_per_row=index % 2 == 1, beta_shared=index % 3 == 0)
        attrs = {"q_num_heads": 4, "kv_num_heads": 2, "update_rule": rule, "state_window": 3}
        dims = Case(inputs, attrs).dims()
        for bound in (MAX_ROW_GROUPS, WIDE_ROW_GROUPS):
            paths = ["scalar", "workgroup"]
            if size is not None and KernelSpec.for_dims(dims, bound).row_groups <= size:
                paths.append("subgroup")
                compared_subgroup += 1
            results = {p: linear_attention(**inputs, **attrs, options=KernelOptions(implementation, path=p,
                                                                                   max_row_groups=bound))
                       for p in paths}
            assert_agrees_with_oracle(Case(inputs, attrs), results["scalar"], label=f"{implementation} scalar@{bound}")
            for path in paths[1:]:
                where = f"{implementation} {np.dtype(dtype)} {path}@{bound} vs scalar, d_k={d_k} d_v={d_v} {rule}"
                assert_bitwise(results[path][0], results["scalar"][0], f"output, {where}")
                assert_bitwise(results[path][1], results["scalar"][1], f"present_state, {where}")
    assert size is None or compared_subgroup >= 4, f"subgroup path compared on {compared_subgroup} sizes only"


SPECIALISED_CASES = [
    # heads (H_q, H_kv, n_k), d_k, d_v, decay per row, beta shared, rule, prefill, aliased
    ((4, 2, 1), 9, 12, False, True, "gated_delta", "token", False),
    ((1, 3, 3), 16, 5, True, False, "gated", "token", True),
    ((6, 3, 3), 6, 8, True, True, "delta", "chunked", False),
]
"""Standard and inverse GQA, n_k < H_kv, both decay and beta layouts, both prefills and state bindings."""


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_pipelines_specialised_on_the_shape_agree_with_the_generic_ones(implementation: str, dtype: type) -> None:
    """The call's sizes and layouts compiled in (what a GPU runs by default) or read from the uniform (what a
    software adapter runs): both agree with the oracle, and on a software adapter they give the same bits.
    A GPU's compiler may schedule the arithmetic differently once the sizes are constants (on the H200, Dawn's
    specialised pipelines gave other bits than its generic ones in one case, within the tolerance; wgpu-native's
    did not), so there each form is held to the oracle only."""
    software = kernel_or_skip(implementation, dtype).device.software
    for index, (heads, d_k, d_v, per_row, shared, rule, prefill, aliased) in enumerate(SPECIALISED_CASES):
        inputs = make_inputs(np.random.default_rng(index), dtype=dtype, batch=2, seq_len=5, heads=heads, d_k=d_k,
                             d_v=d_v, window=3, past=True, decay_per_row=per_row, beta_shared=shared)
        attrs = {"q_num_heads": heads[0], "kv_num_heads": heads[1], "update_rule": rule, "state_window": 3}
        results = {specialise: linear_attention(**inputs, **attrs, aliased=aliased, options=KernelOptions(
            implementation, prefill=prefill, specialise=specialise)) for specialise in (False, True)}
        for specialise, form in ((True, "specialised"), (False, "generic")):
            assert_agrees_with_oracle(Case(inputs, attrs), results[specialise],
                                      label=f"{implementation} {form} {prefill}, case {index}")
        if software:
            where = f"{implementation} {np.dtype(dtype)} specialised vs generic, case {index} ({rule}, {prefill})"
            assert_bitwise(results[True][0], results[False][0], f"output, {where}")
            assert_bitwise(results[True][1], results[False][1], f"present_state, {where}")


@pytest.mark.slow
@pytest.mark.parametrize("row_groups", ROW_GROUP_CHOICES)
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_every_row_group_bound_agrees_with_the_oracle(implementation: str, row_groups: int) -> None:
    """The geometry bound (``max_row_groups``; the benchmark's ``PATH@N``) moves rows between invocations
    and changes the reduction tree: every bound still agrees with the oracle, including the window."""
    kernel_or_skip(implementation)
    for index, (d_k, d_v) in enumerate([(1, 4), (9, 12), (128, 128), (256, 3)]):
        inputs = make_inputs(np.random.default_rng(index), dtype=np.float32, batch=1, seq_len=3, heads=(4, 2, 1),
                             d_k=d_k, d_v=d_v, window=4, past=True, decay_per_row=index % 2 == 1, beta_shared=False)
        attrs = {"q_num_heads": 4, "kv_num_heads": 2, "update_rule": UPDATE_RULES[index % 4], "state_window": 4}
        got = linear_attention(**inputs, **attrs, options=KernelOptions(implementation, max_row_groups=row_groups))
        assert_agrees_with_oracle(Case(inputs, attrs), got, label=f"{implementation} @{row_groups} d_k={d_k}")


@pytest.mark.parametrize("shape", [(256, 3, np.float32), (1, 130, np.float32), (128, 67, np.float16)],
                         ids=["dk256-dv3", "dk1-dv130", "dk128-dv67-fp16"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_large_and_odd_heads(implementation: str, shape: tuple) -> None:
    """d_k up to 256, d_v over several workgroup tiles, odd sizes, inverse GQA with n_k = 1."""
    d_k, d_v, dtype = shape
    kernel_or_skip(implementation, dtype)
    rng = np.random.default_rng(d_k + d_v)
    inputs = make_inputs(rng, dtype=dtype, batch=2, seq_len=3, heads=(1, 2, 1), d_k=d_k, d_v=d_v, window=2,
                         past=True, decay_per_row=True, beta_shared=False)
    attrs = {"q_num_heads": 1, "kv_num_heads": 2, "update_rule": "gated_delta", "state_window": 2}
    output, present = linear_attention(**inputs, **attrs, options=KernelOptions(implementation))
    assert_agrees_with_oracle(Case(inputs, attrs), (output, present), label=implementation)


@pytest.mark.parametrize(("rule", "q_heads"), [("gated_delta", 7), ("delta", 3), ("linear", 5), ("gated", 4)])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_many_query_heads_per_kv_head(implementation: str, rule: str, q_heads: int) -> None:
    """Readouts of one kv head batched over several reductions (MAX_FUSED), the retrieval in the last one."""
    kernel_or_skip(implementation)
    rng = np.random.default_rng(q_heads)
    inputs = make_inputs(rng, dtype=np.float32, batch=2, seq_len=4, heads=(q_heads, 1, 1), d_k=9, d_v=5, window=2,
                         past=True, decay_per_row=q_heads % 2 == 1, beta_shared=False)
    attrs = {"q_num_heads": q_heads, "kv_num_heads": 1, "update_rule": rule, "state_window": 2}
    output, present = linear_attention(**inputs, **attrs, options=KernelOptions(implementation))
    assert_agrees_with_oracle(Case(inputs, attrs), (output, present), label=implementation)
    legacy = {**inputs, "past_state": inputs["past_state"][-1]}
    legacy_output, _ = linear_attention(**legacy, **{**attrs, "state_window": 0}, options=KernelOptions(implementation))
    assert_bitwise(output, legacy_output, f"output vs W=0, {rule} H_q={q_heads}")


SELECT_SHAPES = {
    "odd": {"batch": 2, "heads": (3, 3, 3), "d_k": 5, "d_v": 3},  # slots at unaligned offsets: copy
    "aligned": {"batch": 2, "heads": (2, 2, 2), "d_k": 8, "d_v": 8},  # 512 or 1024-byte slots: rebind
}


@pytest.mark.parametrize("layout", SELECT_SHAPES)
@pytest.mark.parametrize("mode", ["rebind", "copy"])
@pytest.mark.parametrize("aliased", [False, True], ids=["separate", "aliased"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_select_and_resume_on_gpu(implementation: str, dtype: type, aliased: bool, mode: str, layout: str) -> None:
    """docs/spec.md §3 on the device: accept a tokens, rebind or copy the slot on the GPU, run the next call.

    For every represented a, the resumed call must equal, bit for bit, a fresh run over the
    accepted prefix followed by the next call; for a = 0 it must equal the next call from the
    original past state. Both are also checked against the oracle. A rebind is taken exactly
    where it is possible (separate bindings, aligned slots), otherwise the copy.
    """
    kernel = kernel_or_skip(implementation, dtype)
    device = kernel.device
    window, seq_len = 4, 5
    rng = np.random.default_rng(7 + int(aliased) + 2 * int(dtype == np.float16))
    shape = {"dtype": dtype, "seq_len": seq_len, **SELECT_SHAPES[layout], "window": window, "past": True,
             "decay_per_row": False, "beta_shared": True}
    first = make_inputs(rng, **shape)
    second = make_inputs(rng, **shape)
    heads = SELECT_SHAPES[layout]["heads"][0]
    attrs = {"q_num_heads": heads, "kv_num_heads": heads, "update_rule": "gated_delta", "state_window": window}
    legacy_attrs = {**attrs, "state_window": 0}
    original_seed = first["past_state"][window - 1]
    rebinds = mode == "rebind" and not aliased and layout == "aligned"

    tensors = {name: device.upload(x, name) for name, x in first.items()}
    call = kernel.prepare(**tensors, **attrs, present_state=tensors["past_state"] if aliased else None)
    try:
        for accepted in [0, *represented_acceptances(seq_len, window)]:
            for name, x in first.items():
                device.upload(x, name, into=tensors[name])
            saved = kernel.save_seed(tensors["past_state"]) if aliased else None
            call.dispatch()
            selection = kernel.accept(call, accepted, saved, mode=mode)
            if saved is not None:
                saved.release()
            where = f"{implementation} {np.dtype(dtype)} aliased={aliased} {mode} {layout} accepted={accepted}"
            expected_path = "rebind" if rebinds else "copy"
            if accepted == 0:
                expected_path = "copy" if aliased else "keep"
            assert selection.path == expected_path, f"{where}: {selection}"
            for name, x in second.items():
                if name != "past_state":
                    device.upload(x, name, into=tensors[name])
            resumed = selection.call
            resumed.dispatch()
            resumed_output, resumed_state = device.download(resumed.output), device.download(resumed.present_state)

            if accepted == 0:
                seed = original_seed
            else:
                cut = {**prefix_inputs(first, accepted), "past_state": original_seed}
                _, seed = linear_attention(**cut, **legacy_attrs, options=KernelOptions(implementation))
            next_past = np.full_like(second["past_state"], np.nan)
            next_past[window - 1] = seed
            resumed_case = Case({**second, "past_state": next_past}, attrs)
            fresh = linear_attention(**resumed_case.kwargs(), options=KernelOptions(implementation))
            assert_bitwise(resumed_output, fresh[0], f"resumed output, {where}")
            assert_bitwise(resumed_state, fresh[1], f"resumed present_state, {where}")
            assert_agrees_with_oracle(resumed_case, (resumed_output, resumed_state), label=f"resumed {where}")
    finally:
        call.release()
        for tensor in {id(t): t for t in [*tensors.values(), call.output, call.present_state]}.values():
            tensor.release()
