"""The pass contract and the pass manager.

A pass is a class with a ``name`` and ``run(ctx) -> PassResult``. It edits ``ctx.graph`` (an
onnx-graphsurgeon graph) in place, using ``ctx.facts`` (shapeinfer's inference of the graph as
it was when the round started) to decide what is provably safe. Its result says whether it
changed anything, what, and -- for the nodes it looked at and left alone -- why.

The manager runs the passes in order, then exports the graph, re-infers and runs them again,
until a round changes nothing (or a round limit is hit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class PassResult:
    changed: int = 0
    changes: list = field(default_factory=list)  # "node (op): what was done"
    declined: list = field(default_factory=list)  # (node name, op, reason)

    def change(self, node, what: str) -> None:
        self.changed += 1
        self.changes.append(f"{node.name or '<unnamed>'} ({node.op}): {what}")

    def decline(self, node, reason: str) -> None:
        self.declined.append((node.name or "<unnamed>", node.op, reason))


@dataclass
class PassContext:
    graph: object  # onnx_graphsurgeon.Graph
    facts: object  # shapeinfer.InferenceResult of the model given (valid throughout: see optimizer)
    opsets: dict
    ir_version: int
    fold_budget: int
    graph_outputs: set  # names of the main graph's outputs (must keep their names)
    ignore_signed_zero: bool = False  # opt-in: x + 0.0 may turn -0.0 into +0.0
    fold_float_math: bool = False  # opt-in: fold float math whose last bits may differ by runtime
    local_functions: frozenset = frozenset()  # (domain, name) of the model's own functions

    _names: Optional[set] = None
    shared_constants: dict = field(default_factory=dict)  # int64 shape values -> gs.Constant
    memo: dict = field(default_factory=dict)  # per-run caches of the passes (keyed by pass)
    _unknown: dict = field(default_factory=dict)

    def unique_name(self, base: str) -> str:
        """A tensor name not used in the graph yet (the set of names is built once per round)."""
        if self._names is None:
            self._names = set(self.graph.tensors())
        name, k = base, 0
        while name in self._names:
            k += 1
            name = f"{base}_{k}"
        self._names.add(name)
        return name

    def shape(self, tensor) -> Optional[tuple]:
        import onnx_graphsurgeon as gs

        if isinstance(tensor, gs.Constant):  # possibly made by a pass: it knows its shape
            return tuple(int(d) for d in tensor.shape)
        return self.facts.shape(tensor.name)

    def op(self, node) -> str:
        """The ONNX op node is, or "" when it is not one: a node of another domain, or a call of a
        model-local function (which may be named Identity, Reshape or Mul and compute anything
        else). Passes match ops through this, never by node.op alone."""
        domain = node.domain or ""
        if domain not in ("", "ai.onnx"):
            return ""
        if self.local_functions and ((domain, node.op) in self.local_functions
                                     or ("" if domain else "ai.onnx", node.op) in self.local_functions):
            return ""
        return node.op

    def touched(self, node) -> None:
        """A pass changed node's op or attributes: forget what was cached about it."""
        for cache in self.memo.values():
            cache.pop(id(node), None)

    def is_unknown(self, d) -> bool:
        if type(d) is int:
            return False
        got = self._unknown.get(d)
        if got is None:
            got = self._unknown[d] = self.facts.is_unknown_dim(d)
        return got


class Pass:
    """Base class: subclasses set ``name`` and implement ``run``."""

    name = "pass"
    description = ""

    def run(self, ctx: PassContext) -> PassResult:  # pragma: no cover - interface
        raise NotImplementedError


REGISTRY: dict = {}


def register(cls):
    REGISTRY[cls.name] = cls
    return cls


def remove_node(node) -> None:
    """Take node out of the graph: no outputs, and no longer a consumer of its inputs (a removed
    node that still read its inputs would show up among their consumers, without outputs). The
    node itself is dropped from graph.nodes at the end of the run."""
    node.outputs.clear()
    node.inputs.clear()


def replace_uses(graph, old, new) -> None:
    """Make every consumer of tensor ``old`` read ``new`` instead (subgraphs included)."""
    for node in list(old.outputs):
        for i, t in enumerate(node.inputs):
            if t is old:
                node.inputs[i] = new

