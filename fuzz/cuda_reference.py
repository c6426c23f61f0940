"""The 64 window cases computed by ONNX Runtime's CUDA EP: a reference for the window nobody here wrote.

They live in ``shared/cuda-reference/`` beside the repository (JSON metadata plus a NumPy archive);
``LAFUZZ_CUDA_REFERENCE`` points elsewhere. Each becomes a ``Case`` plus the CUDA outputs.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fuzz.case import Case
from oracles.validation import INPUT_NAMES

DEFAULT_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "cuda-reference"


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
