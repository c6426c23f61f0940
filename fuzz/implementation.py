"""What a backend is an implementation of: a name and the version it says it is.

Known issues (``fuzz.corpus.known_issues``) are keyed by implementation and version range, so a
build of another version, or one whose version cannot be parsed (a local build's ``"1.0.0-dev"``
is fine, ``"unknown"`` is not), is checked in full instead of inheriting another version's
known defects.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version


@dataclass(frozen=True)
class Implementation:
    """E.g. ``Implementation("onnxruntime-ep-webgpu", "0.4.0")``: the package (or build) and its version."""

    name: str
    version: str

    def __str__(self) -> str:
        return f"{self.name} {self.version}"

    def within(self, name: str, versions: SpecifierSet) -> bool:
        """Whether this is ``name`` at a version in ``versions`` (pre-releases and dev builds included);
        False for an unparsable version."""
        try:
            version = Version(self.version)
        except InvalidVersion:
            return False
        return self.name == name and versions.contains(version, prereleases=True)

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version}
