"""``fuzz.export.gtest_render``: the file holds one ``TEST`` per case with the right EP selection and expectation,
its numbers read back to exactly the expected data, and the files in docs/upstream are what the code writes now."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from fuzz.export.gtest_cases import builtin_cases
from fuzz.export.gtest_cli import FILES, main
from fuzz.export.gtest_expected import expectations
from fuzz.export.gtest_render import SUITES, float_literal, render_file, render_test
from fuzz.model.ops import LINEAR_ATTENTION, op_named

UPSTREAM = Path(__file__).resolve().parents[2] / "docs" / "upstream"
BUILTIN = builtin_cases()


def _numbers(text: str) -> list[float]:
    """The float literals of a list as written (``kNaN``/``kInf`` by name)."""
    values = []
    for token in re.findall(r"-?kInf|kNaN|-?[0-9][0-9.e+-]*f", text):
        values.append({"kNaN": np.nan, "kInf": np.inf, "-kInf": -np.inf}.get(token) or float(token.rstrip("f")))
    return values


def _statement(test_text: str, call: str, name: str) -> str:
    start = test_text.index(f'tester.{call}')
    start = test_text.index(f'"{name}"', start) if f'"{name}"' in test_text[start:] else start
    return test_text[start:test_text.index(";", start)]


@pytest.mark.parametrize("value", [0.0, -0.0, 1.0, -2.5, 1e-45, 3.4028235e38, 1e-4, 0.1, 65504.0, -7.006e-6,
                                   123456.7, np.nan, np.inf, -np.inf])
def test_a_literal_reads_back_to_the_same_float32(value):
    literal = float_literal(float(np.float32(value)))
    back = _numbers(literal)[0]
    assert np.array_equal(np.float32(back), np.float32(value), equal_nan=True), literal
    assert literal in ("kNaN", "kInf", "-kInf") or "." in literal or "e" in literal


def test_random_floats_read_back_exactly():
    values = np.random.default_rng(3).standard_normal(2000).astype(np.float32) * np.float32(10.0) ** \
        np.random.default_rng(4).integers(-40, 30, 2000).astype(np.float32)
    for value in values:
        assert np.float32(_numbers(float_literal(float(value)))[0]) == value


@pytest.mark.parametrize("op_name", sorted(BUILTIN))
def test_every_case_is_one_test_whose_numbers_are_the_expected_data(op_name):
    tests = BUILTIN[op_name]
    text = render_file(op_named(op_name), [(t, expectations(t)) for t in tests], "test")
    assert len(re.findall(rf"^TEST\({SUITES[op_name]}, ", text, flags=re.M)) == len(tests)
    for test in tests:
        body = render_test(test, expectations(test))
        assert f"TEST({SUITES[op_name]}, {test.name})" in text
        assert body.count("OpTester tester(") == len(test.calls)
        assert ("StateWindowExecutionProviders()" in body) == test.windowed
        if test.error is not None:
            assert f'kExpectFailure, "{test.error}"' in body
            continue
        for number, (call, want) in enumerate(zip(test.calls, expectations(test), strict=True)):
            block = body if len(test.calls) == 1 else body.split("// call ")[number + 1]
            for name, array in call.inputs.items():
                written = np.array(_numbers(_statement(block, "AddInput", name).split("}", 1)[1]), dtype=np.float32)
                assert np.array_equal(written, array.astype(np.float32).ravel(), equal_nan=True), (test.name, name)
            for name, array in want.outputs().items():
                statement = _statement(block, "AddOutput", name)
                values = _numbers(statement.split("}", 1)[1])[:-2]  # the last two are rel_error and abs_error
                assert np.array_equal(np.array(values, dtype=np.float32), array.astype(np.float32).ravel())
        if test.pass_through:
            assert "{kCudaExecutionProvider}" in body


def test_windowed_tests_skip_without_an_ep_and_the_webgpu_place_is_marked():
    test = next(t for t in BUILTIN[LINEAR_ATTENTION.name] if t.windowed and t.error is None)
    body = render_test(test, expectations(test))
    assert "if (providers.empty()) {" in body and "GTEST_SKIP()" in body and "&providers);" in body
    header = render_file(LINEAR_ATTENTION, [], "test")
    assert "DefaultCudaExecutionProvider()" in header and "// WEBGPU:" in header


def test_lines_fit_clang_format_width():
    for op_name, tests in BUILTIN.items():
        text = render_file(op_named(op_name), [(t, expectations(t)) for t in tests], "test")
        assert max(len(line) for line in text.splitlines()) <= 120


def test_docs_upstream_is_what_the_code_writes_now(tmp_path, capsys):
    assert main(["--out", str(tmp_path)]) == 0
    for name in FILES.values():
        assert (tmp_path / name).read_text() == (UPSTREAM / name).read_text(), (
            f"docs/upstream/{name} is stale: regenerate it with `lafuzz gtest`")
