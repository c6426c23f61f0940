"""The pytest plugin from outside: a project of its own, with its own conftest.py and a backend of its
own, runs lafuzz's correctness plan with ``pytest --lafuzz-backends=...``.

The runs are subprocesses (``pytester.runpytest_subprocess``): Hypothesis's profiles are process-wide,
and a run must not change this suite's. ``-p fuzz.pytest_plugin`` loads the plugin of this checkout
(the installed entry point has the same name, so where it points here too nothing is loaded twice).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import is_hypothesis_test
from support.redis_server import redis_server

from fuzz.engine.properties import PROPERTIES

pytest_plugins = ["pytester"]

REPO = Path(__file__).parents[2]
PLUGIN = ["-p", "fuzz.pytest_plugin", "-p", "no:cacheprovider"]
QUIET_IN_PROCESS = ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
"""In this process the plugin is imported already, too late for pytest to rewrite its asserts."""

PROJECT_CONFTEST = """
from hypothesis import Phase, settings

settings.register_profile("tiny", max_examples=8, derandomize=True, database=None, deadline=None,
                          phases=[Phase.generate, Phase.shrink])
"""

PLANTED_BACKEND = """
from fuzz.backends.oracle import OracleBackend


class LateSlots(OracleBackend):
    '''The oracle with a planted bug: with a window of 2 or more, slot 0 is off by one.'''

    name = "late-slots"

    def run(self, case):
        output, state = super().run(case)
        if case.state_window >= 2:
            state = state.copy()
            state[0] += 1.0
        return output, state
"""

OWN_TEST = """
def test_own(lafuzz_backends):
    assert [b.name for b in lafuzz_backends][0] == "oracle"
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A repository of someone else's: its own conftest (a profile of its own), a backend and a test."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    pytester.makeconftest(PROJECT_CONFTEST)
    pytester.makepyfile(planted=PLANTED_BACKEND, test_own=OWN_TEST)
    return pytester


