"""Deliberately broken copies of the CausalConvWithState kernel (``kernels/causal_conv.wgsl``), as backends.

Each mutant changes one line of the template and is a ``wgpu-conv`` backend compiling it (importable as
``support.conv_kernel_mutants:NAME`` by campaign workers too, with ``tests`` on ``PYTHONPATH``). Two break the
window where any call with one shows it; one breaks only calls of more than 64 rows (``B * C``: more than one
workgroup), which the fixed campaign slice of the op never draws and the swarm's medium and large units do.
"""

from __future__ import annotations

from dataclasses import dataclass

from fuzz.backends.wgpu_conv import WgpuConvBackend
from kernels.causal_conv import TEMPLATE, WORKGROUP_SIZE
from kernels.shader import kernel_file
from support.kernel_mutants import patched


@dataclass(frozen=True)
class ConvPatch:
    """One line of the conv kernel replaced; ``region`` says where the mutant is wrong."""

    name: str
    region: str
    old: str
    new: str

    def template(self) -> str:
        return patched(kernel_file(TEMPLATE), self.old, self.new, self.name)


SLOT_ONE_SHORT = ConvPatch(
    "slot-one-short", "W >= 1: slot j holds the state after T - W + j - 1 positions, one short",
    "let after = T + j + 1u - slots;", "let after = T + j - slots;")
SEED_AT_SLOT_ZERO = ConvPatch(
    "seed-at-slot-zero", "W >= 2 with a seed slot at an offset the device cannot bind: slot 0 is read as the seed",
    "let e = params.seed_offset + element(b, i, c, S);", "let e = element(b, i, c, S);")
ONE_WORKGROUP = ConvPatch(
    "one-workgroup", f"B * C > {WORKGROUP_SIZE}: rows past the first workgroup compute the first workgroup's rows",
    "let invocation = gid.y * groups.x * WG + gid.x;", "let invocation = gid.y * groups.x * WG + gid.x % WG;")


class ConvKernelMutant(WgpuConvBackend):
    """The conv kernel on wgpu-native with ``patch`` applied."""

    patch: ConvPatch

    def __init__(self, adapter: str | None = None) -> None:
        self.name = f"mutant-{self.patch.name}"
        self.template = self.patch.template()
        super().__init__(adapter)


class SlotOneShort(ConvKernelMutant):
    patch = SLOT_ONE_SHORT


class SeedAtSlotZero(ConvKernelMutant):
    patch = SEED_AT_SLOT_ZERO


class OneWorkgroup(ConvKernelMutant):
    patch = ONE_WORKGROUP
