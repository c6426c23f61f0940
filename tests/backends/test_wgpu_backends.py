"""The WGSL kernel backends: which kernel path each takes on the adapter it has."""

from __future__ import annotations

import pytest
from support.sampling import sample

from fuzz.backends import Unsupported
from fuzz.engine.op_testing import for_op
from fuzz.implementation import Implementation
from fuzz.model.ops import OPS
from kernels.options import WIDE_ROW_GROUPS
from kernels.shader import MAX_ROW_GROUPS


@pytest.mark.parametrize(("name", "on_software"), [("wgpu", "workgroup"), ("wgpu-dawn", "auto")])
def test_kernel_path_follows_the_adapter(name: str, on_software: str, need) -> None:
    """On a software adapter wgpu-native takes the workgroup reduction (its subgroup kernel compiles 6x
    slower there) and Dawn the subgroup one, so a campaign on a CPU runs both; on a GPU both take ``auto``."""
    backend = need(name)
    expected = on_software if backend.kernel.device.software else "auto"
    assert backend.options.path == expected and backend.kernel.options.path == expected
    assert any("kernel path" in note for note in backend.capabilities().notes) == (expected != "auto")


@pytest.mark.parametrize("software", [True, False])
def test_the_wide_backend_takes_the_other_kind_of_adapters_geometry(software: bool, need) -> None:
    """``wgpu-wide`` runs a GPU's geometry on a software adapter and a software adapter's on a GPU, so that a
    campaign on either compiles both (on a GPU its default is already the wide one)."""
    backend = need("wgpu-wide")
    options = backend.make_kernel(software).options
    assert (options.path, options.max_row_groups) == (("auto", WIDE_ROW_GROUPS) if software
                                                      else ("workgroup", MAX_ROW_GROUPS))


@pytest.mark.parametrize(("name", "module", "op"), [
    ("wgpu", "wgpu", "LinearAttention"), ("wgpu-dawn", "wgpudawn", "LinearAttention"),
    ("wgpu-conv", "wgpu", "CausalConvWithState"), ("wgpu-conv-dawn", "wgpudawn", "CausalConvWithState")])
def test_a_kernel_backend_says_what_it_runs(name: str, module: str, op: str, need) -> None:
    """``Backend.implementation`` (the key of known issues) is the WebGPU package and its version, as for every
    backend; the WebGPU implementation the kernel runs on is ``webgpu``, a name of its own; the op is its kernel's,
    and a case of another op is ``Unsupported``, never run."""
    backend = need(name)
    assert isinstance(backend.implementation, Implementation)
    assert backend.implementation == backend.capabilities().implementation
    assert backend.implementation.name == module and backend.options.implementation == backend.webgpu
    assert backend.capabilities().ops == (op,)
    other = next(o for o in OPS.values() if o.name != op)
    case = sample(for_op(other).cases(for_op(other).preset("ci")), 1)[0]
    with pytest.raises(Unsupported, match=f"runs {op} only"):
        backend.run(case)
