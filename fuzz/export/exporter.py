"""Export a corpus entry as a folder an ONNX Runtime maintainer can use without this project.

``export_entry`` writes ``model.onnx``, ``test_data_set_0/``, ``repro.py``, ``ISSUE.md`` and, where the
check is one call, the JavaScript reproductions (written to a staging folder and renamed, so a half-written
export never appears); with
``check`` it runs the new ``repro.py`` once and puts what it printed in ``ISSUE.md``.
``export_upstream`` is the campaign's hook: every ONNX Runtime finding saved as a corpus entry is
also exported beside it (``<entry>/upstream/``), and a failure to export costs one line on stderr,
never the entry.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from fuzz import atomic
from fuzz.backends import Backend
from fuzz.corpus.entry import Entry
from fuzz.export import op_export
from fuzz.export.agreement import opinions
from fuzz.export.bounds import Bound, uniform_bounds
from fuzz.export.issue import Transcript, issue_markdown, title
from fuzz.export.onnx_files import reference_outputs, write_model, write_test_data
from fuzz.export.plan import Expectation, ExportError, ort_backends, plan
from fuzz.export.render import render_repro
from fuzz.model.case import Case

REPRO = "repro.py"
JS_FILES = Path(__file__).with_name("js")
"""repro.mjs (onnxruntime-node), repro.html and serve.mjs (ORT Web) and the repro-core.mjs they share: the same
check as repro.py for the JavaScript builds, reading the case from ``case.json``."""
ISSUE = "ISSUE.md"
UPSTREAM = "upstream"
"""The export's folder inside a corpus entry written by a campaign or ``run_unit``."""
REPRO_TIMEOUT_S = 300.0
ANSI = re.compile(r"\x1b\[[0-9;]*m")
"""Terminal colour codes (ORT colours its log lines), removed from transcripts."""


def run_repro(folder: Path, *args: str, python: str = sys.executable, timeout: float = REPRO_TIMEOUT_S) -> Transcript:
    """Run ``repro.py`` in ``folder`` with ``python`` and ``args``; what it printed (stdout and stderr in
    order, colour codes removed) and its exit status."""
    done = subprocess.run(
        [python, REPRO, *args],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    return Transcript(" ".join(["python", REPRO, *args]), ANSI.sub("", done.stdout), done.returncode)


def write_js_repro(folder: Path, case: Case, expectation: Expectation, bounds: dict[str, Bound]) -> None:
    """The JavaScript reproductions beside ``repro.py``: ``case.json`` (what they check) and ``JS_FILES``."""
    data = folder / "test_data_set_0"
    document = {"case": case.summary(), "expectation": str(expectation),
                "tolerance": {name: [b.atol, b.rtol] for name, b in bounds.items()},
                "unspecified": list(op_export.for_op(case.op).unspecified),
                "inputs": sorted(p.name for p in data.glob("input_*.pb")),
                "outputs": sorted(p.name for p in data.glob("output_*.pb"))}
    atomic.write_text(folder / "case.json", json.dumps(document, indent=1) + "\n")
    for source in sorted(JS_FILES.iterdir()):
        atomic.write_bytes(folder / source.name, source.read_bytes())


def _replaceable(out: Path) -> None:
    """``out`` may be (re)written: it is absent, empty, or an earlier export."""
    if out.exists() and any(out.iterdir()) and not (out / REPRO).is_file():
        raise ExportError(f"{out} exists and is not an earlier export (no {REPRO}); choose another --out")


def export_entry(entry: Entry, out: Path, *, backends: Sequence[Backend] | None = None, check: bool = True) -> Path:
    """Write the standalone reproduction of ``entry`` to ``out``; returns ``out``.

    ``backends``: the implementations to cross-check the case on (the one at fault is skipped;
    None: not cross-checked). ``check``: run the written ``repro.py`` once. Raises ``ExportError``.
    """
    repro = plan(entry)
    case = entry.finding.case
    out = Path(out)
    _replaceable(out)
    outputs = reference_outputs(case, repro.expectation)
    if repro.expectation is Expectation.OUTPUTS:
        bounds = uniform_bounds(case, outputs)
    else:
        bounds = {name: Bound(0.0, 0.0) for name in outputs}
    with atomic.staged_directory(out) as staging:
        write_model(staging, case, outputs)
        write_test_data(staging, case, outputs)
        atomic.write_text(staging / REPRO, render_repro(repro, case, bounds, title(entry, repro)))
        if repro.expectation is not Expectation.ALIASED_AS_SEPARATE:  # the JavaScript check is one call
            write_js_repro(staging, case, repro.expectation, bounds)
        views = None if backends is None else opinions(backends, case, repro.expectation, outputs,
                                                        at_fault=repro.backend)
        transcript = run_repro(staging) if check else None
        atomic.write_text(staging / ISSUE, issue_markdown(entry, repro, bounds, outputs, views, transcript))
    return out


def export_upstream(entry: Entry, entry_dir: Path, backends: Sequence[Backend] | None = None) -> Path | None:
    """Export an ONNX Runtime finding beside its corpus entry (``<entry_dir>/upstream``); None otherwise.

    Any failure is reported in one line on stderr: the entry is already written and stays. A full disk
    (``fuzz.atomic.out_of_space``) is raised, for the caller to stop writing.
    """
    if not ort_backends(entry):
        return None
    try:
        return export_entry(entry, Path(entry_dir) / UPSTREAM, backends=backends, check=False)
    except OSError as err:
        if atomic.out_of_space(err):
            raise
        print(f"[lafuzz] {entry_dir}: not exported upstream: {err}", file=sys.stderr)
        return None
    except Exception as err:  # the entry matters more than its export
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        print(f"[lafuzz] {entry_dir}: not exported upstream: {first}", file=sys.stderr)
        return None
