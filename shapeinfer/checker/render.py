"""A check run as text (one line per finding, a summary line per model), JSON or JUnit XML."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

from .findings import ERROR, WARNING, Finding, exit_code

def render_text(reports: list) -> str:
    lines = []
    for r in reports:
        for f in r.findings:
            sev = ERROR if (r.strict and f.severity == WARNING) else f.severity
            lines.append(f"{r.path}: " + Finding(sev, f.code, f.message, f.node, f.op).line())
    for r in reports:  # the report ends with one summary line per model
        lines.append(r.summary())
    return "\n".join(lines) + "\n"


def render_json(reports: list) -> str:
    return json.dumps({"models": [r.as_dict() for r in reports],
                       "ok": all(r.ok for r in reports),
                       "exit_code": exit_code(reports)}, indent=2) + "\n"


def render_junit(reports: list) -> str:
    """JUnit XML: one test suite, one test case per model; a failure carries its findings."""
    suite = ET.Element("testsuite", name="shapeinfer check", tests=str(len(reports)),
                       failures=str(sum(1 for r in reports if not r.ok and not r.unreadable)),
                       errors=str(sum(1 for r in reports if r.unreadable)),
                       time=f"{sum(r.seconds for r in reports):.3f}")
    for r in reports:
        case = ET.SubElement(suite, "testcase", classname="shapeinfer.check", name=r.path, time=f"{r.seconds:.3f}")
        body = "\n".join(f.line() for f in r.findings)
        if r.unreadable:
            el = ET.SubElement(case, "error", message=r.errors[0].message if r.errors else "unreadable", type="unreadable")
            el.text = body
        elif not r.ok:
            first = r.errors[0]
            el = ET.SubElement(case, "failure", message=f"{len(r.errors)} error(s): {first.line()}", type="shape")
            el.text = body
        elif r.findings:
            out = ET.SubElement(case, "system-out")
            out.text = body
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
