"""``ISSUE.md`` of an exported reproduction: a bug report an ONNX Runtime maintainer can act on.

Sections: title; what goes wrong; the environment it was found in (the entry's provenance) and the
one it was checked in (repro.py's own line, when it ran at export); the minimal case in the
operator's words (attributes, inputs with shapes and layouts, which optional inputs are omitted);
expected against actual; the commands; and what the other implementations do with the case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from fuzz.corpus.entry import Entry
from fuzz.export import op_export
from fuzz.export.agreement import Opinion
from fuzz.export.bounds import Bound
from fuzz.export.onnx_files import TEST_DATA, checker_note
from fuzz.export.plan import Expectation, ReproPlan
from fuzz.model.case import Case
from fuzz.model.findings import Kind
from oracles.validation import ValidationError

PROBLEMS = {
    Kind.MISMATCH: "returns wrong results",
    Kind.CRASH: "crashes the process",
    Kind.TIMEOUT: "hangs",
    Kind.ACCEPTED_INVALID: "accepts invalid input",
    Kind.REJECTED_VALID: "refuses valid input",
    Kind.UNCLEAR_ERROR: "refuses input without a message",
}
INLINE_VALUES = 8
"""Arrays with at most this many elements have their values written in the report."""
EXPECTED_BEHAVIOUR = {
    Expectation.OUTPUTS: "Every output equal to the float64 reference, rounded to the output's type, within the "
    "tolerance below",
    Expectation.REJECTION: "An error naming the broken rule (as the CPU EP gives), never values and never a crash",
    Expectation.REJECTION_OR_PASS_THROUGH: "An error, or an empty output with the past state passed through "
    "(as the CPU EP does); never a crash",
    Expectation.ALIASED_AS_SEPARATE: "On every run with one buffer, output and present_state with the same bits as "
    "the run with separate buffers (a state updated in place is the same state)",
}
ALIASING = (
    "Aliasing here means one device buffer for the state: an `OrtValue` on the EP's device is bound through "
    "`IOBinding` as the `past_state` input and as the `present_state` output of the same run, so the EP reads the "
    "old state from the buffer it writes the new state into (how a decoder keeps its state in place between calls). "
    "The reference is a run of the same session with separate buffers (the past state in one `OrtValue`, "
    "`present_state` bound to a new output on the device)."
)
REFERENCE_NOTE = (
    "repro.py compares the runs with one buffer with the run with separate buffers; {files} hold the float64 "
    "reference, rounded to the model's type, for other checkers."
)


@dataclass(frozen=True)
class Transcript:
    """A command run at export time, with what it printed and its exit status."""

    command: str
    output: str
    status: int

    def markdown(self) -> str:
        return f"```\n$ {self.command}\n{self.output.rstrip()}\n[exit status {self.status}]\n```"

    def environment(self) -> str | None:
        """repro.py's ``environment:`` line, if it printed one."""
        found = re.search(r"^environment: (.*)$", self.output, re.MULTILINE)
        return found.group(1) if found else None


def title(entry: Entry, plan: ReproPlan) -> str:
    """The report's title without the case (the EP, the operator and what goes wrong)."""
    problem = PROBLEMS.get(entry.finding.kind, str(entry.finding.kind))
    if plan.expectation is Expectation.ALIASED_AS_SEPARATE:
        problem = "differs when past and present state share a buffer"
    return f"{plan.provider}: com.microsoft {entry.finding.case.op.name} {problem}"


def _what(entry: Entry) -> str:
    finding = entry.finding
    if finding.known is not None and finding.known.explanation:
        return finding.known.explanation
    return finding.report.splitlines()[0] if finding.report else str(finding.kind)


