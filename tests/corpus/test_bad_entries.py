"""Bad corpus data: every way an entry can be broken is one ``CorpusError`` with a one-line message naming
the entry, and ``lafuzz replay`` / ``lafuzz repro`` report it without a traceback (replay goes on)."""

from __future__ import annotations

import io
import json
import re
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from fuzz import cli
from fuzz.corpus import entry as corpus
from fuzz.engine.case import Case
from fuzz.findings import Finding, Kind

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


def _bad_corpus(root: Path) -> dict[str, str]:
    """One good entry and several bad ones under ``root``; the bad ones' names and what each line must say."""
    shutil.copytree(GOOD, root / "backends-agree" / GOOD.name)
    bad = {"bad-json": "truncated json", "no-npz": "npz missing", "escape": "path leaves the entry",
           "bad-npz": "npz corrupt"}
    for directory, case in bad.items():
        _, breakage, _ = CASES[case]
        shutil.copytree(GOOD, root / "backends-agree" / directory)
        breakage(root / "backends-agree" / directory)
    return {f"backends-agree/{directory}": CASES[case][2] for directory, case in bad.items()}


def test_replay_names_each_bad_entry_replays_the_rest_and_exits_2(tmp_path: Path, capsys) -> None:
    bad = _bad_corpus(tmp_path)
    status = cli.main(["replay", str(tmp_path), "--backends", "oracle", "-v"])
    out = capsys.readouterr().out.splitlines()
    assert status == cli.EXIT_UNREADABLE == 2
    for name, message in bad.items():
        assert any(line.startswith(f"unreadable    {name}: ") and re.search(message, line)
                   for line in out), (name, out)
    assert any(line.startswith(f"pass          backends-agree/{GOOD.name} [cuda-reference, oracle]") for line in out)
    assert out[-1].startswith("replayed 1 entries (4 unreadable), 1 checks: 1 pass")


def test_repro_of_a_bad_entry_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    path = _write(tmp_path, INLINE)
    _truncate("entry.json")(path)
    assert cli.main(["repro", str(path), "--backends", "oracle"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"lafuzz repro: {path}: entry.json: invalid JSON at line") and err.count("\n") == 1


def test_a_bad_archive_from_the_example_database_is_a_corpus_error() -> None:
    with pytest.raises(corpus.CorpusError, match=r"^archive: arrays\.npz: corrupt"):
        corpus.from_bytes(b"garbage")
