"""How LinearAttention is tested: its strategies, bad inputs and exact answer; its coverage buckets and swarm."""

from fuzz.model.ops import LINEAR_ATTENTION as OP

__all__ = ["OP"]
