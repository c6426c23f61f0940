"""The one list of the ops the engine tests: each op's package, looked up by op name.

An op's package (``fuzz/ops/<op>/``) holds how the op is tested, in three levels:

- engine level: ``strategies``, ``bad_inputs``, ``tolerance`` and ``testing`` (its ``TESTING``, an
  ``fuzz.engine.op_testing.OpTesting``), what the engine's properties draw and check;
- campaign level: ``coverage`` (its ``COVERAGE``, a ``fuzz.campaign.bucketing.OpCoverage``) and ``swarm``
  (its ``SWARM``, a ``fuzz.campaign.swarm.OpSwarm``), what a campaign counts and schedules;
- report level: ``export`` (its ``EXPORT``, a ``fuzz.export.op_export.OpExport``, or its ``REFUSAL``), what an
  upstream report says of the op;

and, in its ``__init__``, ``OP``: the op's contract (``fuzz.model.ops.Op``). The registry imports a part only
when a layer asks for it (``part``), so that the engine never loads the campaign's parts, and a part may import
the layer it serves without a cycle. ``PACKAGES`` is read at each call: a test may add a line to it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from fuzz.model.ops import Op

PACKAGES: tuple[str, ...] = (
    "fuzz.ops.linear_attention",
    "fuzz.ops.causal_conv",
    "fuzz.ops.gated_delta_net",
    "fuzz.ops.state_replay",
)
"""Every op's package, in the order campaigns, tables and reports list the ops."""


def ops() -> tuple[Op, ...]:
    """Every registered op, in ``PACKAGES`` order."""
    return tuple(importlib.import_module(package).OP for package in PACKAGES)


def op_names() -> tuple[str, ...]:
    """The name of every registered op, in ``PACKAGES`` order."""
    return tuple(op.name for op in ops())


def part(op: Op | str, name: str) -> ModuleType:
    """Module ``name`` (``testing``, ``coverage``, ``swarm``, ``export``) of the package of ``op`` (an ``Op`` or
    its name); ``KeyError`` naming the registered ops."""
    wanted = op if isinstance(op, str) else op.name
    for package in PACKAGES:
        if importlib.import_module(package).OP.name == wanted:
            return importlib.import_module(f"{package}.{name}")
    raise KeyError(f"no registered op {wanted!r}; registered: {', '.join(op_names())}")
