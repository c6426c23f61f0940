"""Drawing cases outside a property: ``sample(strategy, n)``, the derandomized draws of the ``ci`` profile."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fuzz.campaign import profiles
from fuzz.model.case import Case


def sample(strategy: st.SearchStrategy[Case], n: int) -> list[Case]:
    """``n`` derandomized draws of ``strategy`` (generated only: no shrinking, nothing replayed)."""
    ci = profiles.get("ci")
    drawn: list[Case] = []

    @settings(ci, max_examples=n, database=None, phases=[p for p in ci.phases if p.name in ("explicit", "generate")])
    @given(strategy)
    def collect(case: Case) -> None:
        drawn.append(case)

    collect()
    return drawn


def broken_rules(strategy: st.SearchStrategy[Case], n: int) -> set[str]:
    """The rules ``n`` draws of an invalid-case strategy break (``notes["broken_rule"]``), each case confirmed
    refused by its op's validation."""
    from oracles.validation import ValidationError

    broken = set()
    for case in sample(strategy, n):
        try:
            case.dims()
        except ValidationError:
            broken.add(case.notes["broken_rule"])
        else:
            raise AssertionError(f"{case.notes['broken_rule']}: a valid case ({case.summary()})")
    return broken
