"""The catalogue of planted bugs: data (``bugs.toml``), read into typed values.

Each bug is one edit of one file of the tree (the exact text to find, which must occur exactly once, and its
replacement), an id, a one-line description, the op and the component it lives in, and a targeted case: a
small deterministic case (property, backends, sizes, seed; ``fuzz.bench.hunt.targeted`` builds and checks it)
that fails with the bug planted and passes without it. The catalogue is kept apart from the tests that plant
bugs, so that it can grow without touching them and every bug is measured the same way.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzz.ops.registry import op_names

CATALOGUE = Path(__file__).with_name("bugs.toml")
"""The catalogue shipped with lafuzz."""

PLATFORM_CATALOGUE = Path(__file__).with_name("platform_bugs.toml")
"""Bugs whose effect may depend on the platform running the kernel (barriers, workgroup memory, the subgroup size),
checked on each platform with ``--swap`` (docs/platforms.md)."""


class CatalogueError(ValueError):
    """A catalogue that cannot be used: a missing field, a duplicate id, an edit that does not apply."""


@dataclass(frozen=True)
class Edit:
    """One replacement in one file: ``find`` (occurring exactly once) becomes ``replace``."""

    file: str
    """Path relative to the tree's root, e.g. ``kernels/causal_conv.wgsl``."""
    find: str
    replace: str

    def applied(self, text: str, bug: str) -> str:
        """``text`` with the edit made; ``CatalogueError`` unless ``find`` occurs exactly once."""
        count = text.count(self.find)
        if count != 1:
            raise CatalogueError(f"bug {bug}: the text to find occurs {count} times in {self.file}, not once")
        return text.replace(self.find, self.replace)

    def plant(self, root: Path, bug: str) -> None:
        """Make the edit in the tree at ``root``."""
        path = root / self.file
        path.write_text(self.applied(path.read_text(), bug))

    def unplant(self, root: Path, bug: str) -> None:
        """Undo ``plant`` in the tree at ``root``."""
        path = root / self.file
        path.write_text(Edit(self.file, self.replace, self.find).applied(path.read_text(), bug))


@dataclass(frozen=True)
class Target:
    """The targeted case of a bug: which property, on which backends, of which case (``fields``: the sizes,
    dtype, window, layout and seed ``fuzz.bench.hunt.targeted.build_case`` reads; its defaults fill the rest)."""

    property: str
    backends: tuple[str, ...]
    fields: dict[str, Any]


@dataclass(frozen=True)
class Bug:
    """One planted bug."""

    id: str
    description: str
    op: str
    """The op it breaks: a registered op (``fuzz.ops.registry``), which the default campaign draws."""
    component: str
    """Where it lives: the kernel path or host component, e.g. ``chunked prefill`` or ``select-and-resume``."""
    edit: Edit
    target: Target | None
    """None for a mutant of the hunt's blind mode (``fuzz.bench.hunt.mutants``), which no targeted case proves."""


def _bug(row: dict[str, Any]) -> Bug:
    where = row.get("id", "?")
    try:
        case = dict(row["case"])
        target = Target(property=case.pop("property"), backends=tuple(case.pop("backends")), fields=case)
        bug = Bug(id=row["id"], description=row["description"], op=row["op"], component=row["component"],
                  edit=Edit(row["file"], row["find"], row["replace"]), target=target)
    except KeyError as err:
        raise CatalogueError(f"bug {where}: missing field {err}") from None
    if bug.op not in op_names():
        raise CatalogueError(f"bug {where}: op {bug.op!r} is not one of {', '.join(op_names())}")
    if bug.edit.find == bug.edit.replace:
        raise CatalogueError(f"bug {where}: the replacement is the text itself")
    return bug


def load(path: Path = CATALOGUE) -> tuple[Bug, ...]:
    """Every bug of the catalogue at ``path``, in its order; ``CatalogueError`` on a bad entry or a repeated id."""
    with path.open("rb") as f:
        rows = tomllib.load(f).get("bug", [])
    bugs = tuple(_bug(row) for row in rows)
    seen: set[str] = set()
    for bug in bugs:
        if bug.id in seen:
            raise CatalogueError(f"bug id {bug.id} appears twice in {path}")
        seen.add(bug.id)
    return bugs


def select(bugs: tuple[Bug, ...], ids: str | None) -> tuple[Bug, ...]:
    """The bugs named in ``ids`` (comma-separated, in the catalogue's order), or all for None."""
    if not ids:
        return bugs
    wanted = [i.strip() for i in ids.split(",") if i.strip()]
    unknown = sorted(set(wanted) - {b.id for b in bugs})
    if unknown:
        raise CatalogueError(f"unknown bug id(s): {', '.join(unknown)}")
    return tuple(b for b in bugs if b.id in wanted)
