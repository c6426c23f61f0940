"""The case model: one call of an op under test, everything needed to run it on any backend and replay it.

A case holds its op (``fuzz.model.ops``), the arrays actually passed (past slots already poisoned, if
poisoned), the attributes exactly as set (a key absent from ``attrs`` is an attribute absent from the
node), and how the state is bound. ``metadata()`` and ``from_parts`` are the two halves of its one
serialisation, the corpus entry (``fuzz.corpus.entry``), which adds the arrays losslessly; metadata
without an ``op`` (written before there was more than one) reads as LinearAttention.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fuzz.model.ops import LINEAR_ATTENTION, Op, op_named

POISON_KINDS = ("nan", "inf", "huge", "bits")
"""How earlier past slots can be poisoned: NaN, +-Inf, the largest finite values, random bit patterns."""


@dataclass(frozen=True)
class Case:
    """One operator call: inputs, attributes, state binding, provenance notes and the op."""

    inputs: dict[str, np.ndarray]
    """The inputs present, by ONNX name; an optional input absent from the dict is omitted."""
    attrs: dict[str, Any]
    """The node attributes exactly as set (absent = schema default)."""
    aliased: bool = False
    """Bind ``past_state`` and ``present_state`` to one read-write buffer."""
    poison: str | None = None
    """Which poison (one of ``POISON_KINDS``) fills past slots ``0..W-2``; None if clean."""
    notes: dict[str, Any] = field(default_factory=dict)
    """Free-form labels (e.g. the numeric regime drawn), kept in the summary and serialisation."""
    op: Op = LINEAR_ATTENTION
    """The operator called."""

    def __post_init__(self) -> None:
        names = self.op.input_names
        unknown = set(self.inputs) - set(names)
        if unknown:
            raise ValueError(f"Case: unknown input name(s) {sorted(unknown)} of {self.op.name}; expected among {names}")
        for name in self.op.required_inputs:
            if name not in self.inputs:
                raise ValueError(f"Case: required input {name!r} is missing")
        if self.poison is not None and self.poison not in POISON_KINDS:
            raise ValueError(f"Case: poison must be one of {POISON_KINDS} or None, got {self.poison!r}")

    # ---- derived views ----------------------------------------------------------------------
    def attr(self, name: str) -> Any:
        """An attribute's effective value (its schema default when absent)."""
        return self.attrs.get(name, self.op.attribute_defaults.get(name))

    @property
    def state_window(self) -> int:
        """``W``; 0 for an op without a window of states."""
        return int(self.attr("state_window")) if self.op.windowed else 0

    @property
    def dtype(self) -> np.dtype:
        return self.inputs[self.op.lead_input].dtype

    @property
    def seq_len(self) -> int:
        """Positions along the sequence axis of the op's first input."""
        return int(self.inputs[self.op.lead_input].shape[self.op.sequence_axis(self.attrs)])

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for an implementation with the oracle's signature."""
        return {**self.inputs, **self.attrs}

    def dims(self) -> Any:
        """The op's validated sizes (``oracles.Dims``, ``oracles.causal_conv.ConvDims``); raises
        ``ValidationError`` for an invalid case.

        Validation reads the attributes and the inputs' shapes and dtypes, which a case never changes (its
        arrays' values may be restored in place, never reshaped), so the sizes are worked out once per case:
        an example asks for them from its strategy, its coverage buckets, its known issues and its check.
        """
        dims = self.__dict__.get("_dims")
        if dims is None:
            dims = self.op.validate(**self.kwargs())
            object.__setattr__(self, "_dims", dims)  # a cache, not a field: equality and replace() ignore it
        return dims

    def with_(self, **changes: Any) -> Case:
        """A copy with some fields replaced (``inputs``/``attrs`` replace whole dicts)."""
        return replace(self, **changes)

    def with_inputs(self, **arrays: np.ndarray | None) -> Case:
        """A copy with some inputs replaced; ``None`` removes an input."""
        inputs = {**self.inputs, **arrays}
        return replace(self, inputs={k: v for k, v in inputs.items() if v is not None})

    def with_attrs(self, **attrs: Any) -> Case:
        """A copy with some attributes set; ``None`` removes an attribute."""
        merged = {**self.attrs, **attrs}
        return replace(self, attrs={k: v for k, v in merged.items() if v is not None})

    # ---- human summary ----------------------------------------------------------------------
    def summary(self) -> str:
        """One line a person can read: the op's sizes, attributes and dtype, then binding, poison, draft."""
        parts = self.op.describe(self.inputs, self.attrs)
        parts.append("past" if self.op.state_input in self.inputs else "no-past")
        if self.aliased:
            parts.append("aliased")
        if self.poison:
            parts.append(f"poison={self.poison}")
        if "pack" in self.notes:  # fuzz.model.pack: that many cases side by side in the batch axis
            parts.append(f"packing {self.notes['pack']} cases")
        if "draft_len" in self.notes:
            parts.append(f"draft={self.notes['draft_len']} accepted={self.notes['accepted']}")
        if "block" in self.notes:  # a hybrid block: LinearAttention runs on this call's output
            b = self.notes["block"]
            parts.append(f"then LinearAttention Hq={b['q_heads']} Hkv={b['kv_heads']} nk={b['key_heads']} "
                         f"dk={b['d_k']} dv={b['d_v']} rule={b['update_rule']}")
        if "chain_accepted" in self.notes:
            accepted = ",".join(str(a) for a in self.notes["chain_accepted"])
            lens = self.notes.get("call_lens", self.notes.get("call_len"))
            lens = ",".join(str(n) for n in lens) if isinstance(lens, list) else lens
            parts.append(f"chain of calls of {lens} tokens accepted={accepted} resume={self.notes['accept_mode']}")
        return " ".join(parts)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Hypothesis (and IPython) print a case as its summary, not thousands of array values."""
        printer.text(f"Case<{self.summary()}>")

    # ---- lossless serialisation -------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        """JSON-ready description of everything but the array values."""
        return {
            "op": self.op.name,
            "attrs": {k: _plain(v) for k, v in self.attrs.items()},
            "aliased": self.aliased,
            "poison": self.poison,
            "notes": {k: _plain(v) for k, v in self.notes.items()},
            "inputs": {n: {"shape": list(a.shape), "dtype": str(a.dtype)} for n, a in self.inputs.items()},
            "summary": self.summary(),
        }

    @classmethod
    def from_parts(cls, metadata: dict[str, Any], arrays: dict[str, np.ndarray]) -> Case:
        """Rebuild a case from its metadata (``metadata()``) and its arrays."""
        expected = set(metadata["inputs"])
        if set(arrays) != expected:
            raise ValueError(f"Case.from_parts: arrays {sorted(arrays)} do not match metadata {sorted(expected)}")
        return cls(
            inputs={name: np.asarray(arrays[name]) for name in metadata["inputs"]},
            attrs=dict(metadata["attrs"]),
            aliased=bool(metadata.get("aliased", False)),
            poison=metadata.get("poison"),
            notes=dict(metadata.get("notes", {})),
            op=op_named(metadata.get("op", LINEAR_ATTENTION.name)),
        )

    def identical(self, other: Case) -> bool:
        """Bitwise equality of arrays and equality of everything else."""
        if self.metadata() != other.metadata():
            return False
        return all(
            self.inputs[n].tobytes() == other.inputs[n].tobytes() for n in self.inputs
        )


def _plain(value: Any) -> Any:
    """Turn NumPy scalars into JSON-native values, keeping floats exact (repr round-trips)."""
    if isinstance(value, np.generic):
        return value.item()
    return value
