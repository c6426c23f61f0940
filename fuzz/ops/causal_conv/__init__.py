"""How CausalConvWithState is tested: its strategies, bad inputs and exact answer; its coverage buckets and swarm."""

from fuzz.model.ops import CAUSAL_CONV as OP

__all__ = ["OP"]
