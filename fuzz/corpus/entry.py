"""The corpus: one directory per minimal failing (or reference) case, in a versioned, diff-friendly format.

Layout: ``<root>/<property>/<id>/entry.json``, plus ``arrays.npz`` when the arrays are not tiny.
``entry.json`` (``"format": "lafuzz-corpus/1"``) holds:

- ``id``, ``property``, ``backends`` (the implementations the property compared), ``kind`` and
  ``signature`` (the de-duplication key: same property, backends and signature = same finding);
- ``case``: the case metadata (``Case.metadata``), its ``op`` among them (absent in entries written before
  there were two ops: LinearAttention);
- ``arrays``: ``"arrays.npz"``, or ``{name: {"dtype", "shape", "values"}}`` inline when every array
  is tiny and finite (exact: float16/float32 values are written as their float64 repr);
  inputs are stored under their ONNX names, expected outputs as ``expected/<name>``;
- ``expected`` and ``seen``: what the contract asked for and what happened (the property's report,
  the error, tolerance and ratio of a mismatch, and the finding's note, e.g. "known in 0.4.0, also
  in 0.5.0");
  together with the fields above, the ``fuzz.model.findings.Finding`` the entry was made from;
- ``provenance``: when, by which campaign seed/shard/unit, with which backend versions and adapters;
- ``known_failure`` (optional): ``{"backend", "issue", "implementation", "explanation"}``, set by
  a campaign for a documented issue or by a person when the fault is in an implementation we do not
  own; replay then reports "still failing" or "now fixed" for the entry instead of a regression.

This is the suite's one serialisation of a case: a failure found by a test, a campaign finding, a
case shared between shards through the example database (``to_bytes``/``from_bytes``: the same
document and arrays in one archive) and ``lafuzz repro`` all use it.
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fuzz import atomic
from fuzz.engine.properties import PROPERTIES
from fuzz.model.case import Case
from fuzz.model.findings import Finding, Kind, KnownMark
from fuzz.model.ops import ALL_OPS
from oracles.validation import ValidationError

FORMAT = "lafuzz-corpus/1"
INLINE_LIMIT = 64
"""Arrays with at most this many elements in total are stored inline in ``entry.json``."""
EXPECTED_PREFIX = "expected/"
DOCUMENT_KEY = "entry.json"
"""The name of the document inside a ``to_bytes`` archive."""
NPZ = "arrays.npz"
"""The only file besides ``entry.json`` that reading an entry opens (no field names another path)."""
ARRAY_KINDS = "biuf"
"""NumPy dtype kinds an entry may store (bool, integers, floats): nothing that needs pickling."""
MAX_DOCUMENT_BYTES = 16 * 2**20
"""The largest ``entry.json`` read (inline arrays are tiny; reports are text)."""
MAX_ARRAY_BYTES = 256 * 2**20
"""The most an entry's arrays may declare in all, and the largest ``arrays.npz`` read: far above the
largest case a campaign draws (about 1 MiB), far below what would strain a machine."""
_NPY_HEADERS: dict[tuple[int, int], Callable[..., tuple[tuple[int, ...], bool, np.dtype]]] = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


class CorpusError(ValueError):
    """A corpus entry that cannot be read: its ``entry.json`` or ``arrays.npz`` is missing, corrupt or
    inconsistent. One line, ``<entry directory>: <what is wrong>``, so that replay can name the entry
    and go on with the others."""

    def __init__(self, where: Path | str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = Path(where)
        self.problem = problem

    @property
    def name(self) -> str:
        """``<property>/<id>`` as the entry's directory names it."""
        return f"{self.where.parent.name}/{self.where.name}"


class _Problem(Exception):
    """What is wrong with an entry, before the boundary (``read_entry``...) names the entry."""


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
            "seen": {"report": f.report, "mismatch": f.mismatch, **({"note": f.note} if f.note else {})},
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
    """Write ``entry`` under ``root`` atomically (``fuzz.atomic``: a half-written entry never appears, and a
    failed write, a full disk for one, leaves no partial folder); returns its directory."""
    final = Path(root) / entry.relative_dir()
    arrays = _all_arrays(entry)
    inline = _inline(arrays)
    document = entry.to_json(inline if inline is not None else NPZ)
    with atomic.staged_directory(final) as staging:
        if inline is None:
            buffer = io.BytesIO()
            np.savez_compressed(buffer, allow_pickle=False, **arrays)
            atomic.write_bytes(staging / NPZ, buffer.getvalue())
        atomic.write_text(staging / DOCUMENT_KEY, json.dumps(document, indent=2, sort_keys=True, default=_plain) + "\n")
    return final


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple | set):
        return list(value)
    return str(value)


