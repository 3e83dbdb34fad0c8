"""``shapeinfer check``: findings for CI. run (the check of one model and of many), findings
(what a finding and a report are), shapes (declared-shape and per-node findings), tolerances
(what onnx.checker refuses and onnxruntime runs), render (text, JSON, JUnit)."""

from .findings import CheckReport, Finding, exit_code
from .render import render_json, render_junit, render_text
from .run import check, check_many

__all__ = ["CheckReport", "Finding", "check", "check_many", "exit_code", "render_json", "render_junit", "render_text"]
