"""How each op is tested: its strategies, its exact answer with tolerance blocks, where its elements are.

``fuzz.model.ops.Op`` is the contract of an op; an ``OpTesting`` adds what the engine needs on top of it,
which draws on Hypothesis and the tolerance model and so sits in this layer: the op's ``Limits`` presets,
its strategies (valid cases, the window's cases through ``fuzz.engine.window_cases``, invalid cases, and
device chains where the op has them), its float64 answer with the blocks of the tolerance model, the
depth of each result, and how an element of a result is named in a mismatch report. The properties
(``fuzz.engine.properties``) are written once against this. Each op's own sits in its package
(``fuzz/ops/<op>/testing.py``, ``TESTING``); ``for_op(op)`` finds it through ``fuzz.ops.registry``,
``for_limits(limits)`` the one whose limits a unit draws from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

from hypothesis import strategies as st

from fuzz.engine.window_cases import poisoned_window_cases, short_window_cases
from fuzz.model.case import Case
from fuzz.model.ops import Op
from fuzz.ops import registry


class OpLimits(Protocol):
    """The limits of any op (its ``OpTesting.limits_type``): which op a unit tests follows from their type."""

    def describe(self) -> str:
        """One line for logs and the report."""

Strategy = Callable[[Any], st.SearchStrategy[Case]]
"""A strategy of cases under an op's limits."""

Coordinates = dict[str, Any]
"""Where an element is, in the op's own terms: ``slot`` and ``batch`` (or None), and the rest as
``(name, index)`` pairs under ``"coordinates"``, or LinearAttention's ``head``/``row``/``col``."""

PRESETS = ("ci", "default", "campaign", "big")
"""The ``Limits`` presets every op has, by name (``--limits``)."""


@dataclass(frozen=True)
class OpTesting:
    """Everything the engine needs to test one op."""

    op: Op
    limits_type: type
    """The op's limits (an ``OpLimits``): its ``ci()``, ``default()``, ``campaign()``, ``big()`` presets."""
    cases: Callable[..., st.SearchStrategy[Case]]
    """Valid cases: ``cases(limits, *, min_window=0, has_past=None, aliased=False, state_window=None,
    seq_len=None, notes=None, packs=False)``."""
    resume_cases: Strategy
    invalid_cases: Strategy
    rules: tuple[str, ...]
    """The rules ``invalid_cases`` breaks, as ``notes["broken_rule"]`` names them."""
    exact: Callable[[dict[str, Any], dict[str, Any]], Any]
    """The float64 answer with tolerance blocks (``part(tensor)``, ``peak``, ``reseeded_at``)."""
    depth: Callable[[Any, str, int | None], int]
    """``depth(dims, tensor, tokens)``: sequential operations behind one element (``tokens``: those the call ran,
    when not the case's own ``T``)."""
    locate: Callable[[Any, str, tuple[int, ...]], Coordinates]
    """``locate(dims, tensor, index)``: an element's coordinates in the op's terms."""
    chain_cases: Strategy | None = None
    """Device-resident chains (``device-chain``), where the op has a kernel that runs them."""

    def chains(self, limits: Any) -> st.SearchStrategy[Case]:
        """The op's chain cases; ``ValueError`` for an op without them."""
        if self.chain_cases is None:
            raise ValueError(f"{self.op.name} has no chain cases")
        return self.chain_cases(limits)

    def short_cases(self, limits: Any, packs: bool = False) -> st.SearchStrategy[Case]:
        return short_window_cases(self.cases, limits, packs)

    def poisoned_cases(self, limits: Any, packs: bool = False) -> st.SearchStrategy[Case]:
        return poisoned_window_cases(self.cases, limits, packs)

    def preset(self, name: str) -> Any:
        """The op's limits preset ``name`` (one of ``PRESETS``)."""
        if name not in PRESETS:
            raise KeyError(f"unknown limits {name!r}; known: {', '.join(PRESETS)}")
        return getattr(self.limits_type, name)()


def for_op(op: Op | str) -> OpTesting:
    """The testing of ``op`` (an ``Op`` or its name): its package's ``TESTING``."""
    return cast(OpTesting, registry.part(op, "testing").TESTING)


def for_limits(limits: Any) -> OpTesting:
    """The testing of the op whose limits these are (an instance of its ``limits_type``)."""
    for candidate in map(for_op, registry.ops()):
        if isinstance(limits, candidate.limits_type):
            return candidate
    raise TypeError(f"no op has limits of type {type(limits).__name__}")


def of_limits(strategy: Callable[[OpTesting, Any], st.SearchStrategy[Case]]) -> Strategy:
    """A property's strategy: ``strategy(op testing, limits)`` for the op whose limits a unit draws from."""
    return lambda limits: strategy(for_limits(limits), limits)


def exact_for(case: Case) -> Any:
    """The float64 answer to a valid case, with its tolerance blocks."""
    return for_op(case.op).exact(case.inputs, case.attrs)
