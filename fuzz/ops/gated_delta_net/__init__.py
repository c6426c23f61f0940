"""How GatedDeltaNet is tested: its strategies, bad inputs and exact answer; its coverage buckets and swarm."""

from fuzz.model.ops import GATED_DELTA_NET as OP

__all__ = ["OP"]
