"""The corpus: one directory per minimal failing (or reference) case, in a versioned, diff-friendly format.

Layout: ``<root>/<property>/<id>/entry.json``, plus ``arrays.npz`` when the arrays are not tiny.
``entry.json`` (``"format": "lafuzz-corpus/1"``) holds:

- ``id``, ``property``, ``backends`` (the implementations the property compared), ``kind`` and
  ``signature`` (the de-duplication key: same property, backends and signature = same finding);
- ``case``: the case metadata (``Case.metadata``);
- ``arrays``: ``"arrays.npz"``, or ``{name: {"dtype", "shape", "values"}}`` inline when every array
  is tiny and finite (exact: float16/float32 values are written as their float64 repr);
  inputs are stored under their ONNX names, expected outputs as ``expected/<name>``;
- ``expected`` and ``seen``: what the contract asked for and what happened (the property's report,
  the error, tolerance and ratio of a mismatch);
  together with the fields above, the ``fuzz.findings.Finding`` the entry was made from;
- ``provenance``: when, by which campaign seed/shard/unit, with which backend versions and adapters;
- ``known_failure`` (optional): ``{"backend", "issue", "implementation", "explanation"}``, set by
  a campaign for a documented issue or by a person when the fault is in an implementation we do not
  own; replay then reports "still failing" or "now fixed" for the entry instead of a regression.

This is the suite's one serialisation of a case: a failure found by a test, a campaign finding, a
case shared between shards through the example database (``to_bytes``/``from_bytes``: the same
document and arrays in one archive) and ``lafuzz repro`` all use it.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fuzz.engine.case import Case
from fuzz.findings import Finding, Kind, KnownMark

FORMAT = "lafuzz-corpus/1"
INLINE_LIMIT = 64
"""Arrays with at most this many elements in total are stored inline in ``entry.json``."""
EXPECTED_PREFIX = "expected/"
DOCUMENT_KEY = "entry.json"
"""The name of the document inside a ``to_bytes`` archive."""


@dataclass
class Entry:
    """One corpus entry in memory: a finding (or a reference case) and what surrounds it on disk."""

    finding: Finding
    """The property, backends, kind, signature, report, mismatch facts, known mark and the case."""
    expected: dict[str, Any] = field(default_factory=dict)
    """What the contract asked for, in words (or where the expected arrays came from)."""
    provenance: dict[str, Any] = field(default_factory=dict)
    expected_arrays: dict[str, np.ndarray] = field(default_factory=dict)
    """Reference outputs stored with the case (e.g. the CUDA EP's), by output name."""

    @property
    def id(self) -> str:
        return self.finding.id

    def relative_dir(self) -> Path:
        return Path(self.finding.property) / self.id

    def to_json(self, arrays_field: Any) -> dict[str, Any]:
        f = self.finding
        return {
            "format": FORMAT,
            "id": self.id,
            "property": f.property,
            "backends": list(f.backends),
            "kind": str(f.kind),
            "signature": f.signature,
            "case": f.case.metadata(),
            "arrays": arrays_field,
            "expected": self.expected,
            "seen": {"report": f.report, "mismatch": f.mismatch},
            "provenance": self.provenance,
            "known_failure": f.known.to_json() if f.known else None,
        }


def _all_arrays(entry: Entry) -> dict[str, np.ndarray]:
    arrays = dict(entry.finding.case.inputs)
    arrays.update({EXPECTED_PREFIX + k: v for k, v in entry.expected_arrays.items()})
    return arrays


def _inline(arrays: dict[str, np.ndarray]) -> dict[str, Any] | None:
    """The inline form, or None when the arrays are too big or hold values JSON cannot carry exactly."""
    if sum(a.size for a in arrays.values()) > INLINE_LIMIT:
        return None
    if not all(np.isfinite(a).all() for a in arrays.values()):
        return None
    return {
        name: {"dtype": str(a.dtype), "shape": list(a.shape), "values": a.astype(np.float64).ravel().tolist()}
        for name, a in arrays.items()
    }


def write_entry(root: Path, entry: Entry) -> Path:
    """Write ``entry`` under ``root`` atomically (a half-written entry never appears); returns its directory."""
    final = Path(root) / entry.relative_dir()
    staging = final.with_name(final.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    arrays = _all_arrays(entry)
    inline = _inline(arrays)
    if inline is None:
        np.savez_compressed(staging / "arrays.npz", **arrays)
    document = entry.to_json(inline if inline is not None else "arrays.npz")
    (staging / "entry.json").write_text(json.dumps(document, indent=2, sort_keys=True, default=_plain) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    staging.rename(final)
    return final


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple | set):
        return list(value)
    return str(value)


def _npz(data: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _from_stored(document: dict[str, Any], arrays: dict[str, np.ndarray]) -> Entry:
    """An entry from its JSON document and all its arrays (inputs by ONNX name, ``expected/<name>``)."""
    expected = {k.removeprefix(EXPECTED_PREFIX): v for k, v in arrays.items() if k.startswith(EXPECTED_PREFIX)}
    inputs = {k: v for k, v in arrays.items() if not k.startswith(EXPECTED_PREFIX)}
    seen = document.get("seen") or {}
    finding = Finding(
        property=document["property"],
        backends=tuple(document["backends"]),
        kind=Kind(document["kind"]),
        signature=document["signature"],
        report=seen.get("report", ""),
        case=Case.from_parts(document["case"], inputs),
        mismatch=seen.get("mismatch"),
        known=KnownMark.from_json(document.get("known_failure")),
        id=document["id"],
    )
    return Entry(finding=finding, expected=document.get("expected") or {},
                 provenance=document.get("provenance") or {}, expected_arrays=expected)


def read_entry(directory: Path) -> Entry:
    """Read one entry directory; raises ``ValueError`` naming the file for an unknown format."""
    directory = Path(directory)
    document = json.loads((directory / "entry.json").read_text())
    if document.get("format") != FORMAT:
        raise ValueError(f"{directory / 'entry.json'}: format {document.get('format')!r}, expected {FORMAT!r}")
    stored = document["arrays"]
    if stored == "arrays.npz":
        arrays = _npz((directory / "arrays.npz").read_bytes())
    else:
        arrays = {
            name: np.asarray(spec["values"], dtype=np.float64).astype(spec["dtype"]).reshape(spec["shape"])
            for name, spec in stored.items()
        }
    return _from_stored(document, arrays)


def to_bytes(entry: Entry) -> bytes:
    """The entry as one archive (its document and every array): how shards share findings."""
    document = json.dumps(entry.to_json("arrays.npz"), sort_keys=True, default=_plain).encode()
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{DOCUMENT_KEY: np.frombuffer(document, dtype=np.uint8)}, **_all_arrays(entry))
    return buffer.getvalue()


def from_bytes(value: bytes) -> Entry:
    """The inverse of ``to_bytes``."""
    arrays = _npz(value)
    document = json.loads(arrays.pop(DOCUMENT_KEY).tobytes())
    return _from_stored(document, arrays)


def entry_dirs(root: Path) -> Iterator[Path]:
    """Every entry directory under ``root``, in a stable order (skipping half-written ones)."""
    root = Path(root)
    if not root.is_dir():
        return
    for path in sorted(root.glob("*/*/entry.json")):
        if not path.parent.name.endswith(".partial"):
            yield path.parent


def load(root: Path) -> list[Entry]:
    """Every entry under ``root``."""
    return [read_entry(d) for d in entry_dirs(root)]


def marks(root: Path) -> dict[str, KnownMark]:
    """Entry id -> ``known_failure`` mark, for every marked entry under ``root`` (reads no arrays)."""
    found = {}
    for directory in entry_dirs(root):
        document = json.loads((directory / "entry.json").read_text())
        mark = KnownMark.from_json(document.get("known_failure"))
        if mark is not None:
            found[document["id"]] = mark
    return found


def merge(sources: list[Path], destination: Path) -> tuple[int, int]:
    """Copy every entry of ``sources`` into ``destination``; an id already there is kept as it is.

    Returns ``(copied, already_present)``. Keeping the first copy keeps a person's known-failure
    mark and the earliest provenance.
    """
    copied = present = 0
    for source in sources:
        for directory in entry_dirs(source):
            target = Path(destination) / directory.relative_to(source)
            if target.exists():
                present += 1
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(directory, target)
            copied += 1
    return copied, present
