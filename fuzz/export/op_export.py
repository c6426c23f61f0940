"""What an upstream report asks of an op: the op's own words for its tensors, sizes and tolerance depth.

Each op's package (``fuzz/ops/<op>/export.py``) holds its ``EXPORT``; the export's modules ask it instead of
branching on the op's name, so a new op brings its report with it. An op with no report (no released ONNX
Runtime registers it, say) holds ``REFUSAL`` instead, the reason in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fuzz.model.case import Case
from fuzz.model.ops import Op
from fuzz.ops import registry


@dataclass(frozen=True)
class OpExport:
    """The op-specific parts of an exported report, each from the call's dims (``op.validate``'s result)."""

    axis_names: Callable[[Any], dict[str, list[str]]]
    """The name of every axis of each output, for repro.py's element locations (empty: repro.py's own words)."""
    layouts: Callable[[Any], dict[str, str]]
    """Each input's layout in the schema's terms, for ISSUE.md."""
    sizes: Callable[[Any], str]
    """The call's sizes in one sentence, for ISSUE.md."""
    depth_words: Callable[[int], str]
    """What the tolerance model's depth (the output's, given) counts, for repro.py's comment on its tolerances."""
    symbolic_shapes: Callable[[Case], dict[str, tuple[str, ...]]]
    """Each output's shape in words, for a case whose sizes do not add up (the EP must refuse it)."""
    unspecified: tuple[str, ...] = ()
    """Outputs whose reference holds NaN where the contract leaves the entry unspecified (never compared)."""
    disagreement: Callable[[Case, tuple[np.ndarray, ...]], tuple[float, str]] | None = None
    """For an op whose outputs are not ``(output, present_state)``: an implementation's outputs against the oracle,
    as the worst error/tolerance ratio and its element in words (None: ``fuzz.engine.compare`` judges them)."""


class NotExported(LookupError):
    """The op has no upstream report; the message says why, in one line."""


def for_op(op: Op) -> OpExport:
    """The ``EXPORT`` of ``op``'s package; ``NotExported`` with the package's ``REFUSAL`` where it has none."""
    try:
        module = registry.part(op, "export")
    except ModuleNotFoundError as err:
        if not (err.name or "").endswith(".export"):  # the part is there, and one of its imports is not
            raise
        raise NotExported(f"{op.name} has no upstream report (its package has no export part)") from None
    found = getattr(module, "EXPORT", None)
    if not isinstance(found, OpExport):
        raise NotExported(str(getattr(module, "REFUSAL", f"{op.name} has no upstream report")))
    return found
