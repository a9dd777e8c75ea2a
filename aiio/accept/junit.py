"""JUnit XML from an accept result: one test case per check, as Jenkins and GitLab read it.

A failed threshold is a <failure> whose message carries measured against required; a check that
could not be measured is an <error> with its reason; a check Ctrl-C stopped before it ran is
<skipped>. Figures and regressions go to <system-out> so they show in the CI's test view.
"""

from __future__ import annotations

import os
import socket
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from aiio import __version__
from aiio.results.figures import FIGURES
from aiio.results.files import write_atomic


def _timestamp(iso: str | None) -> str:
    """The suite's start in the xs:dateTime form the JUnit schema wants (no zone)."""
    if iso:
        try:
            return time.strftime("%Y-%m-%dT%H:%M:%S", time.strptime(iso[:19],
                                                                      "%Y-%m-%dT%H:%M:%S"))
        except ValueError:
            pass
    return time.strftime("%Y-%m-%dT%H:%M:%S")


def _figures_text(check: dict[str, Any]) -> str:
    lines = [f"{check['phase']} {check['workload']}, clients {check['clients']}"]
    for name, value in sorted(check.get("measured", {}).items()):
        fig = FIGURES.get(name)
        lines.append(f"  {name} = {fig.format(value) if fig else value}")
    for v in check.get("verdicts", []):
        if v["measured"] is not None:
            fig = FIGURES[v["figure"]]
            lines.append(f"  {v['threshold']}: {fig.format(v['measured'])} {v['op']} "
                         f"{fig.format(v['required'])} -> {'pass' if v['pass'] else 'FAIL'}")
    for r in check.get("regressions", []):
        lines.append(f"  REGRESSION {r['message']}")
    for w in check.get("warnings", []):
        lines.append(f"  warning ({w['code']}): {w['message']}")
    if check.get("result_id"):
        lines.append(f"  result {check['result_id']}")
    return "\n".join(lines) + "\n"


def _testcase(suite: ET.Element, classname: str, check: dict[str, Any]) -> None:
    case = ET.SubElement(suite, "testcase", name=check["name"], classname=classname,
                         time=f"{check.get('seconds', 0.0):.3f}")
    if check["status"] == "fail":
        node = ET.SubElement(case, "failure", message="; ".join(check["failures"]),
                             type="threshold")
        node.text = "\n".join(check["failures"]) + "\n"
    elif check["status"] == "error":
        node = ET.SubElement(case, "error", message=check["reason"] or "check did not run",
                             type="error")
        node.text = (check["reason"] or "") + "\n"
    ET.SubElement(case, "system-out").text = _figures_text(check)


def junit_tree(res: dict[str, Any]) -> ET.ElementTree:
    """The accept result as <testsuites><testsuite> with one <testcase> per check."""
    checks, not_run = res["checks"], res.get("not_run", [])
    seconds = sum(c.get("seconds", 0.0) for c in checks)
    counts = {"tests": str(len(checks) + len(not_run)), "failures": str(res["failed"]),
              "errors": str(res["errors"]), "time": f"{seconds:.3f}"}
    # <testsuites> takes no "skipped" in the schemas Jenkins validates against; the suite does
    root = ET.Element("testsuites", name=f"aiio accept {res['spec']}", **counts)
    suite = ET.SubElement(root, "testsuite", name=res["spec"], **counts,
                          skipped=str(len(not_run)),
                          timestamp=_timestamp(res.get("started")),
                          hostname=res.get("environment", {}).get("host", socket.gethostname()))
    props = ET.SubElement(suite, "properties")
    for name, value in (("target", res.get("target", "")), ("spec", res.get("spec_path", "")),
                        ("result_id", res.get("id", "")), ("aiio_version", __version__),
                        ("status", res.get("status", ""))):
        ET.SubElement(props, "property", name=name, value=str(value))
    classname = f"aiio.accept.{res['spec']}"
    for check in checks:
        _testcase(suite, classname, check)
    for name in not_run:
        case = ET.SubElement(suite, "testcase", name=name, classname=classname, time="0")
        ET.SubElement(case, "skipped", message="not run: the acceptance run was interrupted")
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(res: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write the JUnit XML atomically, as any file at a path the user gave
    (`files.write_atomic`); returns its path."""
    text = ET.tostring(junit_tree(res).getroot(), encoding="unicode", xml_declaration=True)
    return write_atomic(Path(path), text)
