"""The ring-staged store variants give the kernel's bits: ``python .../same_bits.py build/store-ring8.wgsl ...``.

For each template and dtype, calls at the benchmark's reference shape (fp16 and fp32; T = 1, 5, 8 and 64;
W = 0, 4 and 8, separate and aliased bindings) run through the kernel as it is and through the template on the
same device; every output and present state must be bitwise equal. Prints one line per template and dtype; a
dtype the device cannot run (float16 without ``shader-f16``) is printed as not run, with the reason.
"""

import sys
from pathlib import Path

import numpy as np

from fuzz import environment
from fuzz.bench.workload import REFERENCE_SHAPE, attributes, host_inputs
from kernels.device import KernelUnsupported
from kernels.linear_attention import linear_attention
from kernels.options import KernelOptions

environment.prepare()
CALLS = [(t, w) for t in (1, 5, 8) for w in (0, 4, 8)] + [(64, 0), (64, 8)]
for name in sys.argv[1:]:
    variant = KernelOptions(template=Path(name).read_text())
    for dtype in ("float16", "float32"):
        checked, differ = 0, []
        try:
            for seq_len, window in CALLS:
                inputs = host_inputs(REFERENCE_SHAPE, seq_len, window, dtype, seed=seq_len + 10 * window)
                for aliased in (False, True):
                    run = {**inputs, **attributes(REFERENCE_SHAPE, window), "aliased": aliased}
                    ours = linear_attention(**run)
                    theirs = linear_attention(**run, options=variant)
                    checked += 1
                    pairs = zip(ours, theirs, strict=True)
                    if not all(np.array_equal(a.view(np.uint8), b.view(np.uint8)) for a, b in pairs):
                        differ.append((seq_len, window, aliased))
        except KernelUnsupported as err:
            print(f"{name} {dtype}: not run: {str(err).splitlines()[0][:160]}", flush=True)
            continue
        print(f"{name} {dtype}: {checked - len(differ)} of {checked} calls bitwise equal"
              + (f"; differ: {differ}" if differ else ""), flush=True)