def _environment(entry: Entry, plan: ReproPlan, transcript: Transcript | None) -> list[str]:
    lines = []
    found = entry.provenance.get("backends", {}).get(plan.backend)
    if found:
        versions = ", ".join(f"{k} {v}" for k, v in found.get("versions", {}).items())
        when = entry.provenance.get("found", "unknown date")
        lines.append(f"- found with: {versions}; device: {found.get('device', 'unknown')} (lafuzz, {when})")
    here = transcript.environment() if transcript else None
    if here:
        lines.append(f"- checked at export: {here}")
    return lines or ["- not recorded with the entry, and repro.py was not run at export"]


def _attribute_rows(case: Case) -> list[str]:
    rows = ["| attribute | value |", "|---|---|"]
    defaults = case.op.attribute_defaults
    for name in case.op.attribute_names:
        if name in case.attrs:
            rows.append(f"| `{name}` | `{case.attrs[name]!r}` |")
        elif name in defaults:
            rows.append(f"| `{name}` | absent (default `{defaults[name]!r}`) |")
    return rows


def _layouts(case: Case) -> dict[str, str]:
    """Each input's layout in the schema's terms: as this call spells it where the sizes add up, else every
    spelling the schema allows."""
    try:
        dims = case.op.validate(**case.kwargs(), allow_empty_sequence=True)
    except ValidationError:
        return dict(case.op.layouts)
    return op_export.for_op(case.op).layouts(dims)


def _input_rows(case: Case) -> list[str]:
    layouts = _layouts(case)
    rows = ["| input | shape | type | layout | values |", "|---|---|---|---|---|"]
    for name in case.op.input_names:
        array = case.inputs.get(name)
        if array is None:
            rows.append(f"| `{name}` | omitted | | {'zeros' if name == 'past_state' else ''} | |")
            continue
        values = (np.array2string(array.ravel(), separator=", ", max_line_width=1 << 16) if array.size <= INLINE_VALUES
                  else "in the .pb file")
        rows.append(f"| `{name}` | `{tuple(array.shape)}` | {array.dtype} | {layouts.get(name, '')} | {values} |")
    return rows


def _sizes(case: Case, plan: ReproPlan) -> str:
    if plan.broken_rule:
        return f"The case breaks a rule of the operator: {plan.broken_rule}."
    return op_export.for_op(case.op).sizes(case.dims())


def _recorded(entry: Entry) -> str:
    """What lafuzz saw when it found the case: the worst element of a mismatch, else the report's first line."""
    facts = entry.finding.mismatch
    if facts and facts.get("actual") is not None:
        first, second = facts["pair"].split("/")
        return (
            f"{facts['tensor']} at {facts['where']}: {first} = {facts['actual']!r}, {second} = "
            f"{facts['expected']!r}; |error| = {facts['error']:.6g}, tolerance = {facts['tolerance']:.6g}, "
            f"ratio = {facts['ratio']:.4g}"
        )
    return entry.finding.report.splitlines()[0] if entry.finding.report else str(entry.finding.kind)


def _tolerance_rows(bounds: dict[str, Bound]) -> list[str]:
    if not bounds:
        return []
    rows = ["", "| output | atol | rtol |", "|---|---|---|"]
    return rows + [f"| `{name}` | {b.atol:.6g} | {b.rtol:.6g} |" for name, b in bounds.items()]


def _opinion_rows(opinions: list[Opinion] | None) -> list[str]:
    if opinions is None:
        return [
            "Not cross-checked at export (a campaign exports without running more backends); "
            "`lafuzz export ENTRY --out DIR` runs every backend available."
        ]
    if not opinions:
        return ["No other implementation was available at export."]
    marks = {True: "yes", False: "**no**", None: "n/a"}
    rows = ["| implementation | device | does what the contract asks | what it does |", "|---|---|---|---|"]
    return rows + [f"| {o.backend} | {o.device} | {marks[o.as_contract_asks]} | {o.verdict} |" for o in opinions]


