"""The findings matrix: each way a build can answer a finding's case gets its verdict and the exit status an
exported repro gives for it; the documented findings of the corpus are its rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.ort_cases import fixed_case

from fuzz.backends import Crashed, Rejected, TimedOut, Unsupported
from fuzz.backends.oracle import OracleBackend
from fuzz.export.matrix import (
    ACCEPTED,
    CANNOT_LOAD,
    CRASH,
    FIXED,
    HANG,
    REFUSED,
    WRONG,
    documented_findings,
    findings_matrix,
    judge,
)

ROOT = Path(__file__).resolve().parents[2]


class _Answers(OracleBackend):
    """The oracle rounded to the case's type, or a fixed non-result, or zeros where the oracle returns values."""

    def __init__(self, name: str, raises: Exception | None = None, zeros: bool = False) -> None:
        super().__init__()
        self.name, self.raises, self.zeros = name, raises, zeros

    def run(self, case):
        if self.raises is not None:
            raise self.raises
        output, state = (x.astype(case.dtype) for x in super().run(case))
        return (np.zeros_like(output) if self.zeros else output), state


VALID = fixed_case("delta", shared_beta=True)
INVALID = VALID.with_attrs(kv_num_heads=0)


@pytest.mark.parametrize(("backend", "case", "verdict", "status", "detail"), [
    (_Answers("good"), VALID, FIXED, 0, ""),
    (_Answers("zeros", zeros=True), VALID, WRONG, 1, "all zeros"),
    (_Answers("refuses", Rejected("refuses", "no")), VALID, REFUSED, 1, "no"),
    (_Answers("refuses", Rejected("refuses", "bad heads")), INVALID, REFUSED, 0, "bad heads"),
    (_Answers("dies", Crashed("dies", "worker 7 killed by SIGFPE (exit code -8)")), INVALID, CRASH, 1, "SIGFPE"),
    (_Answers("traps", Crashed("traps", "wasm trap (divide by zero) after 0.3 s")), INVALID, CRASH, 1,
     "wasm trap: divide by zero"),
    (_Answers("hung", Crashed("hung", "refused, leaving the WebGPU backend unusable (Failed to execute "
                                      "'createBindGroup' on 'GPUDevice': ...) (worker 9 killed by SIGKILL)")),
     INVALID, CRASH, 1, "createBindGroup threw, the next run hangs"),
    (_Answers("hangs", TimedOut("hangs", "no answer within 60 s")), VALID, HANG, 1, "no answer"),
    (_Answers("old", Unsupported("old", "Unrecognized attribute: state_window")), VALID, CANNOT_LOAD, 2,
     "Unrecognized attribute"),
    (_Answers("lax", None), INVALID.with_attrs(kv_num_heads=2).with_inputs(decay=np.zeros((2, 5), np.float32)),
     ACCEPTED, 1, "returns values"),
])
def test_each_answer_has_its_verdict_and_exit_status(backend, case, verdict, status, detail):
    if verdict == ACCEPTED:  # the oracle validates: a build that does not is played by skipping validation
        backend.run = lambda c: (np.ones((2, 5, 32), np.float32), np.zeros((2, 2, 8, 8), np.float32))
    cell = judge(case, backend)
    assert (cell.verdict, cell.status) == (verdict, status)
    assert detail in cell.detail


def test_the_rows_are_the_documented_findings_and_the_table_has_a_cell_each():
    entries = documented_findings(ROOT / "corpus")
    assert {e.id for e in entries} >= {"ort-webgpu-shared-beta", "ort-webgpu-kv-heads-zero",
                                       "ort-webgpu-empty-sequence", "ort-webgpu-unvalidated-shapes"}
    matrix = findings_matrix(entries, [OracleBackend(), _Answers("good"), _Answers("zeros", zeros=True)])
    assert matrix.builds == ("good", "zeros")
    table = matrix.markdown().splitlines()
    assert len(table) == 2 + len(entries) and all(line.count("|") == 4 for line in table)
    shared_beta = next(line for line in table if line.startswith("| ort-webgpu-shared-beta"))
    assert "| fixed | wrong results" in shared_beta
