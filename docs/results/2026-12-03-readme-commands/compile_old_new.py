"""The kernel's first call at several head sizes, the token loop and the chunked prefill, with an older template
against the current one, in one process with Mesa's cache off: CPU seconds of each first call (each compiles its
pipeline), summed per template:

    git show 5fa4611:kernels/linear_attention.wgsl > /tmp/old-kernel.wgsl
    .venv/bin/python docs/results/2026-12-03-readme-commands/compile_old_new.py wgpu /tmp/old-kernel.wgsl
"""

import os
import resource
import sys
from pathlib import Path

os.environ["MESA_SHADER_CACHE_DISABLE"] = "true"

from fuzz import environment

environment.prepare()

import numpy as np  # noqa: E402

from kernels.linear_attention import linear_attention  # noqa: E402
from kernels.options import KernelOptions  # noqa: E402
from kernels.shader import TEMPLATES, template_source  # noqa: E402


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    implementation, old_path = sys.argv[1], sys.argv[2]
    templates = {"old": Path(old_path).read_text(), "new": template_source(TEMPLATES[False])}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 2)).astype(np.float32)
    linear_attention(x, x, x, q_num_heads=1, kv_num_heads=1, update_rule="linear",
                     options=KernelOptions(implementation=implementation))  # the device, outside the figures
    total = dict.fromkeys(templates, 0.0)
    for d in (4, 8, 16, 64, 128):
        for prefill in ("token", "chunked"):
            for name, template in templates.items():
                x = rng.standard_normal((1, 20, d)).astype(np.float32)
                options = KernelOptions(implementation=implementation, template=template, prefill=prefill)
                c0 = cpu()
                linear_attention(x, x, x, q_num_heads=1, kv_num_heads=1, update_rule="linear", options=options)
                spent = cpu() - c0
                total[name] += spent
                print(f"d={d} {prefill} {name}: {spent:.2f} s", flush=True)
    print({name: round(seconds, 1) for name, seconds in total.items()})


if __name__ == "__main__":
    main()