def _field(document: dict[str, Any], name: str, kind: type | tuple[type, ...], required: bool = True) -> Any:
    """``document[name]`` checked to be of ``kind`` (absent or null is allowed when not ``required``)."""
    value = document.get(name)
    if value is None and not required:
        return None
    if name not in document:
        raise _Problem(f"{DOCUMENT_KEY}: missing field {name!r}")
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _Problem(f"{DOCUMENT_KEY}: field {name!r} is {type(value).__name__}, expected {expected}")
    return value


def _plain_name(document: dict[str, Any], name: str) -> str:
    """A field that becomes a directory name (``property``, ``id``): no separators, no ``..``."""
    value = _field(document, name, str)
    if not value or value in (".", "..") or "/" in value or "\\" in value:
        raise _Problem(f"{DOCUMENT_KEY}: field {name!r} is {value!r}, not a plain name (it would leave the entry "
                       "directory)")
    return value


def _check_document(document: Any) -> dict[str, Any]:
    """The parsed ``entry.json`` checked field by field against the format (``_Problem`` if it is not)."""
    if not isinstance(document, dict):
        raise _Problem(f"{DOCUMENT_KEY}: not a JSON object")
    if document.get("format") != FORMAT:
        raise _Problem(f"{DOCUMENT_KEY}: format {document.get('format')!r}, expected {FORMAT!r}")
    _plain_name(document, "id")
    if _plain_name(document, "property") not in PROPERTIES:  # never ``module:attribute``: data imports no code
        raise _Problem(f"{DOCUMENT_KEY}: unknown property {document['property']!r}; known: "
                       f"{', '.join(PROPERTIES)}")
    backends = _field(document, "backends", list)
    if not backends or not all(isinstance(b, str) and b for b in backends):
        raise _Problem(f"{DOCUMENT_KEY}: field 'backends' must list one or more backend names")
    kind = _field(document, "kind", str)
    if kind not in {str(k) for k in Kind}:
        raise _Problem(f"{DOCUMENT_KEY}: unknown kind {kind!r}")
    _field(document, "signature", str)
    case = _field(document, "case", dict)
    op = _field(case, "op", str, required=False)
    if op is not None and op not in ALL_OPS:  # absent: an entry written before there were two ops, LinearAttention's
        raise _Problem(f"{DOCUMENT_KEY}: unknown op {op!r}; known: {', '.join(ALL_OPS)}")
    _field(case, "attrs", dict)
    _field(case, "aliased", bool, required=False)
    _field(case, "poison", str, required=False)
    _field(case, "notes", dict, required=False)
    for name, spec in _field(case, "inputs", dict).items():
        _declared(spec, f"case input {name!r}")
    arrays = _field(document, "arrays", (str, dict))
    if isinstance(arrays, str) and arrays != NPZ:
        raise _Problem(f"{DOCUMENT_KEY}: field 'arrays' names {arrays!r}; only {NPZ!r} next to {DOCUMENT_KEY} "
                       "is read")
    for name in ("expected", "seen", "provenance"):
        _field(document, name, dict, required=False)
    known = _field(document, "known_failure", dict, required=False)
    if known is not None:
        _field(known, "backend", str)
    return document


