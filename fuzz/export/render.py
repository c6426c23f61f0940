"""``repro.py`` of an exported reproduction: the template (``repro_template.py``) with the case's constants.

The template is a working script whose constants block describes a placeholder case; rendering
replaces that block and the docstring's first line, and nothing else, so every exported script
is the same reviewed code.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from fuzz.export import op_export, repro_template
from fuzz.export.bounds import Bound, derivation
from fuzz.export.plan import Expectation, ReproPlan
from fuzz.model.case import Case
from oracles.validation import ValidationError

TEMPLATE = Path(repro_template.__file__)
BLOCK_START = "# --- the case (written by lafuzz export) ---\n"
BLOCK_END = "# --- end of the case ---\n"
TITLE_LINE = '"""' + (repro_template.__doc__ or "").splitlines()[0] + "\n"


def _value_columns(case: Case) -> int:
    """LinearAttention's ``d_v`` where the sizes add up (1 otherwise: an op or case with no heads to locate)."""
    try:
        return int(getattr(case.op.validate(**case.kwargs(), allow_empty_sequence=True), "d_v", 1))
    except ValidationError:
        return 1


def axis_names(case: Case) -> dict[str, list[str]]:
    """The name of every axis of each output, as the op's export part gives them (LinearAttention gives none: repro.py
    locates its elements by ``D_V``); empty where the sizes do not add up."""
    try:
        dims = case.op.validate(**case.kwargs(), allow_empty_sequence=True)
    except ValidationError:
        return {}
    return op_export.for_op(case.op).axis_names(dims)


def _string_constant(name: str, text: str) -> str:
    """``NAME = "text"``, as implicitly joined pieces where one line would pass 120 characters."""
    pieces = textwrap.wrap(text, width=100, drop_whitespace=False, break_on_hyphens=False) or [""]
    if len(pieces) == 1:
        return f"{name} = {json.dumps(text)}"
    return "\n".join([f"{name} = (", *(f"    {json.dumps(p)}" for p in pieces), ")"])


def _constants(plan: ReproPlan, case: Case, bounds: dict[str, Bound]) -> str:
    lines = [
        f"EP = {json.dumps(plan.provider)}",
        f"EXPECTATION = {json.dumps(str(plan.expectation))}",
        _string_constant("CASE", case.summary()),
        f"D_V = {_value_columns(case)}",
        f"OUTPUTS = {json.dumps(list(case.op.outputs))}",
        f"UNSPECIFIED = {json.dumps(list(op_export.for_op(case.op).unspecified))}",
        "AXES: dict[str, list[str]] = {" + "".join(f"\n    {json.dumps(tensor)}: {json.dumps(names)},"
                                                   for tensor, names in axis_names(case).items())
        + ("\n}" if axis_names(case) else "}"),
    ]
    if plan.expectation is Expectation.OUTPUTS:
        lines += textwrap.wrap(derivation(case), width=118, initial_indent="# ", subsequent_indent="# ")
    elif plan.expectation is Expectation.REJECTION_OR_PASS_THROUGH:
        lines.append("# a pass-through must return the past state exactly")
    elif plan.expectation is Expectation.ALIASED_AS_SEPARATE:
        lines.append("# the runs with one buffer must give the bits of the run with separate buffers")
    lines.append("TOLERANCE = {")
    lines += [f"    {json.dumps(name)}: ({b.atol!r}, {b.rtol!r})," for name, b in bounds.items()]
    lines.append("}")
    lines.append(f"VALUE_DEVICE = {json.dumps(plan.value_device)}")
    return "\n".join(lines) + "\n"


def render_repro(plan: ReproPlan, case: Case, bounds: dict[str, Bound], title: str) -> str:
    """The text of ``repro.py`` for ``case``; ``title`` becomes its docstring's first line, the case the next."""
    source = TEMPLATE.read_text()
    head, rest = source.split(BLOCK_START)
    _, tail = rest.split(BLOCK_END)
    described = textwrap.fill(f"Case: {case.summary()}", width=116, subsequent_indent="      ")
    head = head.replace(TITLE_LINE, f'"""{title}.\n\n{described}\n', 1)
    text = head + BLOCK_START + _constants(plan, case, bounds) + BLOCK_END + tail
    compile(text, "repro.py", "exec")
    return text
