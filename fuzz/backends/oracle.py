"""The float64 NumPy oracle as a backend: the contract of every op, for comparison with everything else."""

from __future__ import annotations

import numpy as np

import oracles
from fuzz.backends.base import Backend, Capabilities, Rejected, Unsupported
from fuzz.model.case import Case
from fuzz.model.ops import ALL_OPS


class OracleBackend(Backend):
    """Runs the case's op's oracle (``oracles.linear_attention``, ``oracles.causal_conv.causal_conv_with_state``,
    ``oracles.gated_delta_net``); invalid input becomes a ``Rejected`` with its message."""

    name = "oracle"

    def capabilities(self) -> Capabilities:
        return Capabilities(
            dtypes=("float32", "float16"),
            window="native",
            aliasing=False,
            device="host CPU (float64 NumPy)",
            versions={"numpy": np.__version__},
            ops=tuple(ALL_OPS),
        )

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        if not case.op.windowed:
            raise Unsupported(self.name, f"{case.op.name} has the outputs {', '.join(case.op.outputs)}, not "
                              "(output, present_state): run_outputs returns them")
        output, state = self._oracle(case)
        return output, state

    def run_outputs(self, case: Case) -> tuple[np.ndarray, ...]:
        """``run``'s pair for a windowed op (so that a subclass that changes ``run`` changes both), else every
        output of the op's oracle."""
        return self.run(case) if case.op.windowed else self._oracle(case)

    def _oracle(self, case: Case) -> tuple[np.ndarray, ...]:
        try:
            return case.op.oracle(**case.kwargs())
        except oracles.ValidationError as err:
            raise Rejected(self.name, str(err)) from err
