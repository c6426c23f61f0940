"""The kernel against each other path of one bench run, round by round: ``python paired.py RESULTS.json [BASE]``.

Every series of a ``fuzz.bench`` run is measured in the same interleaved rounds, so the ratio of two paths'
round medians pairs samples taken side by side. For each configuration this prints the mean of round medians of
``auto`` (the kernel under test) and of the base path (default ``template:old-kernel``), their ratio and a 95%
bootstrap interval of that ratio over whole rounds.
"""

import json
import sys
from pathlib import Path

import numpy as np

RESAMPLES = 10000


def ratio_interval(ours: np.ndarray, base: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """A 95% bootstrap interval of mean(ours) / mean(base), resampling the same rounds for both."""
    picks = rng.integers(0, len(ours), size=(RESAMPLES, len(ours)))
    ratios = ours[picks].mean(axis=1) / base[picks].mean(axis=1)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return float(low), float(high)


def main(path: str, base: str = "template:old-kernel") -> None:
    configurations = json.loads(Path(path).read_text())["configurations"]
    rounds = {(c["path"], c["dtype"], c["shape"], c["T"], c["W"]): np.array(c["timing"]["repetition_p50_us"])
              for c in configurations}
    rng = np.random.default_rng(0)
    print(f"| dtype | shape | T | W | auto us | {base} us | auto / base [95%] |")
    print("|---|---|---|---|---:|---:|---|")
    for (name, dtype, shape, seq_len, window), ours in rounds.items():
        theirs = rounds.get((base, dtype, shape, seq_len, window))
        if name != "auto" or theirs is None:
            continue
        low, high = ratio_interval(ours, theirs, rng)
        print(f"| {dtype} | {shape} | {seq_len} | {window} | {ours.mean():.1f} | {theirs.mean():.1f} | "
              f"{ours.mean() / theirs.mean():.3f} [{low:.3f}, {high:.3f}] |")


if __name__ == "__main__":
    main(*sys.argv[1:])
