"""Bad corpus data: every way an entry can be broken is one ``CorpusError`` with a one-line message naming
the entry, and ``lafuzz replay`` / ``lafuzz repro`` report it without a traceback (replay goes on)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from fuzz import cli
from fuzz.backends.oracle import OracleBackend
from fuzz.commands.arguments import EXIT_UNREADABLE
from fuzz.corpus import entry as corpus
from fuzz.corpus import replay
from fuzz.model.case import Case
from fuzz.model.findings import Finding, Kind

GOOD = Path(__file__).resolve().parents[2] / "corpus" / "backends-agree" / "00d86dda26a3e9f8"
"""A real, unmarked CUDA reference entry (``arrays.npz`` form) that the oracle agrees with."""


def _write(root: Path, t: int) -> Path:
    """A written entry: inline when ``t`` is small, ``arrays.npz`` when it is large."""
    rng = np.random.default_rng(0)
    inputs = {n: rng.standard_normal((1, t, 2)).astype(np.float32) for n in ("query", "key", "value")}
    case = Case(inputs=inputs, attrs={"q_num_heads": 1, "kv_num_heads": 1, "update_rule": "linear"})
    finding = Finding(property="backends-agree", backends=("oracle",), kind=Kind.MISMATCH, signature="s",
                      report="", case=case)
    return corpus.write_entry(root, corpus.Entry(finding))


def _edit(change: Callable[[dict], object]) -> Callable[[Path], None]:
    """A breakage that edits the parsed ``entry.json`` in place."""
    def apply(path: Path) -> None:
        document = json.loads((path / "entry.json").read_text())
        change(document)
        (path / "entry.json").write_text(json.dumps(document))
    return apply


def _truncate(name: str) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        data = (path / name).read_bytes()
        (path / name).write_bytes(data[: len(data) // 2])
    return apply


def _oversized_npy(path: Path) -> None:
    """``query.npy`` in ``arrays.npz`` declares a million rows but holds the original few bytes."""
    with zipfile.ZipFile(path / "arrays.npz") as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (1, 10**6, 2)})
    members["query.npy"] = header.getvalue() + b"\0" * 16
    with zipfile.ZipFile(path / "arrays.npz", "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _replace(name: str, make: Callable[[Path], None]) -> Callable[[Path], None]:
    """A breakage that removes ``name`` from the entry and makes something else in its place."""
    def apply(path: Path) -> None:
        (path / name).unlink()
        make(path / name)
    return apply


def _sparse(size: int) -> Callable[[Path], None]:
    """A file of ``size`` bytes that takes no disk (reading it would allocate them all)."""
    def make(path: Path) -> None:
        path.touch()
        os.truncate(path, size)
    return make


def _rewrite_npz(path: Path, name: str, change: Callable[[np.ndarray], np.ndarray]) -> None:
    """Replace one array of ``arrays.npz`` by ``change`` of it."""
    with np.load(path / "arrays.npz") as archive:
        arrays = {k: archive[k] for k in archive.files}
    arrays[name] = change(arrays[name])
    np.savez(path / "arrays.npz", **arrays)


def _set(*keys: str, value: object) -> Callable[[dict], None]:
    """Set ``document[k1][k2]...`` to ``value``."""
    def change(document: dict) -> None:
        for key in keys[:-1]:
            document = document[key]
        document[keys[-1]] = value
    return change


INLINE, NPZ = 2, 40
CASES = {
    "truncated json": (INLINE, _truncate("entry.json"), r"entry\.json: invalid JSON at line \d+ \(truncated\?\)"),
    "not an object": (INLINE, lambda p: (p / "entry.json").write_text("[]"), r"entry\.json: not a JSON object"),
    "missing entry.json": (INLINE, lambda p: (p / "entry.json").unlink(), r"entry\.json: missing"),
    "missing field": (INLINE, _edit(lambda d: d.pop("kind")), r"entry\.json: missing field 'kind'"),
    "wrong type": (INLINE, _edit(_set("backends", value="oracle")),
                   r"entry\.json: field 'backends' is str, expected list"),
    "unknown kind": (INLINE, _edit(_set("kind", value="bogus")), r"entry\.json: unknown kind 'bogus'"),
    "unknown format": (INLINE, _edit(_set("format", value="lafuzz-corpus/99")),
                       r"entry\.json: format 'lafuzz-corpus/99', expected 'lafuzz-corpus/1'"),
    "bad case": (INLINE, _edit(_set("case", "poison", value="bogus")),
                 r"entry\.json: inconsistent entry \(Case: poison"),
    "inline wrong shape": (INLINE, _edit(_set("arrays", "query", "shape", value=[1, 1, 4])),
                           r"array 'query' is float32 \(1, 1, 4\), the case declares float32 \(1, 2, 2\)"),
    "inline wrong dtype": (INLINE, _edit(_set("arrays", "query", "dtype", value="float64")),
                           r"array 'query' is float64 \(1, 2, 2\), the case declares float32"),
    "inline object dtype": (INLINE, _edit(_set("arrays", "query", "dtype", value="object")),
                            r"inline array 'query': dtype 'object' is not a numeric dtype"),
    "inline far larger than its data": (
        INLINE, _edit(lambda d: [_set(*at, "shape", value=[1, 10**9, 2])(d) for at in (("arrays", "query"),
                                                                                      ("case", "inputs", "query"))]),
        r"inline array 'query' has 4 values for shape \(1, 1000000000, 2\)"),
    "inline values not numbers": (INLINE, _edit(_set("arrays", "query", "values", value=["x"] * 4)),
                                  r"inline array 'query' holds values that are not numbers"),
    "input missing": (INLINE, _edit(lambda d: d["arrays"].pop("key")),
                      r"arrays \['query', 'value'\] do not match the case's inputs \['key', 'query', 'value'\]"),
    "npz missing": (NPZ, lambda p: (p / "arrays.npz").unlink(), r"arrays\.npz: missing"),
    "npz corrupt": (NPZ, lambda p: (p / "arrays.npz").write_bytes(b"not a zip"), r"arrays\.npz: corrupt \("),
    "npz truncated": (NPZ, _truncate("arrays.npz"), r"arrays\.npz: corrupt \("),
    "npz far larger than its data": (
        NPZ, _oversized_npy, r"arrays\.npz: 'query\.npy' declares float32 \(1, 1000000, 2\) \(8000000 bytes\) "
                             r"but holds 16 bytes"),
    "npz wrong shape": (NPZ, _edit(_set("case", "inputs", "query", "shape", value=[1, 41, 2])),
                        r"array 'query' is float32 \(1, 40, 2\), the case declares float32 \(1, 41, 2\)"),
    "path leaves the entry": (NPZ, _edit(_set("arrays", value="../../../etc/passwd")),
                              r"field 'arrays' names '\.\./\.\./\.\./etc/passwd'; only 'arrays\.npz' next to "
                              r"entry\.json is read"),
    "id leaves the corpus": (INLINE, _edit(_set("id", value="../../x")),
                             r"field 'id' is '\.\./\.\./x', not a plain name"),
    "absolute path": (NPZ, _edit(_set("arrays", value="/etc/passwd")),
                      r"field 'arrays' names '/etc/passwd'; only 'arrays\.npz' next to entry\.json is read"),
    "npz links out of the entry": (NPZ, _replace("arrays.npz", lambda p: p.symlink_to(GOOD / "arrays.npz")),
                                   r"arrays\.npz: a symbolic link; only a regular file inside the entry"),
    "entry.json links out": (INLINE, _replace("entry.json", lambda p: p.symlink_to("/etc/passwd")),
                             r"entry\.json: a symbolic link; only a regular file inside the entry"),
    "entry.json is a pipe": (INLINE, _replace("entry.json", os.mkfifo), r"entry\.json: not a regular file"),
    "entry.json too large": (INLINE, _replace("entry.json", _sparse(corpus.MAX_DOCUMENT_BYTES + 1)),
                             rf"entry\.json: {corpus.MAX_DOCUMENT_BYTES + 1} bytes, more than the "
                             rf"{corpus.MAX_DOCUMENT_BYTES} an entry may hold"),
    "npz too large": (NPZ, _replace("arrays.npz", _sparse(corpus.MAX_ARRAY_BYTES + 1)),
                      rf"arrays\.npz: {corpus.MAX_ARRAY_BYTES + 1} bytes, more than the"),
    "entry.json not text": (INLINE, lambda p: (p / "entry.json").write_bytes(b"{\xff\xfe}"),
                            r"entry\.json: not UTF-8 text \(invalid start byte at byte 1\)"),
    "unknown property": (INLINE, _edit(_set("property", value="no-such-property")),
                         r"entry\.json: unknown property 'no-such-property'; known: backends-agree"),
    "property names code": (INLINE, _edit(_set("property", value="os:system")),
                            r"entry\.json: unknown property 'os:system'"),
    "no backends": (INLINE, _edit(_set("backends", value=[])),
                    r"entry\.json: field 'backends' must list one or more backend names"),
    "aliased not a bool": (INLINE, _edit(_set("case", "aliased", value="no")),
                           r"entry\.json: field 'aliased' is str, expected bool"),
    "case breaks the contract": (INLINE, _edit(_set("case", "attrs", "state_window", value=99)),
                                 r"the case breaks the contract \(state_window: expected in \[0, 8\], received "
                                 r"99\); property 'backends-agree' takes valid cases only"),
    "inline nan": (INLINE, _edit(_set("arrays", "query", "values", value=[float("nan")] * 4)),
                   r"array 'query' holds NaN or Inf, which the case does not allow there"),
    "npz inf": (NPZ, lambda p: _rewrite_npz(p, "value", lambda a: np.full_like(a, np.inf)),
                r"array 'value' holds NaN or Inf, which the case does not allow there"),
    "npz wrong dtype": (NPZ, lambda p: _rewrite_npz(p, "key", lambda a: a.astype(np.float16)),
                        r"array 'key' is float16 \(1, 40, 2\), the case declares float32 \(1, 40, 2\)"),
}


@pytest.mark.parametrize("name", CASES)
def test_each_bad_entry_is_one_corpus_error_naming_it(tmp_path: Path, name: str) -> None:
    t, breakage, message = CASES[name]
    path = _write(tmp_path, t)
    breakage(path)
    with pytest.raises(corpus.CorpusError, match=message) as raised:
        corpus.read_entry(path)
    text = str(raised.value)
    assert text.startswith(f"{path}: ") and "\n" not in text
    assert raised.value.name == f"backends-agree/{path.name}"


def _bad_corpus(root: Path, scratch: Path) -> dict[str, str]:
    """One good entry and one bad entry per case of ``CASES`` under ``root`` (but a directory without
    ``entry.json``, which is no entry); the bad ones' names and what each line must say."""
    shutil.copytree(GOOD, root / "backends-agree" / GOOD.name)
    bad = {}
    for number, (t, breakage, message) in enumerate(v for k, v in CASES.items() if k != "missing entry.json"):
        written = _write(scratch / str(number), t)
        breakage(written)
        directory = f"bad-{number}"
        written.rename(root / "backends-agree" / directory)
        bad[f"backends-agree/{directory}"] = message
    return bad


