"""The plugin's command-line options, and what they select (``PlanOptions``), checked once at start-up.

The syntax is the campaign's: ``--lafuzz-backends`` takes registry names or ``module:Class``,
``--lafuzz-properties`` property names (or ``all``), ``--lafuzz-limits`` the names of
``lafuzz campaign --limits``. A bad value is a usage error naming what is known, before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

BACKENDS, PROPERTIES_OPTION, LIMITS, OUT = "--lafuzz-backends", "--lafuzz-properties", "--lafuzz-limits", "--lafuzz-out"
DEFAULT_LIMITS = "ci"
"""Tiny cases: the whole plan runs in seconds to minutes on a software adapter."""


def add_options(parser: pytest.Parser) -> None:
    """Register the options in their own group of ``pytest --help``."""
    group = parser.getgroup("lafuzz", "lafuzz: LinearAttention's correctness plan against your backends")
    group.addoption(
        BACKENDS,
        metavar="A,B",
        help="run every lafuzz property as a test on these backends together "
        "(names as `lafuzz backends` lists them, or module:Class: a backend of your own)",
    )
    group.addoption(PROPERTIES_OPTION, metavar="P,Q", help="only these properties (default all)")
    group.addoption(LIMITS, metavar="NAME", help=f"case sizes, as lafuzz campaign --limits (default {DEFAULT_LIMITS})")
    group.addoption(
        OUT,
        metavar="DIR",
        default="lafuzz-out",
        help="failures are saved as corpus entries under DIR/corpus for `lafuzz repro` (default lafuzz-out)",
    )


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


@dataclass(frozen=True)
class PlanOptions:
    """What ``--lafuzz-*`` selected: the properties to run as tests, on which backends, how large, where
    failures go."""

    backends: tuple[str, ...]
    properties: tuple[str, ...]
    limits: str
    corpus: Path

    @classmethod
    def from_config(cls, config: pytest.Config) -> PlanOptions | None:
        """The selection, or None without ``--lafuzz-backends``; ``pytest.UsageError`` for a bad value."""
        from fuzz.backends import REGISTRY
        from fuzz.campaign.worker import LIMIT_NAMES
        from fuzz.engine.properties import PROPERTIES

        backends, properties, limits = (config.getoption(o) for o in (BACKENDS, PROPERTIES_OPTION, LIMITS))
        if backends is None:
            given = [o for o, v in ((PROPERTIES_OPTION, properties), (LIMITS, limits)) if v is not None]
            if given:
                raise pytest.UsageError(f"{', '.join(given)} needs {BACKENDS} (the backends to run the properties on)")
            return None
        selected = _names(backends)
        unknown = [b for b in selected if b not in REGISTRY and ":" not in b]
        if not selected or unknown:
            raise pytest.UsageError(
                f"{BACKENDS}: unknown backend(s) {', '.join(unknown) or '(none given)'}; "
                f"known: {', '.join(REGISTRY)}, or module:Class"
            )
        chosen = tuple(PROPERTIES) if properties in (None, "all") else _names(properties)
        unknown = [p for p in chosen if p not in PROPERTIES]
        if not chosen or unknown:
            raise pytest.UsageError(
                f"{PROPERTIES_OPTION}: unknown properties {', '.join(unknown) or '(none given)'}; "
                f"known: {', '.join(PROPERTIES)}"
            )
        limits = limits or DEFAULT_LIMITS
        if limits not in LIMIT_NAMES:
            raise pytest.UsageError(f"{LIMITS}: unknown limits {limits!r}; known: {', '.join(LIMIT_NAMES)}")
        corpus = config.invocation_params.dir / config.getoption(OUT) / "corpus"
        return cls(backends=selected, properties=chosen, limits=limits, corpus=corpus)
