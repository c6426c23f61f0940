"""The forward test grids of flash-linear-attention (FLA) for the recurrences LinearAttention computes, as data, and
the mapping from FLA's conventions (``support.fla_reference``) to the op's inputs and attributes (docs/spec.md §1).

Upstream: github.com/fla-org/flash-linear-attention at ``bc3b101dcb713ddc5bd8924b66754eb68b5ccf89`` (2026-08-22),
read on 2026-12-03: ``tests/ops/test_gdn.py`` (the gated delta rule; its former name was ``test_gated_delta.py``),
``test_delta.py``, ``test_simple_gla.py``, ``test_gla.py``, ``test_linear_attn.py``, the references in
``fla/ops/{gated_delta_rule,delta_rule,simple_gla,gla,linear_attn}/naive.py``, the gate in
``fla/ops/gated_delta_rule/gate.py`` and the criterion in ``fla/utils/_testing.py``. Hugging Face's Qwen3-Next
``torch_recurrent_gated_delta_rule`` is FLA's gated delta rule with the query/key normalisation inside (its epsilon
under the square root instead of a floor on the norm); its tests are model tests and add no parameter here.

**Ported**: every row of the forward grids named in ``GRIDS`` (sizes, dtype, scale, gate normaliser, mask, GQA,
normalisation, gate and beta recipes, ``state_v_first``, chunk size). Upstream checks its kernels against its
reference within an RMS error ratio; here both our oracle and our kernels are held against our FLA-convention
reference on the same inputs. Inputs are drawn from upstream's distributions (``randn``, ``rand``, sigmoid,
logsigmoid, the GDN gate) with NumPy, seeded by the case's name: the values are not torch's draws.

**Scaled down** (upstream's sizes take minutes through a float64 loop on a CPU): batch at most 2; kv heads at most 4
(``H`` and ``HV`` divided by one factor, so the GQA ratio stays); ``T`` kept up to 64, longer ones become
``16 + T % 16`` (16..31 tokens, keeping the remainder modulo the chunk of our kernel's prefill). ``K = V = D`` kept.

**How the contracts differ, and the mapping**: FLA's ``H`` query/key heads and ``HV`` value heads are our
``q_num_heads = H``, ``kv_num_heads = HV`` with ``H`` key heads (inverse GQA when ``HV > H``); ``g`` per head is a
``(B, T, HV)`` decay, GLA's ``gk`` a per-row ``(B, T, HV*K)`` decay; ``scale=None`` leaves the attribute out (both
default to ``K ** -0.5``; FLA has no "0 means default"). Where FLA normalises ``q``, ``k`` in its kernel
(``use_qk_l2norm_in_kernel``) or computes the gate or the beta sigmoid there, the mapping does it before the op,
in float32, then rounds to the dtype. ``state_v_first`` states are transposed in and out. FLA keeps the gate, beta
and state in float32 beside float16 activations; our op has one element type, so those inputs are rounded to
float16 (both sides then run on the rounded values). ``state_window`` is ours: windowed rows re-run an upstream row
with a window, each slot checked against the reference's final state over that prefix.

Left out (``OUTSIDE_CONTRACT``): backward passes, variable-length packing (``cu_seqlens``), bfloat16, normalised
linear attention, and tests of FLA internals.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fuzz.model.case import Case
from fuzz.model.ops import LINEAR_ATTENTION

from . import fla_reference as ref

UPSTREAM = "fla-org/flash-linear-attention@bc3b101dcb713ddc5bd8924b66754eb68b5ccf89"

RULES = {"gated_delta_rule": "gated_delta", "delta_rule": "delta", "simple_gla": "gated", "gla": "gated",
         "linear_attn": "linear"}
"""FLA's op name -> our ``update_rule``."""

MAX_BATCH, MAX_KV_HEADS, MAX_STEPS, CHUNK = 2, 4, 64, 16


@dataclass(frozen=True)
class Recipe:
    """How one upstream test draws its inputs (float32 unless the case's dtype applies)."""

    qkv: str = "randn"
    """``randn`` or ``rand``."""
    beta: str | None = None
    """``sigmoid_rand``, ``sigmoid_randn`` or ``logits`` (a ``randn`` passed through the sigmoid, times two with
    ``allow_neg_eigval``); None: no beta."""
    gate: str | None = None
    """``logsigmoid_rand``, ``logsigmoid_randn`` (divided by the normaliser, masked with ``mask_p``), or the GDN gate
    from a ``randn`` input with ``A_log = log U(1, 16)`` (``gdn_uniform``) or ``A_log = randn`` (``gdn_randn``)."""
    per_key_gate: bool = False
    initial: str | None = "randn"
    """``randn``, ``rand`` or ``zeros``; None: no initial state."""
    l2norm: bool = False


