"""A campaign as JUnit XML (``lafuzz campaign --junit FILE``), the test report every CI system reads.

One test suite per campaign (or merged shards). Its test cases:

- one per property, run on the campaign's backend set (``lafuzz.property``, named
  ``<property>[<backends>]``): failed when the property has a new finding, skipped when no case of it
  was checked, passed otherwise; its output says how many units and cases ran;
- one per finding (``lafuzz.finding.<property>``, named by its id, backends and kind): a new finding
  fails with the property's report and the ``lafuzz repro`` command; a known one (a documented issue
  or a corpus mark) is skipped with the issue's id and explanation (and its note: a crash confirmed on
  its documented case says so), like an expected failure.

Written with the standard library's ElementTree: the format is a handful of elements and attributes.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from fuzz import atomic
from fuzz.campaign.summary import Summary


def _finding_case(finding: dict[str, Any]) -> ElementTree.Element:
    case = ElementTree.Element(
        "testcase",
        classname=f"lafuzz.finding.{finding['property']}",
        name=f"{finding['id']} ({'/'.join(finding['backends'])} {finding['kind']})",
    )
    known = finding.get("known_failure")
    if known:
        ElementTree.SubElement(
            case,
            "skipped",
            message=f"known issue {known.get('issue') or finding['id']} of "
            f"{known['backend']}: {known.get('explanation', '')}".strip()
            + (f" ({finding['note']})" if finding.get("note") else ""),
        )
    else:
        failure = ElementTree.SubElement(case, "failure", type=finding["kind"], message=finding["signature"])
        failure.text = f"{finding['report']}\nseen {finding['count']} time(s); reproduce: {finding['reproduce']}"
    return case


def _property_case(summary: Summary, name: str, backends: str) -> ElementTree.Element:
    stats = summary.per_property.get(name, {})
    case = ElementTree.Element("testcase", classname="lafuzz.property", name=f"{name}[{backends}]")
    new = [f["id"] for f in summary.new_findings if f["property"] == name]
    if new:
        ElementTree.SubElement(
            case, "failure", type="new-finding", message=f"{len(new)} new finding(s): {', '.join(new)}"
        )
    elif not stats.get("examples"):
        ElementTree.SubElement(case, "skipped", message="no case of this property was checked")
    output = ElementTree.SubElement(case, "system-out")
    output.text = (
        f"{stats.get('units', 0)} units, {stats.get('examples', 0)} cases, "
        f"{stats.get('known', 0)} cases of known issues"
    )
    return case


def junit_xml(summary: Summary) -> ElementTree.ElementTree:
    """The campaign's JUnit document."""
    config = summary.config
    backends = ",".join(config["backends"])
    cases = [_property_case(summary, name, backends) for name in config["properties"]]
    cases += [_finding_case(f) for f in summary.findings]
    counts = {kind: sum(1 for c in cases if c.find(kind) is not None) for kind in ("failure", "skipped")}
    attributes = {
        "tests": str(len(cases)),
        "failures": str(counts["failure"]),
        "errors": "0",
        "skipped": str(counts["skipped"]),
        "time": f"{summary.elapsed_s:.2f}",
    }
    root = ElementTree.Element("testsuites", {"name": "lafuzz campaign", **attributes})
    suite = ElementTree.SubElement(root, "testsuite", {
        "name": f"lafuzz campaign, seed {config['seed']}, shard {config['shard']}",
        "timestamp": summary.started,
        **attributes,
    })
    properties = ElementTree.SubElement(suite, "properties")
    for key in ("seed", "shard", "limits", "backends"):
        value = config[key]
        ElementTree.SubElement(
            properties, "property", name=key, value=",".join(value) if isinstance(value, list) else str(value)
        )
    ElementTree.SubElement(properties, "property", name="exit_status", value=str(summary.exit_status))
    suite.extend(cases)
    return ElementTree.ElementTree(root)


def write_junit(summary: Summary, path: Path) -> None:
    """Write the campaign's JUnit XML to ``path`` (its directory is created), atomically (``fuzz.atomic``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = junit_xml(summary)
    ElementTree.indent(document)
    buffer = io.BytesIO()
    document.write(buffer, encoding="utf-8", xml_declaration=True)
    atomic.write_bytes(path, buffer.getvalue())
