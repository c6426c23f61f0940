"""Nothing dies on bad data: an output directory that cannot be written or has no room is one line before any
work starts, a bad summary or known-failure corpus is one line, and a campaign killed with SIGKILL leaves
every finding it announced readable and replayable."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections import namedtuple
from pathlib import Path

import pytest

from fuzz import output
from fuzz.cli import main
from fuzz.corpus import entry as corpus
from fuzz.usage import EXIT_USAGE, UsageError

BROKEN = "support.fakes:BrokenBackend"
GOOD = Path(__file__).resolve().parents[2] / "corpus" / "backends-agree" / "00d86dda26a3e9f8"
COMMANDS = {
    "campaign": ["campaign", "--examples", "1", "--backends", "oracle", "--properties", "backends-agree",
                 "--out", "{out}"],
    "bench": ["bench", "--quick", "--no-ort", "--out", "{out}"],
    "merge": ["merge", "{tmp}", "--out", "{out}"],
    "import-cuda": ["import-cuda", "--corpus", "{out}"],
    "gtest": ["gtest", "--out", "{out}"],
}
"""Every command that writes results into a directory, with ``{out}`` where that directory goes."""


def _under_a_file(tmp_path: Path) -> Path:
    """A directory path below a regular file: no one can create it, root included."""
    (tmp_path / "file").write_text("not a directory")
    return tmp_path / "file" / "sub"


def _read_only(tmp_path: Path) -> Path:
    """An existing directory without write permission (root ignores the permission bits)."""
    if os.geteuid() == 0:
        pytest.skip("running as root, which may write into a read-only directory; the path below a file covers it")
    directory = tmp_path / "read-only"
    directory.mkdir(mode=0o500)
    return directory


@pytest.mark.parametrize("make", [_under_a_file, _read_only], ids=["below a file", "read-only directory"])
@pytest.mark.parametrize("command", COMMANDS)
def test_an_unwritable_out_is_one_line_before_any_work(tmp_path: Path, capsys, command: str, make) -> None:
    out = make(tmp_path)
    argv = [a.format(out=out, tmp=tmp_path) for a in COMMANDS[command]]
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err.splitlines()
    option = "--corpus" if command == "import-cuda" else "--out"
    assert re.fullmatch(rf"lafuzz {command}: {option} {re.escape(str(out))}: cannot (create the directory|write "
                        r"there) \(.+\)", err[-1]), err
    assert not any("Traceback" in line or "skipping backend" in line for line in err), err


def test_a_full_disk_is_one_line_before_the_campaign_starts(tmp_path: Path, capsys, monkeypatch) -> None:
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(output.shutil, "disk_usage", lambda path: usage(2**30, 2**30 - 2**20, 2**20))
    argv = [a.format(out=tmp_path / "out", tmp=tmp_path) for a in COMMANDS["campaign"]]
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"lafuzz campaign: --out {tmp_path / 'out'}: only 1.0 MiB free, at least 64 MiB needed"
    assert not list((tmp_path / "out").iterdir()), "the probe file was left behind, or work started"


def test_prepare_output_leaves_a_writable_directory_as_it_found_it(tmp_path: Path) -> None:
    assert output.prepare_output(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert not list((tmp_path / "a" / "b").iterdir())
    with pytest.raises(UsageError, match=r"^--out .*/file/sub: cannot create the directory \(Not a directory\)$"):
        output.prepare_output(_under_a_file(tmp_path))


@pytest.mark.parametrize("content", ['{"format": "lafuzz-campaign/2", "started"', "[]", '{"format": "other"}'],
                         ids=["truncated", "not an object", "another format"])
@pytest.mark.parametrize("command", ["report", "merge"])
def test_a_bad_summary_is_one_line(tmp_path: Path, capsys, command: str, content: str) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "summary.json").write_text(content)
    argv = ["report", str(tmp_path / "run")] if command == "report" else ["merge", str(tmp_path / "run"),
                                                                          "--out", str(tmp_path / "m")]
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"lafuzz {command}: {tmp_path / 'run' / 'summary.json'}: not a readable campaign summary")
    assert err.count("\n") == 1, err


def test_a_bad_entry_in_the_known_failure_corpus_is_one_line(tmp_path: Path, capsys) -> None:
    known = tmp_path / "known" / "backends-agree" / "bad"
    shutil.copytree(GOOD, known)
    (known / "entry.json").write_text("{")
    argv = [a.format(out=tmp_path / "out", tmp=tmp_path) for a in COMMANDS["campaign"]]
    assert main([*argv, "--corpus", str(tmp_path / "known")]) == EXIT_USAGE
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"lafuzz campaign: --corpus: {known}: entry.json: invalid JSON at line 1 (truncated?)"


def _lines(stream) -> queue.Queue:
    """The lines of ``stream`` as they arrive (a reader thread), then None at its end."""
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


@pytest.mark.slow
def test_a_campaign_killed_with_sigkill_leaves_every_announced_finding_replayable(tmp_path: Path, capsys) -> None:
    """The whole process group (main and workers) is killed the moment the first finding is announced; every
    entry announced by then reads back and reproduces, and no half-written one is taken for an entry."""
    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    process = subprocess.Popen(
        [sys.executable, "-m", "fuzz.cli", "campaign", "--time", "5m", "-j", "2", "--limits", "ci",
         "--backends", f"oracle,{BROKEN}", "--properties", "backends-agree,prefix-oracle", "--out", str(out),
         "--corpus", str(tmp_path / "none")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
    )
    lines, announced, seen = _lines(process.stderr), [], []
    try:
        while not announced:
            line = lines.get(timeout=240)
            assert line is not None, "the campaign ended before it announced a finding:\n" + "".join(seen)
            seen.append(line)
            announced += re.findall(r"\[lafuzz\] new finding: .* -> (\S+)$", line)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    while (line := lines.get(timeout=60)) is not None:  # what was already in the pipe when it died
        announced += re.findall(r"\[lafuzz\] new finding: .* -> (\S+)$", line)
    assert process.returncode == -signal.SIGKILL
    assert not (out / "summary.json").exists(), "the campaign was not killed before its end"
    entries = {str(d) for d in corpus.entry_dirs(out / "corpus")}
    assert set(announced) <= entries, (announced, entries)
    for path in announced:
        assert "broken" in corpus.read_entry(Path(path)).finding.backends
    assert main(["replay", str(out), "--backends", f"oracle,{BROKEN}"]) == 1
    report = capsys.readouterr().out.splitlines()
    assert report[-1].startswith(f"replayed {len(entries)} entries (0 unreadable), {len(entries)} checks: "
                                 f"{len(entries)} regression"), report
