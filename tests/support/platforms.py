"""What the tests of the kernels on other platforms than lavapipe share: a backend that must be there, and a sample
of cases checked against the oracle."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fuzz.backends import Backend, Unsupported
from fuzz.engine.compare import assert_agrees_with_oracle
from fuzz.engine.op_testing import for_op
from fuzz.model.ops import Op
from support.sampling import sample


def required(backend: Callable[[str], Backend | str], platform: str) -> Callable[[str], Backend]:
    """``get(name)``: the backend from the ``backend`` fixture, which must be available where ``platform`` (what
    it needs, in words) is here: a platform that is here but gives no backend is a failure, not a skip."""

    def get(name: str) -> Backend:
        found = backend(name)
        assert not isinstance(found, str), f"{platform} is here, yet {found}"
        return found

    return get


def check_ci_sample(backend: Backend, op: Op, count: int = 8) -> None:
    """``count`` cases of ``op``'s ``ci`` limits agree with the oracle; those the backend cannot run are float16
    where it lacks ``shader-f16``, or the convolution's ``ndim`` 2 and 3 (as on every adapter)."""
    testing = for_op(op)
    ran = 0
    for case in sample(testing.cases(testing.preset("ci")), count):
        try:
            result = backend.run(case)
        except Unsupported as err:
            lacks_f16 = case.dtype == np.float16 and "float16" not in backend.capabilities().dtypes
            assert ("shader-f16" in err.message and lacks_f16) or "ndim" in err.message, (case.summary(), err.message)
            continue
        assert_agrees_with_oracle(case, result, label=backend.name)
        ran += 1
    assert ran, "no case of the sample ran"