@pytest.mark.slow
def test_the_plan_passes_on_correct_backends(project: pytest.Pytester) -> None:
    """Every property is a test, on the oracle and ORT's CPU EP together, under the project's profile."""
    junit = project.path / "junit.xml"
    result = project.runpytest_subprocess(
        *PLUGIN, "-v", "-rs", "--hypothesis-profile=tiny", "--lafuzz-backends=oracle,ort-cpu", f"--junitxml={junit}"
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0, result.stdout.str()[-3000:]
    assert outcomes.get("passed", 0) + outcomes.get("skipped", 0) == len(PROPERTIES) + 1, outcomes
    result.stdout.fnmatch_lines(
        [
            "*test_own.py::test_own PASSED*",
            "*lafuzz::backends-agree[[]oracle,ort-cpu[]] PASSED*",
            "*lafuzz::device-chain[[]oracle,ort-cpu[]] SKIPPED*",
        ]
    )
    for line in result.stdout.lines:
        if line.startswith("SKIPPED"):
            assert "checked nothing on oracle,ort-cpu" in line, line  # a skip says why, per backend
    examples = [int(p.get("value")) for p in ElementTree.parse(junit).iter("property") if p.get("name") == "examples"]
    assert examples and max(examples) <= 8, examples  # the project's profile, not lafuzz's ci (25 examples)


@pytest.mark.slow
def test_a_broken_backend_fails_with_the_mismatch_report_and_a_working_repro_command(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        *PLUGIN,
        "--hypothesis-profile=tiny",
        "--lafuzz-backends=oracle,planted:LateSlots",
        "--lafuzz-properties=prefix-oracle,backends-agree",
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*lafuzz prefix-oracle[[]oracle,planted:LateSlots[]]*",
            "[[]prefix-oracle[]] present_state of late-slots vs prefix-oracle: value mismatch at slot 0, *",
            "  case: rule=* W=2 *",
            "reproduce: lafuzz repro * --backends planted:LateSlots",
        ]
    )
    command = next(line for line in result.stdout.lines if line.startswith("reproduce: lafuzz repro")).split()[3:]
    entry = Path(command[0])
    assert entry.is_relative_to(project.path / "lafuzz-out" / "corpus") and (entry / "entry.json").is_file()
    repro = subprocess.run(
        [sys.executable, "-m", "fuzz.cli", "repro", *command],
        cwd=project.path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert repro.returncode == 1 and "regression" in repro.stdout, repro.stdout + repro.stderr


SHARED_DATABASE_CONFTEST = """
from hypothesis import Phase, settings
from hypothesis.extra.redis import RedisExampleDatabase
from redis import Redis
from redis.backoff import NoBackoff
from redis.retry import Retry

shared = RedisExampleDatabase(Redis(port={port}, retry=Retry(NoBackoff(), 0)))
settings.register_profile("shared", max_examples=8, database=shared, deadline=None,
                          phases=[Phase.reuse, Phase.generate, Phase.shrink])
"""


@pytest.mark.slow
def test_a_profile_database_on_a_stopped_server_does_not_fail_the_plan(project: pytest.Pytester) -> None:
    """The profile's Redis database is gone: the plan's tests pass on a local stand-in, said once when lost and
    once in the session summary, with the failure of a broken backend still reported and saved."""
    with redis_server() as server:
        server.stop()
        project.makeconftest(SHARED_DATABASE_CONFTEST.format(port=server.port))
        result = project.runpytest_subprocess(
            *PLUGIN, "--hypothesis-profile=shared", "--lafuzz-backends=oracle,planted:LateSlots",
            "--lafuzz-properties=prefix-oracle,backends-agree",
        )
    result.assert_outcomes(passed=1, failed=2)
    text = result.stdout.str()
    assert text.count("cannot be reached") == 1 and "Connection refused" in text, text[-3000:]
    result.stdout.fnmatch_lines([f"lafuzz: the example database redis://localhost:{server.port}/0 was unreachable for "
                                 "* s in all (still unreachable at the end); *lafuzz-out/hypothesis-db stood in"])
    assert any((project.path / "lafuzz-out" / "hypothesis-db").iterdir())
    assert "Traceback" not in text and "ConnectionError" not in text.replace("(ConnectionError:", "")


@pytest.mark.slow
def test_without_its_options_the_plugin_collects_nothing_of_its_own(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(*PLUGIN, "--collect-only", "-q")
    assert result.ret == 0
    assert [line for line in result.stdout.lines if "::" in line] == ["test_own.py::test_own"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--lafuzz-backends=oracle,no-such-backend"], "--lafuzz-backends: unknown backend(s) no-such-backend"),
        (
            ["--lafuzz-backends=oracle", "--lafuzz-properties=no-such"],
            "--lafuzz-properties: unknown properties no-such",
        ),
        (["--lafuzz-backends=oracle", "--lafuzz-limits=huge"], "--lafuzz-limits: unknown limits 'huge'"),
        (["--lafuzz-limits=ci"], "--lafuzz-limits needs --lafuzz-backends"),
    ],
)
def test_a_bad_option_is_a_usage_error(project: pytest.Pytester, options: list[str], message: str) -> None:
    result = project.runpytest_inprocess(*PLUGIN, *QUIET_IN_PROCESS, *options)  # stops before Hypothesis is set up
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


@pytest.mark.slow
def test_an_unavailable_backend_skips_with_the_reason(project: pytest.Pytester) -> None:
    project.makepyfile(
        absent="""
from fuzz.backends import Unavailable
from fuzz.backends.base import Backend


class Absent(Backend):
    capabilities = run = None  # never reached: creation fails first

    def __init__(self):
        raise Unavailable('absent: no such device here')
"""
    )
    result = project.runpytest_subprocess(
        *PLUGIN, "-rs", "--lafuzz-backends=oracle,absent:Absent", "--lafuzz-properties=prefix-oracle"
    )
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["SKIPPED * backend unavailable here: absent: no such device here"])


def test_the_plan_tests_are_plain_hypothesis_tests(project: pytest.Pytester) -> None:
    """What HypoFuzz collects: ``pytest.Function`` items marked ``hypothesis``, taking no fixture, whose
    function runs by itself."""
    items, _ = project.inline_genitems(
        *PLUGIN,
        *QUIET_IN_PROCESS,
        "--lafuzz-backends=oracle",
        "--lafuzz-properties=prefix-oracle,leading-zeros",
    )
    plan = {item.nodeid: item for item in items if item.get_closest_marker("hypothesis")}
    assert list(plan) == ["lafuzz::prefix-oracle[oracle]", "lafuzz::leading-zeros[oracle]"]
    for item in plan.values():
        assert isinstance(item, pytest.Function) and is_hypothesis_test(item.obj) and item.fixturenames == []
        item.obj()  # the property holds for the oracle: the bare test passes, outside pytest's runner


def test_the_entry_point_is_declared_under_the_module_name() -> None:
    entry_points = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert entry_points == {"fuzz.pytest_plugin": "fuzz.pytest_plugin"}
    import fuzz.pytest_plugin as plugin

    assert callable(plugin.pytest_addoption) and callable(plugin.pytest_collection_modifyitems)