def _expected(case: Case, plan: ReproPlan, outputs: dict[str, np.ndarray]) -> str:
    files = ", ".join(f"`{TEST_DATA}/output_{i}.pb` ({name})" for i, name in enumerate(outputs))
    if plan.expectation is Expectation.ALIASED_AS_SEPARATE:
        return f"{EXPECTED_BEHAVIOUR[plan.expectation]}. {REFERENCE_NOTE.format(files=files)}"
    open_entries = [f"`{name}`" for name in op_export.for_op(case.op).unspecified if name in outputs]
    unspecified = (f" In {', '.join(open_entries)}, NaN in the reference marks an entry the operator leaves "
                   "unspecified, which is not compared." if open_entries else "")
    return f"{EXPECTED_BEHAVIOUR[plan.expectation]}.{' Files: ' + files + '.' if files else ''}{unspecified}"


def _reproduce(entry: Entry, plan: ReproPlan) -> list[str]:
    lines = [
        "```",
        _install_line(entry, plan),
        "python repro.py                       # exit 1 while the defect is present, 0 once fixed, 2 if it cannot run",
        "python repro.py --ep-library PATH     # a local build of the plugin EP library",
        "python repro.py --ep CPUExecutionProvider   # the same check on another EP",
    ]
    if plan.expectation is Expectation.ALIASED_AS_SEPARATE:
        return [*lines, "python repro.py --runs 200            # more runs with one buffer (default 20)", "```"]
    return [
        *lines,
        "```",
        "",
        "The same check, with the same verdicts and exit statuses, on the JavaScript builds:",
        "",
        "```",
        "npm install onnxruntime-node --ignore-scripts && node repro.mjs   # onnxruntime-node's WebGPU EP",
        "npm install onnxruntime-web && node serve.mjs   # ORT Web's WebGPU build: open the address it prints",
        "```",
    ]


def _install_line(entry: Entry, plan: ReproPlan) -> str:
    versions = entry.provenance.get("backends", {}).get(plan.backend, {}).get("versions", {})
    package = "onnxruntime-gpu" if plan.backend == "ort-cuda" else "onnxruntime"
    ort = f"{package}=={versions['onnxruntime']}" if "onnxruntime" in versions else package
    plugin = re.match(r"plugin (\S+)", versions.get("webgpu-ep", ""))
    packages = ["numpy", ort]
    if plan.backend == "ort-webgpu":
        packages.append(f"onnxruntime-ep-webgpu=={plugin.group(1)}" if plugin else "onnxruntime-ep-webgpu")
    return "pip install " + " ".join(packages)


def issue_markdown(
    entry: Entry,
    plan: ReproPlan,
    bounds: dict[str, Bound],
    outputs: dict[str, np.ndarray],
    opinions: list[Opinion] | None,
    transcript: Transcript | None,
) -> str:
    """The whole ISSUE.md."""
    case = entry.finding.case
    lines = [
        f"# {title(entry, plan)} ({case.summary()})",
        "",
        _what(entry),
        "",
        *([ALIASING, ""] if plan.expectation is Expectation.ALIASED_AS_SEPARATE else []),
        "## Environment",
        "",
        *_environment(entry, plan, transcript),
        "",
        "## Minimal case",
        "",
        f"One `com.microsoft` `{case.op.name}` node (domain version 1) in `model.onnx` (ai.onnx opset 21, IR 10), "
        f"inputs in `{TEST_DATA}/input_N.pb` (graph order; omitted inputs have no file). {checker_note(case.op)}",
        "",
        *_attribute_rows(case),
        "",
        *_input_rows(case),
        "",
        _sizes(case, plan),
        "",
        "## Expected",
        "",
        _expected(case, plan, outputs),
        *_tolerance_rows(bounds),
        "",
        "## Actual",
        "",
        f"Recorded by lafuzz ({entry.finding.property}): {_recorded(entry)}",
        "",
    ]
    if transcript is not None:
        lines += ["repro.py at export:", "", transcript.markdown(), ""]
    lines += [
        "## Reproduce",
        "",
        *_reproduce(entry, plan),
        "",
        "## Other implementations on this case",
        "",
        *_opinion_rows(opinions),
        "",
    ]
    return "\n".join(lines)
