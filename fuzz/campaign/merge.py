"""Merging the outputs of several campaign shards into one corpus, one example database, one report.

Each input is a campaign output directory (``summary.json``, ``corpus/``, ``near-misses/``, usually
``hypothesis-db/``).
Findings are unioned by id (the same finding from two shards counts once, with both counts
added), totals are summed, and every database key a shard used is copied into the merged
database through Hypothesis's public database API.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from fuzz.campaign.database import LOCAL, copy_keys, is_shared, open_database, unreachable_errors
from fuzz.campaign.report import write_report
from fuzz.campaign.summary import Summary
from fuzz.corpus import entry as corpus
from fuzz.corpus.candidates import DIRECTORY


def _databases(source: Path, summary: Summary) -> list[str]:
    """Where a shard's example database values are: its own ``hypothesis-db/`` (the default, or what stood in
    for a shared database while it was lost) and the database its summary names, if that is another one
    (Redis, or a directory that exists here: none is created)."""
    found = [source / LOCAL] if (source / LOCAL).is_dir() else []
    named = summary.config.get("database", "")
    if is_shared(named):
        return [*map(str, found), named]
    if Path(named).is_dir() and not any(Path(named).resolve() == f.resolve() for f in found):
        found.append(Path(named))
    return [str(f) for f in found]


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
    destination = open_database(str(out / LOCAL))
    copied: Counter = Counter()
    for source, summary in zip(sources, summaries, strict=True):
        keys = [bytes.fromhex(k) for k in summary.database_keys]
        for spec in _databases(Path(source), summary):
            try:
                copied[str(source)] += copy_keys(open_database(spec), destination, keys)
            except unreachable_errors() as err:
                print(f"[lafuzz] {source}: example database {spec} unreachable ({type(err).__name__}: "
                      f"{str(err).splitlines()[0]}): its values are left out; the corpus and the shard's own "
                      "database are merged", file=sys.stderr)
    merged = Summary.merge(summaries)
    out_corpus = out / "corpus"
    for f in merged.findings:
        f["corpus_path"] = str(out_corpus / f["property"] / f["id"])
        f["reproduce"] = f"lafuzz repro {f['corpus_path']}"
    for miss in merged.near_misses:
        path = out / DIRECTORY / Path(miss["path"]).relative_to(Path(miss["path"]).parents[1])
        miss.update(path=str(path), reproduce=f"lafuzz repro {path}", promote=f"lafuzz promote {path}")
    merged.config["out"] = str(out)
    merged.config["database"] = str(out / LOCAL)
    merged.database_values_copied = dict(copied)
    write_report(merged, out)
    return merged
