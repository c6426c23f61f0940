"""The float64 NumPy oracle as a backend: the contract, for comparison with everything else."""

from __future__ import annotations

import numpy as np

import oracles
from fuzz.backends.base import Backend, Capabilities, Rejected
from fuzz.engine.case import Case


class OracleBackend(Backend):
    """Runs ``oracles.linear_attention``; invalid input becomes a ``Rejected`` with its message."""

    name = "oracle"

    def capabilities(self) -> Capabilities:
        return Capabilities(
            dtypes=("float32", "float16"),
            window="native",
            aliasing=False,
            device="host CPU (float64 NumPy)",
            versions={"numpy": np.__version__},
        )

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        try:
            return oracles.linear_attention(**case.kwargs())
        except oracles.ValidationError as err:
            raise Rejected(self.name, str(err)) from err
