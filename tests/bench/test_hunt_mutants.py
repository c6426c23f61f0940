"""The single-point mutants of the WGSL kernels and the hunt's blind mode (``fuzz.bench.hunt.mutants``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.bench.hunt import cli
from fuzz.bench.hunt.mutants import BLIND_KERNELS, all_mutants, blind_bugs, line_mutants, sample
from fuzz.bench.hunt.tree import root_of_tree
from fuzz.ops.registry import op_names

ROOT = root_of_tree()


def test_each_operator_mutates_one_spot_of_a_line() -> None:
    line = "    let i = row0 + k * COLS; if (i < DK) { s[k] = max(s[k], 0.5); }"
    kinds = {m.operator for m in line_mutants(7, line, "kernels/x.wgsl")}
    assert {"swap", "literal", "neighbour"} <= kinds
    for m in line_mutants(7, line, "kernels/x.wgsl"):
        assert m.new != line and m.old == line and m.line == 7 and m.file == "kernels/x.wgsl"


def test_a_loops_start_and_step_are_never_mutated() -> None:
    line = "    for (var k = 0u; k < RPT; k++) { a[k] = b[k]; }"
    for m in line_mutants(1, line):
        assert "for (var k = 0u;" in m.new and "k++)" in m.new, m.new


def test_the_blind_draw_is_the_seeds_and_spreads_over_the_kernels() -> None:
    first, again, other = blind_bugs(ROOT, 40, 3), blind_bugs(ROOT, 40, 3), blind_bugs(ROOT, 40, 4)
    assert first == again and first != other
    assert len(first) == 40 and len({b.id for b in first}) == 40
    assert {b.edit.file for b in first} >= {"kernels/linear_attention.wgsl", "kernels/chunked.wgsl",
                                             "kernels/causal_conv.wgsl"}
    assert all(b.op in op_names() and b.target is None and b.op == BLIND_KERNELS[b.edit.file] for b in first)


def test_each_blind_edit_applies_exactly_once(tmp_path: Path) -> None:
    for bug in blind_bugs(ROOT, 30, 5):
        text = (ROOT / bug.edit.file).read_text()
        planted = bug.edit.applied(text, bug.id)
        assert planted != text and Path(bug.edit.file).suffix == ".wgsl"
        assert bug.edit.__class__(bug.edit.file, bug.edit.replace, bug.edit.find).applied(planted, bug.id) == text


def test_the_sample_takes_one_mutant_per_line_before_a_second() -> None:
    source = (ROOT / "kernels/causal_conv.wgsl").read_text()
    mutants = all_mutants(source, "kernels/causal_conv.wgsl")
    lines = {m.line for m in mutants}
    chosen = sample(mutants, len(lines), 1)
    assert len({m.line for m in chosen}) == len(lines)


@pytest.mark.parametrize("argv", [["--blind", "3", "--check"], ["--blind", "0"], ["--blind", "2", "--bugs", "x"]])
def test_the_command_refuses_blind_with_check_bugs_or_no_count(argv: list[str],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2 and "--blind" in capsys.readouterr().err
