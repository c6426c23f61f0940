"""lafuzz as a pytest plugin: LinearAttention's correctness plan against your backends, in any repository.

Installed with the package (the ``pytest11`` entry point ``fuzz.pytest_plugin``, named as the
module so that ``-p fuzz.pytest_plugin`` or a conftest's ``pytest_plugins`` never registers it twice;
``-p no:fuzz.pytest_plugin`` turns it off). It gives:

- the suite's Hypothesis profiles ``ci``, ``dev`` and ``campaign`` (``fuzz.campaign.profiles``),
  registered when the plugin loads, so the standard ``--hypothesis-profile=NAME`` selects one;
- ``--lafuzz-backends=A,B`` (registry names or ``module:Class``): every property of the differential
  engine becomes a test ``lafuzz::<property>[A,B]`` run on those backends together;
  ``--lafuzz-properties`` picks properties, ``--lafuzz-limits`` the case sizes (the names of
  ``lafuzz campaign --limits``; default ``ci``), ``--lafuzz-out`` where failures are saved
  (``fuzz.pytest_plugin.plan`` says what a test does). The tests run under the Hypothesis profile in
  force, and under lafuzz's ``ci`` where nothing chose one (Hypothesis's default deadline of 200 ms
  would fail a first shader compile);
- a profile's database on a server that goes away does not fail the plan's tests: a directory under
  ``--lafuzz-out`` stands in until it is back (``fuzz.pytest_plugin.database``);
- the fixture ``lafuzz_backends``: the backends ``--lafuzz-backends`` selected, for a project's own
  tests (skipped with the reason when one is unavailable here), and ``lafuzz_backend_pool``, the
  session's ``BackendPool`` behind it.

Without ``--lafuzz-backends`` nothing is collected: a repository's own tests are unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from fuzz.campaign import profiles
from fuzz.pytest_plugin.options import BACKENDS, PlanOptions, add_options

if TYPE_CHECKING:
    from fuzz.backends import Backend
    from fuzz.campaign.database import FallbackDatabase
    from fuzz.pytest_plugin.pool import BackendPool

profiles.register()
# The engine and the backends are imported only when used: every pytest run in an environment where lafuzz
# is installed loads this module.

_OPTIONS = pytest.StashKey["PlanOptions | None"]()
_POOL = pytest.StashKey["BackendPool"]()
_DATABASE: pytest.StashKey[FallbackDatabase | None] = pytest.StashKey()
HYPOTHESIS_DEFAULT = "default"
"""Hypothesis's own profile, in force when neither the project nor ``--hypothesis-profile`` chose one."""


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def _pool(config: pytest.Config) -> BackendPool:
    """The session's backend pool, made on first use."""
    if _POOL not in config.stash:
        from fuzz.pytest_plugin.pool import BackendPool

        config.stash[_POOL] = BackendPool()
    return config.stash[_POOL]


def pytest_configure(config: pytest.Config) -> None:
    options = PlanOptions.from_config(config)
    if options is not None:
        from fuzz import environment

        environment.prepare()
    config.stash[_OPTIONS] = options


def pytest_unconfigure(config: pytest.Config) -> None:
    if _POOL in config.stash:
        config.stash[_POOL].close()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--lafuzz-backends``, add the plan's tests (first, so ``-k``, ``-m`` and Hypothesis's own
    marker see them)."""
    options = config.stash[_OPTIONS]
    if options is None:
        return
    from fuzz.pytest_plugin.database import with_stand_in
    from fuzz.pytest_plugin.plan import PLAN_NODE, Plan

    chosen = settings() if settings.get_current_profile_name() != HYPOTHESIS_DEFAULT else profiles.get("ci")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    chosen, config.stash[_DATABASE] = with_stand_in(
        chosen, options.corpus.parent, reporter.write_line if reporter is not None else print)
    plan = Plan.from_parent(
        session, name=PLAN_NODE, nodeid=PLAN_NODE, options=options, pool=_pool(config), settings=chosen
    )
    items.extend(session.genitems(plan))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how long the plan's example database was unreachable, if it was."""
    from fuzz.pytest_plugin.database import outage_line

    if line := outage_line(terminalreporter.config.stash.get(_DATABASE, None)):
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def lafuzz_backend_pool(pytestconfig: pytest.Config) -> BackendPool:
    """The session's backends, each created once: ``pool.get(spec, isolate=False)`` gives the backend or
    why it is unavailable, ``pool.need(specs)`` the backends or a skip."""
    return _pool(pytestconfig)


@pytest.fixture(scope="session")
def lafuzz_backends(pytestconfig: pytest.Config, lafuzz_backend_pool: BackendPool) -> list[Backend]:
    """The backends ``--lafuzz-backends`` selected, created once; skips when the option is absent or a
    backend is unavailable here."""
    options = pytestconfig.stash[_OPTIONS]
    if options is None:
        pytest.skip(f"no {BACKENDS} given")
    return lafuzz_backend_pool.need(options.backends)
