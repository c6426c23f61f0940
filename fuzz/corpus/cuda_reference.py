"""The 64 window cases computed by ONNX Runtime's CUDA EP: a reference for the window nobody here wrote.

They live in ``shared/cuda-reference/`` beside the repository (JSON metadata plus a NumPy archive);
``LAFUZZ_CUDA_REFERENCE`` points elsewhere. Each becomes a ``Case`` plus the CUDA outputs, and
``lafuzz import-cuda`` writes each as a ``backends-agree`` corpus entry whose only recorded backend
is ``cuda-reference`` and which stores the CUDA outputs as expected arrays: replay then checks every
available backend's output and every window slot against CUDA's numbers.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fuzz.corpus.entry import Entry, write_entry
from fuzz.model.case import Case
from fuzz.model.findings import Finding, Kind
from oracles.validation import INPUT_NAMES

DEFAULT_DIR = Path(__file__).resolve().parents[3] / "shared" / "cuda-reference"


@dataclass(frozen=True)
class ReferenceCase:
    """One CUDA EP result: the case it ran and what it returned."""

    id: int
    case: Case
    output: np.ndarray
    present_state: np.ndarray
    meta: dict


def reference_dir() -> Path:
    return Path(os.environ.get("LAFUZZ_CUDA_REFERENCE", DEFAULT_DIR))


def load_reference(directory: Path | None = None) -> list[ReferenceCase]:
    """Read every case; raises ``FileNotFoundError`` naming the directory when it is missing."""
    directory = Path(directory or reference_dir())
    meta_path, arrays_path = directory / "cuda_reference.json", directory / "cuda_reference.npz"
    if not meta_path.is_file() or not arrays_path.is_file():
        raise FileNotFoundError(f"CUDA reference not found in {directory} (set LAFUZZ_CUDA_REFERENCE)")
    meta = json.loads(meta_path.read_text())
    found = []
    with np.load(arrays_path, allow_pickle=False) as arrays:
        for entry in meta["cases"]:
            i = entry["id"]
            inputs = {n: arrays[f"{i}/{n}"] for n in INPUT_NAMES if f"{i}/{n}" in arrays.files}
            attrs = {
                "q_num_heads": entry["q_num_heads"],
                "kv_num_heads": entry["kv_num_heads"],
                "update_rule": entry["rule"],
                "state_window": entry["state_window"],
            }
            if entry.get("explicit_scale", entry["scale"] != 0.0):
                attrs["scale"] = entry["scale"]
            case = Case(
                inputs=inputs,
                attrs=attrs,
                poison="nan" if entry["poison"] else None,
                notes={"source": f"{meta['source']} case {i}"},
            )
            found.append(ReferenceCase(i, case, arrays[f"{i}/output"], arrays[f"{i}/present_state"], entry))
    return found

BACKEND = "cuda-reference"
PROPERTY = "backends-agree"


def reference_entry(ref: ReferenceCase, source: str) -> Entry:
    """One reference case as a corpus entry."""
    meta = ref.meta
    finding = Finding(property=PROPERTY, backends=(BACKEND,), kind=Kind.REFERENCE,
                      signature=f"cuda-reference case {ref.id}", report="", case=ref.case)
    return Entry(
        finding=finding,
        expected={"source": source, "by": "onnxruntime-gpu 1.31.1 CUDA EP (NVIDIA H200)",
                  "arrays": ["expected/output", "expected/present_state"]},
        provenance={"found": "2026-11-29", "reference_case": ref.id,
                    "cuda_vs_ref_output": meta.get("cuda_vs_ref_output"),
                    "cuda_vs_ref_state": meta.get("cuda_vs_ref_state"), "flags": {
            k: meta[k] for k in ("with_past", "poison", "decay_per_key", "beta_shared") if k in meta}},
        expected_arrays={"output": ref.output, "present_state": ref.present_state},
    )


def import_reference(root: Path, directory: Path | None = None) -> list[Path]:
    """Write every reference case under ``root``; returns the entry directories."""
    refs = load_reference(directory)
    return [write_entry(root, reference_entry(ref, ref.case.notes.get("source", "cuda-reference"))) for ref in refs]
