"""``fuzz.export.gtest_compile``: the generated files pass ``g++ -fsyntax-only``, and a broken one does not.

Here the check is the smoke test of ``tests/export/ort_test_api_stub`` (a stub of ORT's test API, see its README):
the real gtest headers and ORT's overload sets restated, not ORT's headers. A machine without ``g++`` or Debian's
``libgtest-dev`` skips it. The ORT-build-tree mode is checked for how it rewrites a compile command.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fuzz.export.gtest_compile import GTEST_HEADER, UPSTREAM_TWINS, CannotCheck, check, main, ort_command

UPSTREAM = Path(__file__).resolve().parents[2] / "docs" / "upstream"

needs_compiler = pytest.mark.skipif(
    shutil.which("g++") is None or not GTEST_HEADER.exists(),
    reason="the compile check needs g++ and gtest's headers (apt-get install g++ libgtest-dev)")


@needs_compiler
@pytest.mark.parametrize("name", sorted(UPSTREAM_TWINS))
def test_the_generated_file_compiles(name):
    command, result = check(UPSTREAM / name, None)
    assert result.returncode == 0, result.stderr
    assert "-fsyntax-only" in command


@needs_compiler
@pytest.mark.parametrize(("before", "after"), [
    ("tester.Run();", "tester.Run(1, 2, 3, 4, 5, 6, 7);"),  # no Run takes these arguments
    ("false, 1e-4f, 1e-4f);", "1e-4f, false, 1e-4f, 1e-4f, 0);"),  # AddOutput's arguments out of order
    ("GTEST_SKIP()", "GTEST_SKIP_NOT_A_MACRO()"),
])
def test_a_broken_file_does_not_compile(tmp_path, before, after):
    name = "linear_attention_window_op_test.cc"
    text = (UPSTREAM / name).read_text()
    assert before in text
    broken = tmp_path / name
    broken.write_text(text.replace(before, after, 1))
    _, result = check(broken, None)
    assert result.returncode != 0


@needs_compiler
def test_the_command_line_reports_each_file(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.count("exit status 0: compiles") == len(UPSTREAM_TWINS)


def test_an_ort_build_trees_command_becomes_a_syntax_check_of_the_generated_file(tmp_path):
    source = UPSTREAM / "causal_conv_with_state_window_op_test.cc"
    twin = "/ort/onnxruntime/test/contrib_ops/causal_conv_with_state_op_test.cc"
    commands = tmp_path / "compile_commands.json"
    commands.write_text(json.dumps([
        {"directory": "/ort/build", "file": "/ort/onnxruntime/test/contrib_ops/other_test.cc",
         "command": "c++ -c other_test.cc"},
        {"directory": "/ort/build", "file": twin,
         "command": f"/usr/bin/c++ -DUSE_CUDA=1 -I/ort/include -isystem /deps/absl -std=c++20 -MD -MT x.o -MF x.d "
                    f"-o CMakeFiles/x.o -c {twin}"},
    ]))
    argv, directory = ort_command(commands, source)
    assert directory == Path("/ort/build")
    assert argv == ["/usr/bin/c++", "-DUSE_CUDA=1", "-I/ort/include", "-isystem", "/deps/absl", "-std=c++20",
                    str(source.resolve()), "-fsyntax-only"]


def test_an_ort_build_tree_without_the_twin_cannot_check(tmp_path):
    commands = tmp_path / "compile_commands.json"
    commands.write_text("[]")
    with pytest.raises(CannotCheck, match="has no command for"):
        ort_command(commands, UPSTREAM / "linear_attention_window_op_test.cc")
