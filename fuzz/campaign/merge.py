"""Merging the outputs of several campaign shards into one corpus, one example database, one report.

Each input is a campaign output directory (``summary.json``, ``corpus/``, ``near-misses/``, usually
``hypothesis-db/``).
Findings are unioned by id (the same finding from two shards counts once, with both counts
added), totals are summed, and every database key a shard used is copied into the merged
database through Hypothesis's public database API.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from fuzz.campaign.database import copy_keys, open_database
from fuzz.campaign.report import write_report
from fuzz.campaign.summary import Summary
from fuzz.corpus import entry as corpus
from fuzz.corpus.candidates import DIRECTORY


def merge_runs(sources: list[Path], out: Path) -> Summary:
    """Merge campaign output directories into ``out``; returns the merged summary (``ValueError`` naming a
    source without a readable ``summary.json``)."""
    summaries = []
    for source in sources:
        path = Path(source) / "summary.json"
        if not path.is_file():
            raise ValueError(f"{source}: no summary.json (is it a campaign output directory?)")
        summaries.append(Summary.read(path))
    out = Path(out)
    corpus.merge([Path(s) / "corpus" for s in sources], out / "corpus")
    corpus.merge([Path(s) / DIRECTORY for s in sources], out / DIRECTORY)
    destination = open_database(str(out / "hypothesis-db"))
    copied: Counter = Counter()
    for source, summary in zip(sources, summaries, strict=True):
        local = Path(source) / "hypothesis-db"
        spec = str(local) if local.is_dir() else summary.config["database"]
        keys = [bytes.fromhex(k) for k in summary.database_keys]
        copied[str(source)] = copy_keys(open_database(spec), destination, keys)
    merged = Summary.merge(summaries)
    out_corpus = out / "corpus"
    for f in merged.findings:
        f["corpus_path"] = str(out_corpus / f["property"] / f["id"])
        f["reproduce"] = f"lafuzz repro {f['corpus_path']}"
    for miss in merged.near_misses:
        path = out / DIRECTORY / Path(miss["path"]).relative_to(Path(miss["path"]).parents[1])
        miss.update(path=str(path), reproduce=f"lafuzz repro {path}", promote=f"lafuzz promote {path}")
    merged.config["out"] = str(out)
    merged.config["database"] = str(out / "hypothesis-db")
    merged.database_values_copied = dict(copied)
    write_report(merged, out)
    return merged
