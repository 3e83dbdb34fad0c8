"""Per-op inference rules, keyed by (domain, op type, since_version).

A rule is a function ``rule(ctx) -> list[Fact | None] | None`` registered with :func:`rule`. It
returns one entry per node output; ``None`` (for the whole list or one output) means "no answer",
and the engine asks onnx's own per-node inference for it instead. A rule registered with
``since=V`` serves every opset version from V up to the next registration of the same op, the
way operator versions work in ONNX; the version differences of one op sit side by side in its
module under ``infer/ops/``.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Callable

_RULES: dict = {}


def normalize_domain(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


def rule(*ops: str, since: int = 1, domain: str = "") -> Callable:
    """Register the decorated function as the rule for ``ops`` from opset ``since`` on. The same
    op, domain and version registered twice is an error (one rule would silently replace the
    other, depending on the import order)."""

    def register(fn: Callable) -> Callable:
        for op in ops:
            versions = _RULES.setdefault((normalize_domain(domain), op), [])
            taken = next((f for v, f in versions if v == since), None)
            if taken is not None:
                raise ValueError(f"two rules for {op} (domain {normalize_domain(domain) or 'ai.onnx'}) since opset "
                                 f"{since}: {taken.__module__}.{taken.__qualname__} and {fn.__module__}.{fn.__qualname__}")
            versions.append((since, fn))
            versions.sort(key=lambda sv: sv[0])
        return fn

    return register


def lookup(domain: str, op: str, version: int):
    """The rule serving ``op`` at opset ``version``, or None."""
    versions = _RULES.get((normalize_domain(domain), op))
    if not versions:
        return None
    i = bisect_right([v for v, _ in versions], version)
    return versions[i - 1][1] if i else None