@dataclass(frozen=True)
class FlaCase:
    """One upstream row: FLA's op, upstream's sizes and options (ported sizes derived), the tolerance ratio of its
    forward check (output and final state)."""

    test: str
    op: str
    batch: int
    steps: int
    heads: int
    value_heads: int
    dim: int
    dtype: str
    recipe: Recipe
    ratio: float
    scale: float | None = None
    normaliser: float = 1.0
    mask_p: float = 0.0
    allow_neg_eigval: bool = False
    dt_bias: bool = False
    state_v_first: bool = False
    chunk_size: int | None = None
    state_window: int = 0
    notes: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def name(self) -> str:
        scale = "default" if self.scale is None else self.scale
        tail = f"-W{self.state_window}" if self.state_window else ""
        return (f"{self.test}[B{self.batch}-T{self.steps}-H{self.heads}-HV{self.value_heads}-D{self.dim}-scale{scale}"
                f"-g{self.normaliser}-mask{self.mask_p}-{self.dtype}{self._flags()}]{tail}")

    def _flags(self) -> str:
        flags = [("neg", self.allow_neg_eigval), ("dtbias", self.dt_bias), ("vfirst", self.state_v_first)]
        chunk = f"-chunk{self.chunk_size}" if self.chunk_size else ""
        return "".join(f"-{n}" for n, on in flags if on) + chunk

    # ---- the sizes run here ------------------------------------------------------------------------------------
    @property
    def sizes(self) -> tuple[int, int, int, int]:
        """``(B, T, H, HV)`` as ported (module docstring)."""
        factor = max(1, self.value_heads // MAX_KV_HEADS)
        steps = self.steps if self.steps <= MAX_STEPS else CHUNK + self.steps % CHUNK
        return min(self.batch, MAX_BATCH), steps, max(1, self.heads // factor), self.value_heads // factor

    @property
    def positions(self) -> int:
        """The tokens of the call as ported."""
        return self.sizes[1]

    def draw(self) -> dict[str, np.ndarray]:
        """FLA's inputs in FLA's layout, as the op receives them (after normalisation, gate and sigmoid, rounded to
        the dtype): ``q``, ``k``, ``v`` and, where the test has them, ``g`` or ``gk``, ``beta``, ``initial_state``."""
        b, t, h, hv = self.sizes
        d, r = self.dim, self.recipe
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))

        def sample(kind: str, *shape: int) -> np.ndarray:
            x = rng.standard_normal(shape) if kind == "randn" else rng.random(shape)
            return x.astype(np.float32)

        drawn = {"q": sample(r.qkv, b, t, h, d), "k": sample(r.qkv, b, t, h, d), "v": sample(r.qkv, b, t, hv, d)}
        if r.l2norm:
            drawn["q"], drawn["k"] = ref.l2_normalised(drawn["q"]), ref.l2_normalised(drawn["k"])
        if r.beta is not None:
            raw = sample("rand" if r.beta == "sigmoid_rand" else "randn", b, t, hv)
            drawn["beta"] = (2.0 if self.allow_neg_eigval else 1.0) / (1.0 + np.exp(-raw))
        if r.gate is not None:
            drawn["gk" if r.per_key_gate else "g"] = self._gate(rng, sample, (b, t, hv, d) if r.per_key_gate
                                                                else (b, t, hv))
        if r.initial is not None:
            drawn["initial_state"] = (np.zeros((b, hv, d, d), np.float32) if r.initial == "zeros"
                                      else sample(r.initial, b, hv, d, d))
        return {name: x.astype(self.dtype) for name, x in drawn.items()}

    def _gate(self, rng: np.random.Generator, sample: Any, shape: tuple[int, ...]) -> np.ndarray:
        kind = self.recipe.gate
        assert kind is not None
        if kind.startswith("gdn"):
            raw, hv = sample("randn", *shape), shape[2]
            a_log = (np.log(rng.uniform(1, 16, hv)) if kind == "gdn_uniform" else rng.standard_normal(hv))
            bias = rng.standard_normal(hv).astype(np.float32) if self.dt_bias else None
            return ref.gdn_gate(raw, a_log.astype(np.float32), bias)
        raw = sample(kind.removeprefix("logsigmoid_"), *shape)
        gate = -np.logaddexp(np.float32(0), -raw) / np.float32(self.normaliser)
        if self.mask_p:
            gate = gate * (sample("rand", *shape) > self.mask_p)
        return gate.astype(np.float32)

    # ---- the reference, and the mapping to and from the op -----------------------------------------------------
    def reference(self, drawn: dict[str, np.ndarray], steps: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """FLA's reference over the first ``steps`` tokens (all by default): ``(o, final_state)`` in FLA's layout."""
        cut = {n: (x[:, :steps] if n != "initial_state" else x) for n, x in drawn.items()}
        return ref.recurrent(**cut, scale=self.scale, state_v_first=self.state_v_first)

    def op_case(self, drawn: dict[str, np.ndarray]) -> Case:
        """The same call as the op takes it (docs/spec.md §1); a window's unread past slots hold NaN."""
        b, t, h, hv = self.sizes
        inputs = {"query": drawn["q"].reshape(b, t, -1), "key": drawn["k"].reshape(b, t, -1),
                  "value": drawn["v"].reshape(b, t, -1)}
        for gate in ("g", "gk"):
            if gate in drawn:
                inputs["decay"] = drawn[gate].reshape(b, t, -1)
        if "beta" in drawn:
            inputs["beta"] = drawn["beta"]
        if "initial_state" in drawn:
            seed = drawn["initial_state"]
            seed = np.ascontiguousarray(seed.swapaxes(-1, -2)) if self.state_v_first else seed
            if self.state_window:
                past = np.full((self.state_window, *seed.shape), np.nan, dtype=seed.dtype)
                past[-1] = seed
                seed = past
            inputs["past_state"] = seed
        attrs: dict[str, Any] = {"update_rule": RULES[self.op], "q_num_heads": h, "kv_num_heads": hv}
        if self.scale is not None:
            attrs["scale"] = float(self.scale)
        if self.chunk_size is not None:
            attrs["chunk_size"] = self.chunk_size
        if self.state_window:
            attrs["state_window"] = self.state_window
        return Case(inputs=inputs, attrs=attrs, op=LINEAR_ATTENTION, notes={"upstream": f"{UPSTREAM} {self.name}"})

    def from_op(self, output: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The op's ``output`` and one ``(B, HV, K, V)`` state slot in FLA's layout: ``o [B, T, HV, V]`` and the
        state (transposed back for ``state_v_first``)."""
        b, t, _, hv = self.sizes
        o = np.asarray(output).reshape(b, t, hv, self.dim)
        return o, (np.asarray(state).swapaxes(-1, -2) if self.state_v_first else np.asarray(state))


# ---- the grids ------------------------------------------------------------------------------------------------------
GDN_RANDN = Recipe(beta="sigmoid_rand", gate="logsigmoid_rand", l2norm=True)
GDN_RAND = Recipe(qkv="rand", beta="sigmoid_rand", gate="logsigmoid_rand", initial="zeros", l2norm=True)
F32, F16 = "float32", "float16"


def _rows(test: str, op: str, recipe: Recipe, ratio: float, keys: str, rows: list[tuple[Any, ...]]) -> list[FlaCase]:
    """One upstream parameter list: ``keys`` names the columns of ``rows`` (FlaCase fields; ``H`` stands for both
    head counts where upstream has one)."""
    cases = []
    for row in rows:
        values = dict(zip(keys.split(), row, strict=True))
        if "heads" in values and "value_heads" not in values:
            values["value_heads"] = values["heads"]
        cases.append(FlaCase(test=test, op=op, recipe=recipe, ratio=ratio, **values))
    return cases


GDN = "gated_delta_rule"
GDN_FUSED = _rows("test_gdn.py::test_fused_recurrent", GDN, GDN_RANDN, 0.002,
                  "batch steps heads value_heads dim scale normaliser dtype", [
                      (1, 63, 1, 1, 64, 1, 1, F32), (2, 500, 4, 4, 60, 1, 1, F32), (2, 1000, 2, 8, 128, 1, 0.1, F32),
                      (3, 1024, 2, 2, 128, 0.1, 1, F32), (4, 1024, 3, 3, 128, 1, 10, F32),
                      (4, 2048, 4, 4, 64, 0.1, 1, F32), (2, 1024, 4, 4, 128, 1, 0.1, F16),
                      (2, 1024, 4, 8, 128, 1, 10, F16)])
GDN_CHUNK = _rows("test_gdn.py::test_chunk", GDN, GDN_RAND, 0.005,
                  "batch steps heads value_heads dim scale normaliser mask_p dtype", [
                      (4, 1024, 4, 4, 128, 0.1, 1, 1.0, F16), (2, 75, 4, 4, 64, 1, 0.01, 0, F16),
                      (2, 500, 3, 3, 60, 1, 1, 0, F16), (2, 1000, 3, 3, 64, 0.1, 1, 0.5, F16),
                      (3, 1024, 4, 4, 100, 1, 0.1, 0, F16), (4, 1024, 4, 4, 128, 0.1, 1, 0, F16),
                      (2, 1500, 4, 4, 128, 0.1, 10, 0, F16), (4, 2048, 8, 8, 64, 0.1, 1, 0, F16),
                      (2, 256, 2, 4, 64, 1, 1, 0, F16), (2, 512, 2, 8, 64, 1, 0.1, 0, F16),
                      (2, 1024, 4, 8, 128, 0.1, 1, 0, F16)])
GDN_CHUNK_SIZE = _rows("test_gdn.py::test_chunk_with_chunk_size", GDN, GDN_RAND, 0.005,
                       "batch steps heads value_heads dim scale normaliser dtype chunk_size",
                       [(1, 64, 2, 4, 32, 0.1, 1.0, F32, c) for c in (16, 32, 64)])
GDN_BETA_LOGITS = _rows("test_gdn.py::test_chunk_beta_sigmoid_in_kernel", GDN,
                        replace(GDN_RAND, beta="logits"), 0.005,
                        "batch steps heads value_heads dim scale allow_neg_eigval dtype", [
                            (2, 500, 4, 4, 64, 1, False, F16), (3, 1024, 4, 4, 128, 0.1, True, F16),
                            (2, 1024, 4, 8, 128, 0.1, True, F16), (4, 2048, 8, 8, 64, 0.1, False, F16)])
GDN_V_FIRST = _rows("test_gdn.py::test_fused_recurrent_state_v_first", GDN, GDN_RANDN, 1e-4,
                    "batch steps heads value_heads dim scale normaliser dtype state_v_first", [
                        (1, 63, 1, 1, 64, 1, 1, F32, True), (2, 500, 4, 4, 60, 1, 1, F32, True),
                        (2, 1000, 2, 8, 128, 1, 0.1, F32, True), (3, 1024, 2, 2, 128, 0.1, 1, F32, True),
                        (4, 2048, 4, 4, 64, 0.1, 1, F32, True)])
GDN_GATE = _rows("test_gdn.py::test_fused_recurrent_gate_in_kernel", GDN,
                 replace(GDN_RANDN, gate="gdn_uniform"), 0.002,
                 "batch steps heads value_heads dim scale dt_bias dtype", [
                     (1, 64, 1, 1, 64, 1, False, F32), (2, 256, 2, 2, 64, 1, True, F32),
                     (2, 512, 2, 4, 64, 0.1, True, F16), (3, 1000, 2, 8, 128, 1, False, F16),
                     (4, 1024, 4, 4, 128, 0.1, True, F16)])
GDN_GATE_CHUNK = _rows("test_gdn.py::test_chunk_gate_in_kernel", GDN,
                       replace(GDN_RAND, gate="gdn_randn"), 0.005, "batch steps heads dim scale dt_bias dtype", [
                           (2, 75, 4, 64, 1, True, F16), (2, 500, 3, 60, 1, False, F16),
                           (2, 1000, 3, 64, 0.1, True, F16), (3, 1024, 4, 100, 1, True, F16),
                           (4, 1024, 4, 128, 0.1, False, F16), (4, 2048, 8, 64, 0.1, True, F16)])
GDN_BETA_FUSED = _rows("test_gdn.py::test_fused_recurrent_beta_sigmoid_in_kernel", GDN,
                       replace(GDN_RANDN, beta="logits"), 0.005,
                       "batch steps heads value_heads dim scale allow_neg_eigval dtype", [
                           (1, 64, 1, 1, 64, 1, False, F32), (2, 512, 2, 4, 64, 0.1, True, F16),
                           (3, 1000, 2, 8, 128, 1, True, F16), (4, 1024, 4, 4, 128, 0.1, False, F16)])

DELTA_CHUNK = _rows("test_delta.py::test_chunk", "delta_rule", Recipe(beta="sigmoid_randn", l2norm=True), 0.006,
                    "batch steps heads dim scale dtype", [
                        (1, 63, 1, 64, 1, F16), (2, 100, 4, 60, 0.1, F16), (2, 1000, 3, 128, 0.1, F16),
                        (2, 1024, 4, 128, 1, F16), (3, 2000, 4, 128, 0.1, F16), (4, 2048, 8, 64, 0.1, F16)])

SGLA = "simple_gla"
SGLA_FUSED = _rows("test_simple_gla.py::test_fused_recurrent", SGLA, Recipe(gate="logsigmoid_randn"), 0.005,
                   "batch steps heads dim scale normaliser dtype", [
                       (1, 63, 1, 64, 1, 1, F32), (2, 500, 4, 60, 1, 1, F32), (2, 1024, 8, 128, 1, 0.1, F32),
                       (2, 1024, 8, 128, 0.1, 1, F32), (2, 1024, 8, 128, 1, 10, F32), (4, 2048, 8, 64, 0.1, 1, F32),
                       (2, 1024, 8, 128, 1, 0.1, F16), (2, 1024, 8, 128, 1, 10, F16)])
SGLA_V_FIRST = _rows("test_simple_gla.py::test_fused_recurrent_state_v_first", SGLA, Recipe(gate="logsigmoid_randn"),
                     0.005, "batch steps heads dim dtype state_v_first",
                     [(2, 256, 4, 64, F32, True), (2, 1024, 4, 128, F16, True)])
SGLA_CHUNK = _rows("test_simple_gla.py::test_chunk", SGLA, Recipe(gate="logsigmoid_randn", initial="rand"), 0.004,
                   "batch steps heads dim scale normaliser dtype", [
                       (1, 63, 1, 64, 1, 1, F16), (2, 500, 3, 60, 1, 1, F16), (1, 1000, 4, 128, 1, 0.1, F16),
                       (2, 1000, 4, 128, 0.1, 1, F16), (3, 1000, 4, 128, 0.1, 10, F16), (4, 2048, 8, 64, 0.1, 1, F16)])
SGLA_CHUNK_SIZE = _rows("test_simple_gla.py::test_chunk_with_chunk_size", SGLA, Recipe(gate="logsigmoid_randn"),
                        0.005, "batch steps heads dim scale normaliser dtype chunk_size",
                        [(1, 64, 2, 64, 0.1, 1.0, F16, c) for c in (16, 32, 64)])

GLA_RECIPE = Recipe(qkv="rand", gate="logsigmoid_rand", per_key_gate=True, initial="rand")
GLA_FUSED = _rows("test_gla.py::test_fused_recurrent", "gla", GLA_RECIPE, 0.005,
                  "batch steps heads dim normaliser dtype", [
    (1, 63, 1, 64, 1, F32), (2, 1024, 4, 60, 1, F32), (2, 1024, 8, 128, 0.1, F32), (2, 1024, 8, 128, 1, F32),
    (2, 1024, 8, 128, 10, F32), (4, 2048, 8, 64, 1, F32), (2, 1024, 8, 128, 0.1, F16), (2, 1024, 8, 128, 10, F16)])
GLA_V_FIRST = _rows("test_gla.py::test_fused_recurrent_state_v_first", "gla", GLA_RECIPE, 0.005,
                    "batch steps heads dim dtype state_v_first",
                    [(2, 256, 4, 64, F32, True), (2, 1024, 4, 128, F16, True)])
GLA_CHUNK = _rows("test_gla.py::test_chunk", "gla", GLA_RECIPE, 0.004, "batch steps heads dim normaliser dtype", [
    (1, 63, 1, 64, 1, F16), (2, 1024, 4, 60, 1, F16), (2, 1024, 8, 128, 0.1, F16), (2, 1024, 8, 128, 1, F16),
    (2, 1024, 8, 128, 10, F16), (4, 2048, 8, 64, 1, F16), (1, 128, 4, 256, 1, F16), (1, 64, 2, 320, 1, F16)])
GLA_CHUNK_V_FIRST = _rows("test_gla.py::test_chunk_state_v_first", "gla", GLA_RECIPE, 0.005,
                          "batch steps heads dim dtype state_v_first", [(2, 256, 4, 64, F32, True),
                                                                        (2, 1024, 4, 128, F16, True)])

LA_RECIPE = Recipe()
LA_FUSED = _rows("test_linear_attn.py::test_fused_recurrent", "linear_attn", LA_RECIPE, 0.001,
                 "batch steps heads dim scale dtype", [
                     (1, 64, 1, 64, None, F32), (2, 512, 4, 60, None, F32), (3, 1024, 8, 128, 1.0, F32),
                     (3, 1024, 8, 128, 0.1, F32), (3, 1024, 8, 128, None, F32), (2, 2048, 8, 256, None, F16),
                     (2, 2048, 4, 256, None, F16)])
LA_CHUNK_ROWS = [(1, 63, 1, 64, F16), (2, 500, 3, 60, F16), (2, 1000, 3, 128, F16), (3, 1000, 4, 64, F16),
                 (2, 2048, 4, 256, F16)]
LA_CHUNK = _rows("test_linear_attn.py::test_chunk", "linear_attn", LA_RECIPE, 0.001, "batch steps heads dim dtype",
                 LA_CHUNK_ROWS)
LA_FUSED_CHUNK = _rows("test_linear_attn.py::test_fused_chunk", "linear_attn", LA_RECIPE, 0.001,
                       "batch steps heads dim dtype", LA_CHUNK_ROWS)
LA_NAIVE_CHUNK = _rows("test_linear_attn.py::test_naive_chunk", "linear_attn", Recipe(initial=None), 0.001,
                       "batch steps heads dim dtype", [(1, 128, 2, 64, F32), (2, 256, 4, 60, F32)])
"""Its ``normalize=False`` rows; the ``normalize=True`` ones are in ``OUTSIDE_CONTRACT``."""

GRIDS: dict[str, list[FlaCase]] = {
    "test_gdn.py::test_fused_recurrent": GDN_FUSED, "test_gdn.py::test_chunk": GDN_CHUNK,
    "test_gdn.py::test_chunk_with_chunk_size": GDN_CHUNK_SIZE,
    "test_gdn.py::test_chunk_beta_sigmoid_in_kernel": GDN_BETA_LOGITS,
    "test_gdn.py::test_fused_recurrent_state_v_first": GDN_V_FIRST,
    "test_gdn.py::test_fused_recurrent_gate_in_kernel": GDN_GATE,
    "test_gdn.py::test_chunk_gate_in_kernel": GDN_GATE_CHUNK,
    "test_gdn.py::test_fused_recurrent_beta_sigmoid_in_kernel": GDN_BETA_FUSED,
    "test_delta.py::test_chunk": DELTA_CHUNK,
    "test_simple_gla.py::test_fused_recurrent": SGLA_FUSED, "test_simple_gla.py::test_fused_recurrent_state_v_first":
    SGLA_V_FIRST, "test_simple_gla.py::test_chunk": SGLA_CHUNK,
    "test_simple_gla.py::test_chunk_with_chunk_size": SGLA_CHUNK_SIZE,
    "test_gla.py::test_fused_recurrent": GLA_FUSED, "test_gla.py::test_fused_recurrent_state_v_first": GLA_V_FIRST,
    "test_gla.py::test_chunk": GLA_CHUNK, "test_gla.py::test_chunk_state_v_first": GLA_CHUNK_V_FIRST,
    "test_linear_attn.py::test_fused_recurrent": LA_FUSED, "test_linear_attn.py::test_chunk": LA_CHUNK,
    "test_linear_attn.py::test_fused_chunk": LA_FUSED_CHUNK, "test_linear_attn.py::test_naive_chunk": LA_NAIVE_CHUNK,
}

WINDOWED: tuple[FlaCase, ...] = (
    replace(GDN_FUSED[0], state_window=4),
    replace(GDN_FUSED[7], state_window=8),
    replace(GDN_V_FIRST[0], steps=3, state_window=5),
    replace(GLA_FUSED[1], state_window=3),
    replace(SGLA_FUSED[0], state_window=2),
    replace(DELTA_CHUNK[1], state_window=6),
    replace(LA_FUSED[0], state_window=1),
)
"""Our extension: upstream rows run with a window (``T < W`` included), slots against the reference's prefixes."""

CASES: tuple[FlaCase, ...] = (*(c for grid in GRIDS.values() for c in grid), *WINDOWED)

KERNEL_CASES: tuple[FlaCase, ...] = (
    GDN_FUSED[0], GDN_CHUNK[8], GDN_V_FIRST[0], GDN_BETA_FUSED[1], DELTA_CHUNK[0], SGLA_CHUNK[0], GLA_FUSED[0],
    LA_FUSED[0], WINDOWED[0], WINDOWED[2],
)
"""The subset run through both kernels: every FLA op, inverse GQA, ``state_v_first``, a window (``T < W`` too), all at
``D = 64`` in float32 or float16, so few pipelines."""


@dataclass(frozen=True)
class OutsideContract:
    """An upstream test not ported, and why."""

    test: str
    reason: str


BACKWARD = "it checks gradients; LinearAttention has no backward pass in its contract"
VARLEN = ("variable-length packing (``cu_seqlens``) is another operator's contract (ORT's VarlenLinearAttention); "
          "each of its sequences is a dense call like the rows ported")
OUTSIDE_CONTRACT: tuple[OutsideContract, ...] = (
    OutsideContract("test_gdn.py::test_fused_recurrent_gate_in_kernel_varlen", VARLEN),
    OutsideContract("test_gdn.py::test_chunk_varlen", VARLEN),
    OutsideContract("test_gdn.py::test_chunk_varlen_prefill", VARLEN),
    OutsideContract("test_gdn.py::test_chunk_gate_in_kernel_varlen", VARLEN),
    OutsideContract("test_delta.py::test_chunk_varlen", VARLEN),
    OutsideContract("test_simple_gla.py::test_fused_recurrent_varlen", VARLEN),
    OutsideContract("test_simple_gla.py::test_chunk_varlen", VARLEN),
    OutsideContract("test_simple_gla.py::test_fused_chunk_varlen", VARLEN),
    OutsideContract("test_simple_gla.py::test_parallel_varlen", VARLEN),
    OutsideContract("test_gla.py::test_fused_recurrent_varlen", VARLEN),
    OutsideContract("test_gla.py::test_chunk_varlen", VARLEN),
    OutsideContract("test_delta.py::test_chunk_with_chunk_size",
                    "bfloat16 only; the contract's types are float32 and float16 (spec §1)"),
    OutsideContract("test_gla.py::test_chunk[B1-T128-H4-D512-scale1-bfloat16]",
                    "bfloat16; the contract's types are float32 and float16 (spec §1)"),
    OutsideContract("test_linear_attn.py::test_naive_chunk[normalize=True]",
                    "normalised linear attention divides each output by q . sum(k): a second quantity the op does not "
                    "compute (it is a linear-rule call with a value of ones, composed by the caller)"),
    OutsideContract("test_linear_attn.py::test_normalize_split_resume", "normalised linear attention (as above)"),
    OutsideContract("test_linear_attn.py::test_normalize_grad", BACKWARD),
    OutsideContract("test_linear_attn.py::test_normalize_zinit_grad", BACKWARD),
    OutsideContract("test_gdn.py::test_chunk_gate_in_kernel_gqa",
                    "a GQA variant of test_chunk_gate_in_kernel whose forward rows add no geometry the ported GDN "
                    "grids lack (HV > H with the GDN gate is in test_fused_recurrent_gate_in_kernel)"),
    OutsideContract("test_gdn.py::test_chunk_state_v_first",
                    "the same rows as test_fused_recurrent_state_v_first with test_chunk's recipe; ported once"),
    OutsideContract("test_simple_gla.py::test_fused_chunk, test_parallel, test_simple_gla_to_mamba2",
                    "other kernels of the same recurrence checked against FLA's own fused_recurrent, or a conversion "
                    "to Mamba2's parameters: no row the ported simple GLA grids lack"),
    OutsideContract("test_gdn.py::test_gate, test_prepare_wy_repr_bwd_no_g, test_flash_qla_*, "
                    "test_chunk_gated_delta_rule_fwd_h_blackwell_triton_guard",
                    "FLA internals (the gate alone, the WY representation, a CUDA backend's dispatch and tuning)"),
)
