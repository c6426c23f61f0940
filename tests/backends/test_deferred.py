"""A backend in a process of its own, created by a campaign worker (``create(..., deferred=True)``): nothing
starts until a unit asks it something, and a start that fails is ``Lost`` each time it is asked."""

from __future__ import annotations

import pytest

from fuzz.backends import Lost, Unavailable, create
from fuzz.backends.deferred import Deferred
from fuzz.backends.oracle import OracleBackend
from fuzz.ops.linear_attention.strategies import Layout, Numerics, Shape, build_case

STARTED: list[str] = []


class StartsAProcess(OracleBackend):
    """The oracle, standing for a build that starts Node or a browser when created."""

    name = "starts-a-process"
    in_its_own_process = True

    def __init__(self) -> None:
        STARTED.append(self.name)
        super().__init__()


class CannotStart(StartsAProcess):
    name = "cannot-start"

    def __init__(self) -> None:
        STARTED.append(self.name)
        raise Unavailable(f"{self.name}: node not found")


def _case():
    layout = Layout(update_rule="linear", dtype="float32", decay_per_row=None, beta_shared=None, has_past=True,
                    scale=None)
    numerics = Numerics(magnitude="unit", keys="random", decay="moderate", beta="uniform", seed=1)
    return build_case(Shape(1, 2, 1, 1, 1, 4, 4, 1), layout, numerics)


def test_created_on_first_use_not_when_made() -> None:
    STARTED.clear()
    backend = create(f"{__name__}:StartsAProcess", deferred=True)
    assert isinstance(backend, Deferred) and backend.name == "starts-a-process" and backend.in_its_own_process
    assert backend.implementation is None and backend.pipelines_compiled is None and backend.resident_kernel() is None
    assert STARTED == [], "made by a campaign worker, it started its process at once"
    assert backend.run(_case())[0].shape == (1, 2, 4)
    assert backend.capabilities().ops and STARTED == ["starts-a-process"], "started more than once"
    backend.close()


def test_a_start_that_fails_is_lost_every_time_without_another_try() -> None:
    STARTED.clear()
    backend = create(f"{__name__}:CannotStart", deferred=True)
    for _ in range(2):
        with pytest.raises(Lost, match="node not found") as lost:
            backend.run(_case())
        assert lost.value.backend == "cannot-start"
    assert STARTED == ["cannot-start"]


def test_an_in_process_backend_is_created_at_once() -> None:
    assert not isinstance(create("oracle", deferred=True), Deferred)
