"""What every op's swarm shares: the builds in worker processes are the backends' one list; a kernel in a browser
checks only the cases that cross to a page cheaply."""

from __future__ import annotations

from fuzz.backends.registry import WORKER_BUILDS
from fuzz.campaign import swarm
from fuzz.corpus.known_issues import WORKER_BUILD_STACKS


def test_the_swarm_and_the_catalogue_name_the_same_worker_builds() -> None:
    assert set(swarm.WORKER_BUILD_SHARES) == set(WORKER_BUILDS) == set(WORKER_BUILD_STACKS)
    assert set(WORKER_BUILDS) < set(swarm.ORT_BUILDS)


def test_a_kernel_in_a_browser_checks_cases_only_up_to_what_crosses_to_a_worker_cheaply() -> None:
    """The browser's kernels ship every call's tensors to a page, as the ORT builds in worker processes do: past
    ``REMOTE_ELEMENTS`` input elements they sit the case out, while SwiftShader's kernel (no page) takes it."""
    from fuzz.ops.linear_attention.strategies import Layout, Numerics, Shape, build_case

    def case(seq_len: int):
        shape = Shape(batch=1, seq_len=seq_len, q_heads=8, kv_heads=8, key_heads=8, d_k=64, d_v=64, state_window=0)
        layout = Layout(update_rule="linear", dtype="float32", decay_per_row=None, beta_shared=None, has_past=False,
                        scale=None)
        return build_case(shape, layout, Numerics("unit", "normalised", "moderate", "uniform", 0))

    small, large = case(1), case(swarm.REMOTE_ELEMENTS // (3 * 8 * 64) + 1)
    assert sum(x.size for x in large.inputs.values()) > swarm.REMOTE_ELEMENTS
    assert swarm.takes_part(swarm.IN_A_PAGE[0], small) and not swarm.takes_part(swarm.IN_A_PAGE[0], large)
    assert swarm.takes_part("wgpu-swiftshader", large)
