"""A check run as text (one line per finding, a summary line per model), JSON or JUnit XML.

Names and paths come from the models and the command line and may hold anything: every line of
text and every JUnit string goes through ``one_line`` (a newline in a node name shows as ``\\n``
and never starts a line; an escape sequence never reaches a terminal; the XML holds only
characters XML 1.0 allows). JSON carries the names exactly."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

from ..modelio.text import one_line
from .findings import ERROR, WARNING, Finding, exit_code

MESSAGE_CHARS = 300  # a finding's text is cut here (--format json has it whole)
NAMES_SHOWN = 3  # nodes named for a finding repeated on many nodes


def _cut(message: str) -> str:
    if len(message) <= MESSAGE_CHARS:
        return message
    return message[:MESSAGE_CHARS - 1] + f"… ({len(message)} characters; --format json has it whole)"


def render_text(reports: list) -> str:
    """One line per finding -- a finding repeated on many nodes (one per layer) once, with how
    many nodes have it -- then one summary line per model."""
    lines = []
    for r in reports:
        groups: dict = {}  # (severity, code, op, message) -> its findings, in order
        for f in r.findings:
            found = groups.setdefault((f.severity, f.code, f.op, f.message), [])
            if not any(g.node == f.node for g in found):  # (one node may raise one finding twice)
                found.append(f)
        for (severity, code, op, message), found in groups.items():
            sev = ERROR if (r.strict and severity == WARNING) else severity
            f = found[0]
            lines.append(f"{r.path}: " + Finding(sev, code, _cut(message), f.node, op).line())
            if len(found) > 1:
                names = ", ".join(g.node or "<unnamed>" for g in found[1:1 + NAMES_SHOWN])
                more = f", ... ({len(found) - 1 - NAMES_SHOWN} more)" if len(found) - 1 > NAMES_SHOWN else ""
                lines.append(f"{r.path}:   the same on {len(found) - 1} more node(s): {names}{more}")
    for r in reports:  # the sizes each model runs at, where it says something, with sizes it runs at
        if r.runs_when():
            example = r.contract.get("example")
            said = f" (e.g. {', '.join(f'{k}={v}' for k, v in example.items())})" if example else ""
            lines.append(f"{r.path}: runs when: {r.runs_when()}{said}")
    for r in reports:  # the report ends with one summary line per model
        lines.append(r.summary())
    return "".join(one_line(line) + "\n" for line in lines)


def render_json(reports: list) -> str:
    from ..infer.result import JSON_SCHEMA_VERSION

    return json.dumps({"schema_version": JSON_SCHEMA_VERSION, "models": [r.as_dict() for r in reports],
                       "ok": all(r.ok for r in reports),
                       "exit_code": exit_code(reports)}, indent=2) + "\n"


def render_junit(reports: list) -> str:
    """JUnit XML: one test suite, one test case per model; a failure carries its findings."""
    suite = ET.Element("testsuite", name="shapeinfer check", tests=str(len(reports)),
                       failures=str(sum(1 for r in reports if not r.ok and not r.unreadable)),
                       errors=str(sum(1 for r in reports if r.unreadable)),
                       time=f"{sum(r.seconds for r in reports):.3f}")
    for r in reports:
        case = ET.SubElement(suite, "testcase", classname="shapeinfer.check", name=one_line(r.path),
                             time=f"{r.seconds:.3f}")
        body = "\n".join(one_line(f.line()) for f in r.findings)
        if r.unreadable:
            el = ET.SubElement(case, "error", message=one_line(r.errors[0].message if r.errors else "unreadable"),
                               type="unreadable")
            el.text = body
        elif not r.ok:
            first = r.errors[0]
            proper = sum(1 for f in r.errors if f.severity == ERROR)
            count = (f"{proper} error(s)" if proper == len(r.errors) else
                     f"{proper} error(s) and {len(r.errors) - proper} warning(s), which fail under --strict")
            el = ET.SubElement(case, "failure", message=one_line(f"{count}: {first.line()}"), type="shape")
            el.text = body
        elif r.findings:
            out = ET.SubElement(case, "system-out")
            out.text = body
        if r.runs_when():
            props = ET.SubElement(case, "properties")
            ET.SubElement(props, "property", name="runs_when", value=one_line(r.runs_when()))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
