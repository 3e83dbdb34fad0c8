"""``shapeinfer check``: findings for CI (run), onnxruntime's tolerances of what onnx.checker
refuses (tolerances)."""

from .run import CheckReport, Finding, check, check_many, exit_code, render_json, render_junit, render_text

__all__ = ["CheckReport", "Finding", "check", "check_many", "exit_code", "render_json", "render_junit", "render_text"]
