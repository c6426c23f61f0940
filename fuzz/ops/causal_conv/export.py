"""CausalConvWithState in an upstream report (``EXPORT``): its axes, layouts, sizes and tolerance depth."""

from __future__ import annotations

from typing import Any

from fuzz.export.op_export import OpExport
from fuzz.model.case import Case


def _axis_names(d: Any) -> dict[str, list[str]]:
    if d.channels_last:
        channels = ["channel"] if len(d.channel_shape) == 1 else [f"channel axis {i + 1}" for i in
                                                                  range(len(d.channel_shape))]
        output, state = ["batch", "position", *channels], ["batch", "state position", *channels]
    else:
        spatial = [f"spatial axis {i + 1}" for i in range(len(d.spatial))]
        output, state = ["batch", "channel", *spatial, "position"], ["batch", "channel", *spatial, "state position"]
    return {"output": output, "present_state": ["slot", *state] if d.state_window else state}


def _layouts(d: Any) -> dict[str, str]:
    slot = "(B, L, d_1, ..., d_n)" if d.channels_last else "(B, C, spatial..., L)"
    return {"input": "(B, T, d_1, ..., d_n)" if d.channels_last else "(B, C, spatial..., T)",
            "weight": "(C, 1, k_1, ..., k_ndim)", "bias": "(C,)",
            "past_state": f"(W, {slot[1:]}" if d.state_window else slot}


def _sizes(d: Any) -> str:
    spatial = f", spatial sizes {d.spatial}" if d.spatial else ""
    return (f"Sizes: B={d.batch}, T={d.seq_len}, C={d.channels}{spatial}, kernel {d.kernel}, "
            f"dilation {d.dilation}, state length L=(k-1)*dilation={d.state_length}, W={d.state_window}.")


def _symbolic_shapes(case: Case) -> dict[str, tuple[str, ...]]:
    """The output has the input's rank; the state, the past state's if any, else the input's and a window axis for
    ``W > 0``."""
    rank = case.inputs["input"].ndim
    past = case.inputs.get("past_state")
    state_rank = past.ndim if past is not None else rank + (1 if case.state_window else 0)
    return {"output": tuple(f"d{i}" for i in range(rank)), "present_state": tuple(f"s{i}" for i in range(state_rank))}


EXPORT = OpExport(
    axis_names=_axis_names,
    layouts=_layouts,
    sizes=_sizes,
    depth_words=lambda depth: f"kernel taps + 2 = {depth} for output, 0 for present_state (a copy)",
    symbolic_shapes=_symbolic_shapes,
)
