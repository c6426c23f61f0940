"""How GatedDeltaNetStateReplay is tested: its strategies, bad descriptors and exact answer; its coverage buckets
and swarm. A package of its own, as every op has: the registry finds a package by its one ``OP``, and the replay's
inputs (flat backings and a descriptor) share no strategy, rule or bucket with GatedDeltaNet's but the call whose
capsule it replays, which it draws through GatedDeltaNet's strategies."""

from fuzz.model.ops import GATED_DELTA_NET_STATE_REPLAY as OP

__all__ = ["OP"]
