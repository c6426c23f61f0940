"""The CUDA EP's 64 reference results as corpus entries (``lafuzz import-cuda``).

Each becomes a ``backends-agree`` entry whose only recorded backend is ``cuda-reference`` and
which stores the CUDA outputs as expected arrays: replay then checks every available backend's
output and every window slot against CUDA's numbers.
"""

from __future__ import annotations

from pathlib import Path

from fuzz.corpus import Entry, write_entry
from fuzz.cuda_reference import ReferenceCase, load_reference

BACKEND = "cuda-reference"
PROPERTY = "backends-agree"


def reference_entry(ref: ReferenceCase, source: str) -> Entry:
    """One reference case as a corpus entry."""
    meta = ref.meta
    return Entry(
        property=PROPERTY,
        backends=(BACKEND,),
        kind="reference",
        signature=f"cuda-reference case {ref.id}",
        case=ref.case,
        expected={"source": source, "by": "onnxruntime-gpu 1.31.1 CUDA EP (NVIDIA H200)",
                  "arrays": ["expected/output", "expected/present_state"]},
        seen={"cuda_vs_ref_output": meta.get("cuda_vs_ref_output"),
              "cuda_vs_ref_state": meta.get("cuda_vs_ref_state")},
        provenance={"found": "2026-11-29", "reference_case": ref.id, "flags": {
            k: meta[k] for k in ("with_past", "poison", "decay_per_key", "beta_shared") if k in meta}},
        expected_arrays={"output": ref.output, "present_state": ref.present_state},
    )


def import_reference(root: Path, directory: Path | None = None) -> list[Path]:
    """Write every reference case under ``root``; returns the entry directories."""
    refs = load_reference(directory)
    return [write_entry(root, reference_entry(ref, ref.case.notes.get("source", "cuda-reference"))) for ref in refs]
