"""Deliberately broken copies of the WGSL kernel, each wrong only outside the old default slice.

The old default campaign drew head sizes from {1, 3, 8}, the layouts (H_q, H_kv, n_k) of (1,1,1),
(2,1,1), (1,2,1) and (2,2,1), B <= 2 and T <= 9. Each mutant below changes one line of a template
(the token loop, ``kernels/linear_attention.wgsl``, with the blocks it shares, or the chunked
prefill, ``kernels/chunked.wgsl``) so that every call inside that slice still computes the right
bits, and calls in one region outside it do not, whichever reduction the pipeline compiles (the
workgroup and the subgroup reduction both take their tree's extent from ``TREE``). A mutant is a
``wgpu-dawn`` backend compiling the patched template (importable as ``support.kernel_mutants:NAME``
by campaign workers too): a token-loop mutant runs the token loop, a chunked-prefill mutant the
chunked prefill, for every call.
"""

from __future__ import annotations

from dataclasses import dataclass

from fuzz.backends.wgpu_kernel import WgpuDawnBackend
from kernels.options import WIDE_ROW_GROUPS
from kernels.shader import TEMPLATES, template_source


def patched(source: str, old: str, new: str, mutant: str) -> str:
    """``source`` with its one occurrence of the line ``old`` replaced by ``new`` (``mutant`` names the mutant)."""
    if source.count(old) != 1:
        raise ValueError(f"mutant {mutant}: the line to patch occurs {source.count(old)} times")
    return source.replace(old, new)


@dataclass(frozen=True)
class Patch:
    """One line of the kernel replaced; ``region`` says where the mutant is wrong."""

    name: str
    region: str
    old: str
    new: str
    chunked: bool = False
    """The line is in the chunked prefill's template (else in the token loop's or the prelude)."""
    wide: bool = False
    """The mutant compiles a GPU's geometry (up to 32 row groups, ``fuzz.backends.wgpu_kernel.WgpuWideBackend``):
    the line is in a section only that geometry keeps."""

    def template(self) -> str:
        return patched(template_source(TEMPLATES[self.chunked]), self.old, self.new, self.name)


PATCHES = (
    Patch("grouped-key-heads", "1 < n_k < H_kv: kv head h reads key head h mod n_k",
          "let kh = h / (HKV / params.key_heads);", "let kh = h % params.key_heads;"),
    Patch("gqa-interleaved", "GQA group >= 2 with H_kv >= 2: query heads interleaved over kv heads",
          "let qh = select(h / kv_per_q, h * group + g, standard);",
          "let qh = select(h / kv_per_q, g * HKV + h, standard);"),
    Patch("short-reduction", "d_k >= 9 (4 or more row groups): the reduction tree stops after one level",
          "const TREE: u32 = ROWG;", "const TREE: u32 = min(ROWG, 2u);"),
    Patch("stale-gate", "T >= 17 with a per-head decay: tokens from 16 on take the previous token's gate",
          "x.gate = f32(decay[bt * HKV + h]);",
          "x.gate = f32(decay[(bt - select(0u, 1u, bt % params.seq_len >= 16u)) * HKV + h]);"),
    Patch("batch-alias", "B >= 3: batch entries from 2 on read the inputs of batch entry 1",
          "let first = b * seq_len;", "let first = min(b, 1u) * seq_len;"),
    Patch("tile-stride", "d_v in two or more tiles of the workgroup: a tile starts half a tile too early",
          "let col = wg.x * COLS + lid.y;", "let col = wg.x * (COLS - COLS / 2u) + lid.y;"),
    Patch("chunk-offset", "T >= 17 in the chunked prefill: chunks after the first read their inputs one "
          "token early", "let first = b * seq_len + c0;", "let first = b * seq_len + c0 - select(0u, 1u, c0 > 0u);",
          chunked=True),
    Patch("staged-rows", "d_k > 64 on a GPU's geometry: the staged checkpoint stores rotate the rows of each row group",
          "let i = e / COLS;", "let i = (e / COLS / RPT) * RPT + (e / COLS + 1u) % RPT;", wide=True),
    Patch("paired-halves", "float16 with d_k > 64 and d_v % 8 == 0 on a GPU's geometry: the paired checkpoint stores "
          "swap the two vectors of each pair",
          "present_state[(tile + i * DV + c) / 2u] = vec4<u32>(packed(stage[at]), packed(stage[at + 1u]));",
          "present_state[(tile + i * DV + c) / 2u] = vec4<u32>(packed(stage[at + 1u]), packed(stage[at]));", wide=True),
)


class KernelMutant(WgpuDawnBackend):
    """The WGSL kernel on Dawn with ``patch`` applied."""

    patch: Patch

    def __init__(self, adapter: str | None = None) -> None:
        self.name = f"mutant-{self.patch.name}"
        if self.patch.chunked:
            self.chunk_template = self.patch.template()
            self.prefill = "chunked"
        else:
            self.template = self.patch.template()
        if self.patch.wide:
            self.software_row_groups = WIDE_ROW_GROUPS
        super().__init__(adapter)


def _mutant(class_name: str, patch: Patch) -> type[KernelMutant]:
    return type(class_name, (KernelMutant,), {"patch": patch, "__module__": __name__,
                                              "__doc__": f"The kernel on Dawn, wrong where {patch.region}."})


MUTANTS = tuple(_mutant(name, patch) for name, patch in zip(
    ("GroupedKeyHeads", "GqaInterleaved", "ShortReduction", "StaleGate", "BatchAlias", "TileStride",
     "ChunkOffset", "StagedRows", "PairedHalves"), PATCHES, strict=True))
"""One backend class per patch; campaign workers import them as ``support.kernel_mutants:GroupedKeyHeads``..."""
(GroupedKeyHeads, GqaInterleaved, ShortReduction, StaleGate, BatchAlias, TileStride, ChunkOffset, StagedRows,
 PairedHalves) = MUTANTS
