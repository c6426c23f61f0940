"""What a pipeline of the token loop costs lavapipe to compile, Mesa's cache off, with the template's barriers as they
are and removed (the pipelines without them are wrong and only timed): the first call of each head size against the
second, CPU seconds of this process (lavapipe compiles at the first dispatch):

    .venv/bin/python docs/results/2026-12-03-first-run-bounds/barrier_compile.py wgpu 16,64,128
"""

import os
import resource
import sys

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
    implementation, sizes = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]
    base = template_source(TEMPLATES[False])
    variants = {
        "as is": base,
        "no barrier in the reduction": base.replace("    partials[base + g] = part;\n    workgroupBarrier();",
                                                    "    partials[base + g] = part;"),
        "no barriers": base.replace("workgroupBarrier();", "").replace("storageBarrier();", ""),
    }
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 2)).astype(np.float32)
    linear_attention(x, x, x, q_num_heads=1, kv_num_heads=1, update_rule="linear",
                     options=KernelOptions(implementation=implementation))  # the device, outside the figures
    for d in sizes:
        for name, template in variants.items():
            x = rng.standard_normal((1, 2, d)).astype(np.float32)
            options = KernelOptions(implementation=implementation, template=template)
            c0 = cpu()
            linear_attention(x, x, x, q_num_heads=1, kv_num_heads=1, update_rule="linear", options=options)
            c1 = cpu()
            linear_attention(x, x, x, q_num_heads=1, kv_num_heads=1, update_rule="linear", options=options)
            c2 = cpu()
            print(f"d={d} {name}: first call {c1 - c0:.2f} s, second {1000 * (c2 - c1):.1f} ms", flush=True)


if __name__ == "__main__":
    main()