def _declared(spec: Any, what: str) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype a ``{"shape", "dtype"}`` spec declares, checked before anything is allocated."""
    if not isinstance(spec, dict):
        raise _Problem(f"{DOCUMENT_KEY}: {what} is {type(spec).__name__}, expected an object")
    shape = _field(spec, "shape", list)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise _Problem(f"{DOCUMENT_KEY}: {what} has shape {shape}, expected non-negative integers")
    return tuple(shape), _dtype(_field(spec, "dtype", str), what)


def _dtype(name: str, what: str) -> np.dtype:
    """``name`` as a plain numeric dtype (``_Problem`` for anything else, objects included)."""
    try:
        dtype = np.dtype(name)
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind not in ARRAY_KINDS:
        raise _Problem(f"{what}: dtype {name!r} is not a numeric dtype")
    return dtype


def _match_case(stored: dict[str, tuple[tuple[int, ...], np.dtype]], case: dict[str, Any]) -> None:
    """The stored inputs (name -> shape, dtype) are exactly those the case metadata declares."""
    declared = {name: _declared(spec, f"case input {name!r}") for name, spec in case["inputs"].items()}
    inputs = {name: v for name, v in stored.items() if not name.startswith(EXPECTED_PREFIX)}
    if set(inputs) != set(declared):
        raise _Problem(f"arrays {sorted(inputs)} do not match the case's inputs {sorted(declared)}")
    for name, (shape, dtype) in inputs.items():
        if (shape, dtype) != declared[name]:
            want_shape, want_dtype = declared[name]
            raise _Problem(f"array {name!r} is {dtype} {shape}, the case declares {want_dtype} {want_shape}")


def _inline_arrays(stored: dict[str, Any], case: dict[str, Any]) -> dict[str, np.ndarray]:
    """The arrays written inline in ``entry.json``, each checked against its own spec and the case."""
    declared = {name: _declared(spec, f"inline array {name!r}") for name, spec in stored.items()}
    _match_case(declared, case)
    arrays = {}
    for name, (shape, dtype) in declared.items():
        values = _field(stored[name], "values", list)
        if len(values) != math.prod(shape):
            raise _Problem(f"{DOCUMENT_KEY}: inline array {name!r} has {len(values)} values for shape {shape}")
        try:
            arrays[name] = np.asarray(values, dtype=np.float64).astype(dtype).reshape(shape)
        except (TypeError, ValueError):
            raise _Problem(f"{DOCUMENT_KEY}: inline array {name!r} holds values that are not numbers") from None
    return arrays


def _npz_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[tuple[int, ...], np.dtype]:
    """One member's declared shape and dtype, checked to fit the bytes the member holds."""
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version not in _NPY_HEADERS:
            raise _Problem(f"{NPZ}: {info.filename!r} has unsupported .npy version {version}")
        shape, _, dtype = _NPY_HEADERS[version](member)
        held = info.file_size - member.tell()
    if dtype.kind not in ARRAY_KINDS:
        raise _Problem(f"{NPZ}: {info.filename!r} has dtype {dtype}, not a numeric dtype")
    needed = math.prod(shape) * dtype.itemsize
    if needed != held:
        raise _Problem(f"{NPZ}: {info.filename!r} declares {dtype} {shape} ({needed} bytes) but holds {held} bytes")
    return shape, dtype


