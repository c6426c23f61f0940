"""A backend lost mid-campaign (its device gone) ends the unit and is named, never a finding or a traceback."""

from __future__ import annotations

import numpy as np
from hypothesis import settings

from fuzz.backends import Lost
from fuzz.backends.oracle import OracleBackend
from fuzz.campaign import profiles
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.unit import run_unit
from fuzz.model.case import Case
from fuzz.ops.linear_attention.strategies import Limits


class LosesItsDevice(OracleBackend):
    """The oracle for three cases, then ``Lost``: what an isolated backend raises when it cannot restart."""

    name = "loses-its-device"

    def __init__(self) -> None:
        super().__init__()
        self.left = 3

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        self.left -= 1
        if self.left < 0:
            raise Lost(self.name, f"{self.name}: a minimal run failed: [Device] is lost")
        return super().run(case)


def test_a_lost_backend_ends_the_unit_without_a_finding(tmp_path):
    result = run_unit(WorkUnit("backends-agree", 0, 0), [OracleBackend(), LosesItsDevice()], limits=Limits.ci(),
                      settings=settings(profiles.get("ci"), max_examples=20, database=None), save_dir=tmp_path)
    assert result.finding is None, result.finding.report
    assert "[Device] is lost" in result.lost["loses-its-device"]
    assert 3 <= result.examples < 20, result.examples