def test_replay_names_each_bad_entry_replays_the_rest_and_exits_2(tmp_path: Path, capsys) -> None:
    bad = _bad_corpus(tmp_path / "corpus", tmp_path / "scratch")
    status = cli.main(["replay", str(tmp_path / "corpus"), "--backends", "oracle", "-v"])
    out = capsys.readouterr().out.splitlines()
    assert status == EXIT_UNREADABLE == 2
    for name, message in bad.items():
        assert any(line.startswith(f"unreadable    {name}: ") and re.search(message, line)
                   for line in out), (name, out)
    assert any(line.startswith(f"pass          backends-agree/{GOOD.name} [cuda-reference, oracle]") for line in out)
    assert out[-1].startswith(f"replayed 1 entries ({len(bad)} unreadable), 1 checks: 1 pass")


def test_arrays_that_declare_more_than_an_entry_may_hold_are_refused_before_loading(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    """A compressed archive whose members are honest about their sizes but huge (a zip bomb) is refused
    from its headers: the limit is lowered here so that the test need not write one."""
    path = _write(tmp_path, NPZ)
    zeros = {n: np.zeros((1, NPZ, 2), np.float32) for n in ("query", "key", "value")}
    np.savez_compressed(path / "arrays.npz", **zeros)
    assert (path / "arrays.npz").stat().st_size < 959, "the archive itself must be within the limit"
    monkeypatch.setattr(corpus, "MAX_ARRAY_BYTES", 959)
    with pytest.raises(corpus.CorpusError, match=r"arrays\.npz: its arrays declare 960 bytes in all, more than "
                                                 r"the 959 an entry may hold"):
        corpus.read_entry(path)


class _Raising(OracleBackend):
    """A backend that raises outside the typed outcomes (a bug in it, or in the suite)."""

    name = "raising"

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        raise RuntimeError("boom\nsecond line")


def test_a_check_that_raises_is_an_error_verdict_not_a_traceback() -> None:
    entry = corpus.read_entry(GOOD)
    [verdict] = replay.replay_entry(entry, {"raising": _Raising()})
    assert verdict.verdict == replay.HARNESS_ERROR and verdict.verdict in replay.FAILED
    assert verdict.line().endswith("[cuda-reference, raising]: RuntimeError: boom")


def test_repro_of_a_bad_entry_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    path = _write(tmp_path, INLINE)
    _truncate("entry.json")(path)
    assert cli.main(["repro", str(path), "--backends", "oracle"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"lafuzz repro: {path}: entry.json: invalid JSON at line") and err.count("\n") == 1


def test_a_bad_archive_from_the_example_database_is_a_corpus_error() -> None:
    with pytest.raises(corpus.CorpusError, match=r"^archive: arrays\.npz: corrupt"):
        corpus.from_bytes(b"garbage")