def _npz(data: bytes, case: dict[str, Any] | None = None) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` archive, every header checked (and matched to ``case`` when given) before
    any array is allocated."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            headers = {info.filename.removesuffix(".npy"): _npz_header(archive, info) for info in archive.infolist()}
        declared = sum(math.prod(shape) * dtype.itemsize for shape, dtype in headers.values())
        if declared > MAX_ARRAY_BYTES:
            raise _Problem(f"{NPZ}: its arrays declare {declared} bytes in all, more than the {MAX_ARRAY_BYTES} an "
                           "entry may hold")
        if case is not None:
            _match_case(headers, case)
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError) as err:
        raise _Problem(f"{NPZ}: corrupt ({err})") from None


def _from_stored(document: dict[str, Any], arrays: dict[str, np.ndarray]) -> Entry:
    """An entry from its JSON document and all its arrays (inputs by ONNX name, ``expected/<name>``)."""
    expected = {k.removeprefix(EXPECTED_PREFIX): v for k, v in arrays.items() if k.startswith(EXPECTED_PREFIX)}
    inputs = {k: v for k, v in arrays.items() if not k.startswith(EXPECTED_PREFIX)}
    seen = document.get("seen") or {}
    try:
        return _entry_from(document, seen, inputs, expected)
    except (KeyError, TypeError, ValueError) as err:
        raise _Problem(f"{DOCUMENT_KEY}: inconsistent entry ({err})") from None


def _checked_values(entry: Entry) -> Entry:
    """``entry`` if its values are what its property can check: a case within the contract for a property
    that takes only valid cases, and finite values everywhere but in poisoned past slots (the only place
    the contract lets NaN and Inf be)."""
    case = entry.finding.case
    if not PROPERTIES[entry.finding.property].invalid_input:
        try:
            case.dims()
        except ValidationError as err:
            raise _Problem(f"the case breaks the contract ({err}); property {entry.finding.property!r} takes "
                           "valid cases only") from None
    arrays = {**case.inputs, **{EXPECTED_PREFIX + k: v for k, v in entry.expected_arrays.items()}}
    for name, array in arrays.items():
        poisoned = name == "past_state" and case.poison is not None and case.state_window > 0
        checked = array[-1:] if poisoned else array
        if not np.isfinite(checked).all():
            where = "past_state slot W-1 (only earlier slots may be poisoned)" if poisoned else f"array {name!r}"
            raise _Problem(f"{where} holds NaN or Inf, which the case does not allow there")
    return entry


def _entry_from(document: dict[str, Any], seen: dict[str, Any], inputs: dict[str, np.ndarray],
                expected: dict[str, np.ndarray]) -> Entry:
    """The ``Entry`` of a checked document; ``Case`` and ``Finding`` may still refuse what they hold."""
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
        note=seen.get("note", ""),
    )
    return Entry(finding=finding, expected=document.get("expected") or {},
                 provenance=document.get("provenance") or {}, expected_arrays=expected)


def _read_file(directory: Path, name: str, limit: int) -> bytes:
    """The bytes of ``directory/name``, which must be a regular file of at most ``limit`` bytes: a link
    (it could lead out of the entry directory), a device or a pipe (it could block or never end) is refused
    before a byte is read."""
    try:
        descriptor = os.open(directory / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise _Problem(f"{name}: missing") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise _Problem(f"{name}: a symbolic link; only a regular file inside the entry directory is read") from None
        raise _Problem(f"{name}: unreadable ({err.strerror})") from None
    with os.fdopen(descriptor, "rb") as file:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise _Problem(f"{name}: not a regular file")
        if status.st_size > limit:
            raise _Problem(f"{name}: {status.st_size} bytes, more than the {limit} an entry may hold")
        try:
            return file.read(limit + 1)
        except OSError as err:
            raise _Problem(f"{name}: unreadable ({err.strerror})") from None


def _read_document(directory: Path) -> dict[str, Any]:
    """``entry.json`` of ``directory``, parsed and checked against the format."""
    try:
        text = _read_file(directory, DOCUMENT_KEY, MAX_DOCUMENT_BYTES).decode()
    except UnicodeDecodeError as err:
        raise _Problem(f"{DOCUMENT_KEY}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    return _check_document(_parse(text))


def _parse(text: str) -> Any:
    """``entry.json``'s text as JSON; a truncated file is the usual cause of invalid JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise _Problem(f"{DOCUMENT_KEY}: invalid JSON at line {err.lineno} (truncated?)") from None


def _read_npz(directory: Path, case: dict[str, Any]) -> dict[str, np.ndarray]:
    """``arrays.npz`` next to ``entry.json`` (the one other file an entry may have)."""
    return _npz(_read_file(directory, NPZ, MAX_ARRAY_BYTES), case)


def read_entry(directory: Path) -> Entry:
    """Read one entry directory; every way it can be bad raises ``CorpusError`` naming the directory."""
    directory = Path(directory)
    try:
        document = _read_document(directory)
        stored, case = document["arrays"], document["case"]
        arrays = _read_npz(directory, case) if stored == NPZ else _inline_arrays(stored, case)
        return _checked_values(_from_stored(document, arrays))
    except _Problem as problem:
        raise CorpusError(directory, str(problem)) from None


def to_bytes(entry: Entry) -> bytes:
    """The entry as one archive (its document and every array): how shards share findings."""
    document = json.dumps(entry.to_json("arrays.npz"), sort_keys=True, default=_plain).encode()
    buffer = io.BytesIO()
    np.savez_compressed(buffer, allow_pickle=False, **{DOCUMENT_KEY: np.frombuffer(document, dtype=np.uint8)},
                        **_all_arrays(entry))
    return buffer.getvalue()


def from_bytes(value: bytes) -> Entry:
    """The inverse of ``to_bytes``; a bad archive raises ``CorpusError``."""
    try:
        arrays = _npz(value)
        if DOCUMENT_KEY not in arrays:
            raise _Problem(f"no {DOCUMENT_KEY} in the archive")
        document = _check_document(_parse(arrays.pop(DOCUMENT_KEY).tobytes().decode(errors="replace")))
        _match_case({name: (a.shape, a.dtype) for name, a in arrays.items()}, document["case"])
        return _checked_values(_from_stored(document, arrays))
    except _Problem as problem:
        raise CorpusError("archive", str(problem)) from None


def entry_dirs(root: Path) -> Iterator[Path]:
    """Every entry directory under ``root``, in a stable order (skipping half-written ones)."""
    root = Path(root)
    if not root.is_dir():
        return
    for path in sorted(root.glob("*/*/entry.json")):
        if not path.parent.name.endswith(atomic.PARTIAL):
            yield path.parent


def load(root: Path) -> list[Entry]:
    """Every entry under ``root``."""
    return [read_entry(d) for d in entry_dirs(root)]


def marks(root: Path) -> dict[str, KnownMark]:
    """Entry id -> ``known_failure`` mark, for every marked entry under ``root`` (reads no arrays;
    ``CorpusError`` for an unreadable ``entry.json``)."""
    found = {}
    for directory in entry_dirs(root):
        try:
            document = _read_document(directory)
        except _Problem as problem:
            raise CorpusError(directory, str(problem)) from None
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
            atomic.copy_directory(directory, target)
            copied += 1
    return copied, present
