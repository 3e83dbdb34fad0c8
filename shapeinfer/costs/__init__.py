"""``shapeinfer cost``: MACs, FLOPs, parameters and activation memory as formulas in a model's
input dims (report.py), from per-op counting rules (formulas.py)."""

from .report import CostReport, NodeCost, NotCounted, cost

__all__ = ["CostReport", "NodeCost", "NotCounted", "cost"]
