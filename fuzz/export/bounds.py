"""The tolerance of an exported reproduction: the suite's tolerance model as two numbers per output.

``fuzz.engine.tolerance`` gives every element its own bound (half an ulp, plus ``4 * depth * eps``
times the element's magnitude and the magnitude of the terms behind it, plus an underflow term).
A maintainer's script wants ``atol + rtol * |expected|``; this module picks ``rtol`` as the model's
slope in ``|expected|`` and ``atol`` as the largest remainder over the tensor's elements, so the
pair contains the model's bound at every element (it is never stricter than the suite). The
expected values in the script are the float64 answer rounded to the case's type, which costs half an
ulp more, added here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fuzz.engine.op_testing import exact_for, for_op
from fuzz.engine.tolerance import ACCUMULATION_FACTOR, COMPUTE_DTYPE, Budget, eps
from fuzz.export import op_export
from fuzz.model.case import Case


@dataclass(frozen=True)
class Bound:
    """``|got - expected| <= atol + rtol * |expected|`` for one output."""

    atol: float
    rtol: float


def uniform_bounds(case: Case, expected: dict[str, np.ndarray]) -> dict[str, Bound]:
    """One ``Bound`` per output of a valid ``case``, from ``expected`` (the rounded float64 answer, each output in
    its own type)."""
    dims = case.dims()
    exact = exact_for(case)
    bounds = {}
    for name, rounded in expected.items():
        depth = for_op(case.op).depth(dims, name, None)
        budget = Budget((rounded.dtype,), depth)
        rtol = ACCUMULATION_FACTOR * depth * eps(COMPUTE_DTYPE[case.dtype]) + eps(rounded.dtype)
        values, block = exact.part(name)
        reference = np.abs(rounded.astype(np.float64))
        model = budget.tolerance(values, block) + 0.5 * np.spacing(np.abs(rounded)).astype(np.float64)
        atol = float(np.nanmax(model - rtol * reference, initial=0.0))  # NaN: an entry the contract leaves open
        bounds[name] = Bound(atol=atol, rtol=rtol)
    return bounds


def derivation(case: Case) -> str:
    """The comment repro.py carries above its tolerances: where the numbers come from."""
    dims = case.dims()
    depth = for_op(case.op).depth(dims, "output", None)
    compute = COMPUTE_DTYPE[case.dtype].name
    what = op_export.for_op(case.op).depth_words(depth)
    return (
        "From lafuzz's tolerance model (fuzz/engine/tolerance.py: Budget of one result in its stored type "
        f"({case.dtype} unless the op fixes it) against the float64 answer, depth = {what}): per element half an "
        f"ulp + {ACCUMULATION_FACTOR:g}*depth*eps({compute})*(|exact| + block) + underflow, plus half an ulp for "
        f"rounding the reference to the stored type; written as atol + rtol*|expected| with rtol = "
        f"{ACCUMULATION_FACTOR:g}*depth*eps({compute}) + eps(stored type) and atol the largest remainder over the "
        "tensor, so it contains the model's bound at every element (fuzz/export/bounds.py)."
    )
