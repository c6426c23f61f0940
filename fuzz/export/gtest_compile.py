"""Compile-check the files of ``lafuzz gtest`` with ``g++ -std=c++17 -fsyntax-only``, without building ONNX Runtime.

Two ways, by what the machine has:

- ``--compile-commands FILE``: the ``compile_commands.json`` of a configured ORT build tree. The generated file is
  checked with exactly the flags (include paths, defines, generated protobuf headers) of ORT's own test of the same
  op, ``onnxruntime/test/contrib_ops/<op>_op_test.cc``: the real headers, the real check.
- otherwise, a smoke test: the real gtest headers (Debian's ``libgtest-dev``) and the declarations of
  ``tests/export/ort_test_api_stub`` in place of ORT's test API. It checks the C++ and every call against the
  overload sets ORT declares, nothing of ORT itself.

``python -m fuzz.export.gtest_compile [--compile-commands FILE] [FILE.cc ...]`` prints each command and its output;
exit status 0 when every file compiles, 1 when one does not, 2 when the check cannot run here.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STUB = ROOT / "tests" / "export" / "ort_test_api_stub"
GTEST_HEADER = Path("/usr/include/gtest/gtest.h")
UPSTREAM_TWINS = {"linear_attention_window_op_test.cc": "linear_attention_op_test.cc",
                  "causal_conv_with_state_window_op_test.cc": "causal_conv_with_state_op_test.cc"}
"""Each generated file's sibling in ORT's tree, whose compile command it borrows."""
SMOKE_FLAGS = ("-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror")


class CannotCheck(RuntimeError):
    """The check cannot run on this machine (no compiler, no gtest headers, no matching compile command)."""


def smoke_command(source: Path, compiler: str = "g++") -> list[str]:
    """The stub check of ``source``; ``CannotCheck`` without the compiler or the gtest headers."""
    if shutil.which(compiler) is None:
        raise CannotCheck(f"no {compiler} on PATH")
    if not STUB.is_dir():
        raise CannotCheck(f"no {STUB}: the smoke test runs from a checkout of lafuzz")
    if not GTEST_HEADER.exists():
        raise CannotCheck(f"no {GTEST_HEADER} (apt-get install libgtest-dev)")
    return [compiler, *SMOKE_FLAGS, "-I", str(STUB), str(source)]


def ort_command(compile_commands: Path, source: Path) -> tuple[list[str], Path]:
    """The compile command of ``source``'s sibling in ORT's tree, turned into a syntax check of ``source``, and the
    directory it runs in."""
    twin = UPSTREAM_TWINS.get(source.name)
    if twin is None:
        raise CannotCheck(f"{source.name} is not a file lafuzz gtest writes ({', '.join(UPSTREAM_TWINS)})")
    for entry in json.loads(compile_commands.read_text()):
        if Path(entry["file"]).as_posix().endswith(f"test/contrib_ops/{twin}"):
            argv = entry.get("arguments") or shlex.split(entry["command"])
            return _as_syntax_check(argv, entry["file"], source), Path(entry["directory"])
    raise CannotCheck(f"{compile_commands} has no command for onnxruntime/test/contrib_ops/{twin}")


def _as_syntax_check(argv: list[str], original: str, source: Path) -> list[str]:
    """``argv`` compiling ``original`` into an object file, as a ``-fsyntax-only`` check of ``source``."""
    command, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "-o":
            skip = True
        elif arg.startswith("-o") or arg == "-c" or arg.startswith(("-MD", "-MF", "-MT", "-MQ")):
            skip = arg in ("-MF", "-MT", "-MQ")
        else:
            command.append(str(source.resolve()) if arg == original else arg)
    return [*command, "-fsyntax-only"]


def check(source: Path, compile_commands: Path | None) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    """Run the check of ``source``; the command and its result."""
    if compile_commands is None:
        command, cwd = smoke_command(source), ROOT
    else:
        command, cwd = ort_command(compile_commands, source)
    return command, subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.export.gtest_compile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path, help="default: the two files in docs/upstream")
    parser.add_argument("--compile-commands", type=Path, help="compile_commands.json of a configured ORT build")
    args = parser.parse_args(argv)
    files = args.files or [ROOT / "docs" / "upstream" / name for name in UPSTREAM_TWINS]
    failed = False
    for source in files:
        try:
            command, result = check(source, args.compile_commands)
        except CannotCheck as reason:
            print(f"cannot check {source}: {reason}", file=sys.stderr)
            return 2
        print("$ " + shlex.join(command))
        print((result.stdout + result.stderr).rstrip() or "(no output)")
        print(f"exit status {result.returncode}: {'compiles' if result.returncode == 0 else 'DOES NOT COMPILE'}")
        failed |= result.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
