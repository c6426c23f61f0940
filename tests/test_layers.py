"""The packages form one stack: each imports only from the layers below it, so no import cycle can come back.

Every ``import`` of the product's code is read from its source (``ast``, type-checking imports included: a
cycle the type checker sees is a cycle), resolved to its package, and checked against ``LAYERS``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("oracles", "kernels", "fuzz")

LAYERS: tuple[tuple[str, ...], ...] = (
    ("oracles",),
    ("kernels",),
    ("fuzz.compile_cache",),
    ("fuzz.usage", "fuzz.implementation", "fuzz.environment", "fuzz.data_dir"),
    ("fuzz.atomic",),
    ("fuzz.output",),
    ("fuzz.model",),
    ("fuzz.backends",),
    ("fuzz.backend_options",),
    ("fuzz.ops",),
    ("fuzz.engine",),
    ("fuzz.corpus",),
    ("fuzz.export",),
    ("fuzz.campaign",),
    ("fuzz.pytest_plugin", "fuzz.bench", "fuzz.setup"),
    ("fuzz.commands",),
    ("fuzz.cli",),
)
"""The stack, lowest first: the contract in NumPy; the WGSL kernel; small utilities; the case model (a case
and its op, findings among it); the backends under test; the registry of the ops under test; the engine (strategies,
tolerances, properties); the corpus; upstream export; campaigns; the pytest plugin, the benchmark and the set-up;
the command line."""

CAMPAIGN_LEVEL = frozenset({"coverage", "swarm"})
"""The modules of an op's package (``fuzz/ops/<op>/``) that a campaign reads; the others the engine does."""
EXPORT_LEVEL = frozenset({"export"})
"""The modules of an op's package that an upstream report reads (``fuzz.export``)."""

LAYER_OF = {package: index for index, layer in enumerate(LAYERS) for package in layer}


def package_of(module: str) -> str:
    """The unit of layering a module belongs to: ``fuzz.<name>`` for the engine's packages and modules, else its
    top-level package. An op's package is a slice through three layers: its engine-level modules (``strategies``,
    ``bad_inputs``, ``tolerance``, ``testing``) belong to ``fuzz.engine``, its campaign-level ones
    (``CAMPAIGN_LEVEL``) to ``fuzz.campaign``, its report's (``EXPORT_LEVEL``) to ``fuzz.export``; the registry and
    each op's ``__init__`` (its ``Op``) to ``fuzz.ops``."""
    parts = module.split(".")
    if parts[:2] == ["fuzz", "ops"] and len(parts) > 3:
        if parts[3] in EXPORT_LEVEL:
            return "fuzz.export"
        return "fuzz.campaign" if parts[3] in CAMPAIGN_LEVEL else "fuzz.engine"
    return ".".join(parts[:2]) if parts[0] == "fuzz" and len(parts) > 1 else parts[0]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """Every product module ``path`` imports (``from fuzz import environment`` is ``fuzz.environment``)."""
    module = module_name(path)
    return imports_of(module, path.read_text(), is_package=path.name == "__init__.py")


def imports_of(module: str, source: str, *, is_package: bool = False) -> set[str]:
    """Every product module the source of ``module`` imports, relative imports resolved."""
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.update(f"{base}.{alias.name}" if base in PRODUCT else base for alias in node.names)
    return {name for name in found if name.split(".")[0] in PRODUCT}


SOURCES = sorted(p for top in PRODUCT for p in (ROOT / top).rglob("*.py"))


def test_every_package_has_a_layer() -> None:
    packages = {package_of(module_name(p)) for p in SOURCES} - {"fuzz"}
    assert packages <= set(LAYER_OF), f"packages without a layer in LAYERS: {sorted(packages - set(LAYER_OF))}"


def upward(module: str, targets: set[str]) -> list[str]:
    """The imports of ``module`` that reach its own layer (another package there) or a layer above."""
    source = package_of(module)
    return sorted(target for target in targets
                  if (package := package_of(target)) not in (source, "fuzz") and LAYER_OF[package] >= LAYER_OF[source])


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_go_down_the_stack(path: Path) -> None:
    module = module_name(path)
    if package_of(module) == "fuzz":
        return
    wrong = upward(module, imported(path))
    assert not wrong, f"{module} (layer {LAYER_OF[package_of(module)]}) imports from its own layer or above: {wrong}"


def test_the_reader_resolves_every_kind_of_import() -> None:
    probe = ROOT / "fuzz" / "backends" / "base.py"  # the chain model is imported for type checking only
    assert {"fuzz.model.case", "fuzz.model.chain"} <= imported(probe)
    assert "oracles.causal_conv.validation" in imported(ROOT / "oracles" / "causal_conv" / "prefix.py")
    assert imports_of("fuzz.cli", "from fuzz import environment") == {"fuzz.environment"}


def test_the_old_cycle_is_refused() -> None:
    """The backends once imported the case model from the engine, which imports the backends."""
    assert upward("fuzz.backends.base", imports_of("fuzz.backends.base", "from fuzz.engine.case import Case")) == \
        ["fuzz.engine.case"]
    assert upward("fuzz.model.findings", imports_of("fuzz.model.findings", "import fuzz.backends")) == ["fuzz.backends"]


def test_an_ops_package_spans_the_engine_and_the_campaign() -> None:
    """What an op's strategies draw may not depend on how a campaign counts or schedules them; the registry,
    beneath the engine, imports no op's parts (it finds them by name, when asked)."""
    strategies = "fuzz.ops.linear_attention.strategies"
    assert upward(strategies, imports_of(strategies, "from fuzz.ops.linear_attention.coverage import AXES")) == \
        ["fuzz.ops.linear_attention.coverage"]
    swarm = "fuzz.ops.causal_conv.swarm"
    assert upward(swarm, imports_of(swarm, "from fuzz.ops.causal_conv.strategies import ConvLimits")) == []
    registry = "fuzz.ops.registry"
    assert upward(registry, imports_of(registry, "from fuzz.engine.op_testing import for_op")) == \
        ["fuzz.engine.op_testing"]
