"""What a check finds: a finding (severity, code, node, op, one line), a model's report, and the
exit code of a run over several models."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..modelio.text import as_text

ERROR, WARNING = "error", "warning"
INT64_MAX = 2**63 - 1
HUGE_ELEMENTS = 10**12  # a warning: no real deployment materialises a tensor this large


@dataclass
class Finding:
    severity: str
    code: str
    message: str
    node: str = ""
    op: str = ""

    def as_dict(self) -> dict:
        return {"severity": self.severity, "code": self.code, "node": self.node, "op": self.op, "message": self.message}

    def line(self) -> str:
        where = f"{self.node or '<unnamed>'} ({self.op}): " if self.op else ""
        return f"{self.severity}: [{self.code}] {where}{self.message}"


@dataclass
class CheckReport:
    path: str
    findings: list = field(default_factory=list)
    nodes: int = 0
    seconds: float = 0.0
    strict: bool = False
    unreadable: bool = False
    assume_nonempty: bool = False
    empty_only: int = 0  # size warnings left out: only an empty tensor breaks them (check's include_empty)
    contract: Optional[dict] = None  # the input contract (infer/contract.py, Contract.as_dict)
    dims: dict = field(default_factory=dict)  # the sizes the user runs the model's dims at (--dims), as text
    dims_lenient: bool = False  # --dims naming a dim this model does not use is no error (many models)
    ignored: int = 0  # findings of codes --ignore leaves out
    baselined: int = 0  # findings the --baseline file accepts

    def __post_init__(self) -> None:
        self.path = as_text(self.path)

    def add(self, severity, code, message, node="", op="") -> None:
        """A finding; ``node`` and ``op`` as the model holds them (a name that is not UTF-8,
        which protobuf hands over as bytes, is kept as text with its bytes escaped)."""
        self.findings.append(Finding(severity, code, message, as_text(node or ""), as_text(op or "")))

    @property
    def errors(self) -> list:
        return [f for f in self.findings if f.severity == ERROR or (self.strict and f.severity == WARNING)]

    @property
    def warnings(self) -> list:
        return [] if self.strict else [f for f in self.findings if f.severity == WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def exit_code(self) -> int:
        return 2 if self.unreadable else (0 if self.ok else 1)

    def summary(self) -> str:
        state = "unreadable" if self.unreadable else ("ok" if self.ok else "FAILED")
        hidden = f" (+{self.empty_only} only where a tensor is empty: --include-empty)" if self.empty_only else ""
        hidden += f" (+{self.ignored} ignored)" if self.ignored else ""
        hidden += f" (+{self.baselined} accepted by the baseline)" if self.baselined else ""
        return (f"{self.path}: {state} -- {len(self.errors)} error(s), {len(self.warnings)} warning(s){hidden}, "
                f"{self.nodes} nodes, {self.seconds:.2f} s")

    def as_dict(self) -> dict:
        return {"model": self.path, "ok": self.ok, "exit_code": self.exit_code, "nodes": self.nodes,
                "errors": len(self.errors), "warnings": len(self.warnings), "empty_only": self.empty_only,
                "ignored": self.ignored, "baselined": self.baselined,
                "seconds": round(self.seconds, 3), "contract": self.contract, "dims": dict(self.dims),
                "findings": [f.as_dict() for f in self.findings]}

    def runs_when(self) -> Optional[str]:
        """The contract's line, where it says something (a condition on the sizes)."""
        c = self.contract
        if not c or not (c["clauses"] or c["open"] or c.get("unread")):
            return None
        return c["runs_when"]


def exit_code(reports: list) -> int:
    if any(r.unreadable for r in reports):
        return 2
    return 0 if all(r.ok for r in reports) else 1
