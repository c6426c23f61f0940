"""The gate verdicts of several full bench runs side by side: ``python verdicts.py RUN1/results.json RUN2/...``.

Prints every gate whose verdict is not PASS in some run, or differs between runs, with each run's verdict, value
and 95% interval; then how many gates give the same verdict in every run, and each run's counts.
"""

import json
import sys
from collections import Counter
from pathlib import Path


def main(paths: list[str]) -> None:
    runs = [{(g["name"], g["config"]): g for g in json.loads(Path(p).read_text())["gates"]} for p in paths]
    keys = list(runs[0])
    print("gates whose verdict is not PASS in some run, or differs between runs:")
    same = 0
    for key in keys:
        gates = [run.get(key) for run in runs]
        verdicts = {g["verdict"] if g else "absent" for g in gates}
        same += len(verdicts) == 1
        if verdicts != {"PASS"}:
            name, config = key
            where = config.replace(" B=1 H=32 dk=128 dv=128 auto", "")
            cells = "".join(f"  {g['verdict'][:5]:8} {g['measured_text']:>8} {g['interval_text']:>18}"
                            if g else "  absent" for g in gates)
            print(f"{name:24} {where:14}{cells}")
    print(f"identical verdicts in all {len(runs)}: {same} of {len(keys)}; differing: {len(keys) - same}")
    for number, run in enumerate(runs, 1):
        print(f"run {number}: {dict(Counter(g['verdict'] for g in run.values()))}")


if __name__ == "__main__":
    main(sys.argv[1:])
