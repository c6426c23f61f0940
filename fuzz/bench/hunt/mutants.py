"""Single-point mutants of a WGSL kernel: the operators a slip of the pen makes, each applied to one code line.

The operators: ``+``/``-``, ``*``/``/``, ``%``/``/``, comparisons one step looser or tighter, ``==``/``!=``,
``&&``/``||``, an integer literal one off, a float literal zeroed, ``min``/``max``, the first two arguments of
``select`` swapped, a barrier or an assignment deleted, a ``+``/``-`` contribution dropped (``x = x + y`` ->
``x = x``), a variable replaced by a neighbour (``h``/``kh``, ``t``/``j``, ``DK``/``DV``, ``lid.x``/``lid.y``...).
A loop's step or start is never mutated: that hangs a dispatch rather than answering anything.

Two users: ``scripts/mutation_sweep.py`` (does the test suite kill each mutant?) and the hunt's blind mode
(``--blind N``: does the campaign find mutants nobody chose?). Some mutants change nothing the op computes (an
equivalent mutant); neither user can tell them apart by running them, so their results are read as an upper bound
on what escapes.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fuzz.bench.hunt.catalogue import Bug, Edit

SWAPS = ((" + ", " - "), (" - ", " + "), (" * ", " / "), (" / ", " * "), (" % ", " / "), (" < ", " <= "),
         (" <= ", " < "), (" > ", " >= "), (" >= ", " > "), (" == ", " != "), (" != ", " == "), (" && ", " || "),
         (" || ", " && "), (" += ", " -= "), (" -= ", " += "), ("min(", "max("), ("max(", "min("))
"""Textual operator swaps: each occurrence of the left side is one mutant."""

NEIGHBOURS = {"h": "kh", "kh": "h", "qh": "h", "oh": "qh", "t": "j", "j": "t", "i": "k", "k": "i", "DK": "DV",
              "DV": "DK", "HQ": "HKV", "HKV": "HQ", "b": "h", "bt": "first", "first": "bt", "c": "b", "T": "S",
              "S": "T", "C": "K", "K": "C", "qw": "kw", "kw": "qw", "at": "e", "e": "at", "row0": "col",
              "col": "vcol", "vcol": "col", "lid.x": "lid.y", "lid.y": "lid.x", "wg.x": "wg.y", "wg.y": "wg.x",
              "gid.x": "gid.y", "g": "c", "seq_len": "n", "n": "seq_len", "c0": "first", "tile": "slot"}
"""A variable and the neighbour a slip of the pen would put in its place."""

IDENTIFIER = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[xyz])?)(?![\w(])")
INTEGER = re.compile(r"(?<![\w.])(\d+)u\b")
FLOAT = re.compile(r"(?<![\w.])(\d+\.\d+)\b")
ACCUMULATE = re.compile(r"(?P<target>[\w.]+(?:\[[^\]]*\])?) = (?P=target) [-+] [^;]+;")
ASSIGNMENT = re.compile(r"^\s*(?:[\w.]+(?:\[[^\]]*\])?|\(\*\w+\)\[\w+\]) (?:[-+*^]?=) [^;]*;$")
FOR_HEADER = re.compile(r"for \((?P<init>[^;]*);(?P<cond>[^;]*);(?P<step>[^)]*)\)")


@dataclass(frozen=True)
class Mutant:
    """Line ``line`` (1-based) of the kernel file ``file`` replaced by ``new``."""

    line: int
    operator: str
    index: int
    old: str
    new: str
    file: str = ""

    @property
    def ident(self) -> str:
        return f"L{self.line}:{self.operator}:{self.index}"

    @property
    def shown(self) -> str:
        """The mutated line as the log shows it."""
        return f"(deleted) {self.old.strip()}" if self.operator == "delete" else self.new.strip()

    def apply(self, source: str) -> str:
        lines = source.split("\n")
        assert lines[self.line - 1] == self.old, self.ident
        lines[self.line - 1] = self.new
        return "\n".join(lines)


def code_part(line: str) -> str:
    """The line without its trailing comment."""
    return line.split("//", 1)[0]


def frozen_spans(code: str) -> list[tuple[int, int]]:
    """Character ranges no mutant may touch: a for loop's start and step (a zero step hangs the dispatch), the
    name a ``let``/``var``/``const`` declares, and a zero-slot stride (a loop's step too)."""
    spans = []
    for m in FOR_HEADER.finditer(code):
        spans += [m.span("init"), m.span("step")]
    for m in re.finditer(r"\b(?:let|var|const)\s+(\w+)", code):
        spans.append(m.span(1))
    if re.search(r"\blet stride\b", code):
        spans.append((0, len(code)))
    return spans


def free(span: tuple[int, int], frozen: list[tuple[int, int]]) -> bool:
    return all(span[1] <= a or span[0] >= b for a, b in frozen)


def select_swaps(code: str) -> Iterator[str]:
    """``code`` with the first two arguments of one ``select(...)`` swapped, once per call."""
    for m in re.finditer(r"\bselect\(", code):
        depth, args, start = 0, [], m.end()
        for pos in range(m.end(), len(code)):
            char = code[pos]
            if char in "([":
                depth += 1
            elif char in ")]" and depth > 0:
                depth -= 1
            elif char == "," and depth == 0:
                args.append((start, pos))
                start = pos + 1
            elif char == ")" and depth == 0:
                args.append((start, pos))
                break
        if len(args) == 3:
            (a0, a1), (b0, b1) = args[0], args[1]
            first, second = code[a0:a1].strip(), code[b0:b1].strip()
            yield code[:a0] + second + ", " + first + code[b1:]


def line_mutants(number: int, line: str, file: str = "") -> Iterator[Mutant]:
    """Every mutant of one line of the kernel."""
    code = code_part(line)
    if not code.strip() or code.lstrip().startswith(("@", "fn ", "struct ", "alias ")) or "{{" in code:
        return
    rest = line[len(code):]
    frozen = frozen_spans(code)
    found: list[tuple[str, str]] = []
    for old, new in SWAPS:
        for m in re.finditer(re.escape(old), code):
            if free(m.span(), frozen):
                found.append(("swap", code[:m.start()] + new + code[m.end():]))
    for m in INTEGER.finditer(code):
        if free(m.span(), frozen):
            value = int(m.group(1))
            for other in (value + 1, value - 1):
                if other >= 0:
                    found.append(("literal", code[:m.start()] + f"{other}u" + code[m.end():]))
    for m in FLOAT.finditer(code):
        if free(m.span(), frozen):
            zeroed = "1.0" if float(m.group(1)) == 0.0 else "0.0"
            found.append(("literal", code[:m.start()] + zeroed + code[m.end():]))
    for m in IDENTIFIER.finditer(code):
        name = m.group(1)
        if name in NEIGHBOURS and free(m.span(), frozen):
            found.append(("neighbour", code[:m.start()] + NEIGHBOURS[name] + code[m.end():]))
    found += [("select", swapped) for swapped in select_swaps(code)]
    for m in ACCUMULATE.finditer(code):
        found.append(("drop-term", code[:m.start()] + f"{m['target']} = {m['target']};" + code[m.end():]))
    stripped = code.strip()
    if stripped in ("workgroupBarrier();", "storageBarrier();") or ASSIGNMENT.match(code):
        found.append(("delete", code[: len(code) - len(code.lstrip())] + "// (deleted)"))
    counts: dict[str, int] = {}
    for operator, new_code in found:
        counts[operator] = counts.get(operator, -1) + 1
        yield Mutant(number, operator, counts[operator], line, new_code + rest, file)


def all_mutants(source: str, file: str = "") -> list[Mutant]:
    """Every mutant of the code lines of ``source`` (the text of ``file``; comment lines skipped)."""
    return [m for n, line in enumerate(source.split("\n"), 1) if not line.lstrip().startswith("//")
            for m in line_mutants(n, line, file)]


def sample(mutants: list[Mutant], count: int, seed: int) -> list[Mutant]:
    """``count`` mutants spread over the lines (of every file among ``mutants``): lines in a seeded random order,
    one mutant of each per round."""
    rng = random.Random(seed)
    by_line: dict[tuple[str, int], list[Mutant]] = {}
    for m in mutants:
        by_line.setdefault((m.file, m.line), []).append(m)
    lines = sorted(by_line)
    rng.shuffle(lines)
    for group in by_line.values():
        rng.shuffle(group)
    picked: list[Mutant] = []
    depth = 0
    while len(picked) < count and any(len(g) > depth for g in by_line.values()):
        picked += [by_line[n][depth] for n in lines if len(by_line[n]) > depth][: count - len(picked)]
        depth += 1
    return sorted(picked, key=lambda m: (m.file, m.line, m.operator, m.index))


BLIND_KERNELS = {
    "kernels/linear_attention.wgsl": "LinearAttention",
    "kernels/chunked.wgsl": "LinearAttention",
    "kernels/causal_conv.wgsl": "CausalConvWithState",
    "kernels/qkv_split.wgsl": "CausalConvWithState",
    "kernels/gated_delta_net.wgsl": "GatedDeltaNet",
    "kernels/state_replay.wgsl": "GatedDeltaNetStateReplay",
}
"""The WGSL kernels the hunt's blind mode mutates, each with the op whose campaign units run it (the q/k/v split
runs in the hybrid block, beside the convolution)."""


def blind_bugs(root: Path, count: int, seed: int) -> tuple[Bug, ...]:
    """``count`` single-point mutants of ``BLIND_KERNELS`` in the tree at ``root``, spread over their lines
    (``sample``), each a bug of the catalogue's kind without a targeted case. Only lines that occur once in their
    file are mutated, so that each edit applies exactly there."""
    pool: list[Mutant] = []
    for file in BLIND_KERNELS:
        path = root / file
        if not path.is_file():
            continue
        source = path.read_text()
        pool += [m for m in all_mutants(source, file) if source.count(m.old) == 1]
    return tuple(Bug(id=f"blind-{Path(m.file).stem}-{m.ident.replace(':', '-').lower()}", description=m.shown,
                     op=BLIND_KERNELS[m.file], component=f"blind mutant ({m.operator})",
                     edit=Edit(m.file, m.old, m.new), target=None)
                 for m in sample(pool, count, seed))
