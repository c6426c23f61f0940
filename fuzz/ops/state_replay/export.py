"""GatedDeltaNetStateReplay has no upstream report: no released ONNX Runtime registers a kernel for it."""

REFUSAL = (
    "GatedDeltaNetStateReplay has no kernel in any released ONNX Runtime (1.31.1 says it 'is not a registered "
    "function/op'), so there is no build to report against; `lafuzz repro ENTRY` re-checks the entry"
)
