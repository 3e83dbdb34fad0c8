"""The pass contract.

A pass is a class with a ``name`` and ``run(ctx) -> PassResult``. It edits ``ctx.graph`` (an
onnx-graphsurgeon graph) in place, using ``ctx.facts`` (shapeinfer's inference of the model as
it was given) to decide what is provably safe. Its result says whether it changed anything,
what, and -- for the nodes it looked at and left alone -- why.

Most passes rewrite one node at a time and are a ``RewritePass``: ``ops`` says which ONNX ops
they look at (the match), ``check(ctx, node)`` returns a ``Match`` carrying what the rewrite
needs or a ``Decline`` carrying why the node stays, and ``rewrite(ctx, node, match)`` makes the
change and says what it did. The reason travels with the answer (as in onnxscript's
``MatchResult.fail``), so ``optimize --explain`` can say why a Reshape was kept, and nothing is
stashed on the pass between check and rewrite.

The pass manager (``optimizer.manager.PassManager``) imports the model into onnx-graphsurgeon
and infers it once, then runs the passes in order on that one graph, round after round, until a
round changes nothing (or the round limit is hit) -- bypasses that rename a graph output's
source wait for that point, then the rounds go on with them allowed; dead nodes are dropped and
the graph is exported at the end. Inference is not repeated: no pass changes the shape or value
of a tensor that stays in the graph, so the facts stay true (a renamed tensor takes the name of
one equal to it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable, Iterator, Optional

from ..adapter import Constant


@dataclass
class PassResult:
    changed: int = 0
    changes: list = field(default_factory=list)  # "node (op): what was done"
    declined: list = field(default_factory=list)  # (node name, op, reason)
    quiet: int = 0  # edits that are not reported as changes (equal constants shared), but are edits

    def change(self, node, what: str) -> None:
        self.changed += 1
        self.changes.append(f"{node.name or '<unnamed>'} ({node.op}): {what}")

    def decline(self, node, reason: str) -> None:
        self.declined.append((node.name or "<unnamed>", node.op, reason))


class Match(SimpleNamespace):
    """check() found the rewrite safe; its attributes are what rewrite() needs."""

    def __bool__(self) -> bool:
        return True


@dataclass(frozen=True)
class Decline:
    """check() found the node must stay, and why (reported as a decline: ``--explain``). With no
    reason the node simply is not one the pass rewrites, and nothing is reported."""

    reason: str = ""

    def __bool__(self) -> bool:
        return False


NO_MATCH = Decline()


@dataclass
class PassContext:
    graph: object  # an onnx-graphsurgeon Graph (optimizer/adapter.py)
    facts: object  # shapeinfer.InferenceResult of the model given (valid throughout: see above)
    opsets: dict
    ir_version: int
    fold_budget: int
    graph_outputs: set  # names of the main graph's outputs (must keep their names)
    ignore_signed_zero: bool = False  # opt-in: x + 0.0 may turn -0.0 into +0.0
    fold_float_math: bool = False  # opt-in: fold float math whose last bits may differ by runtime
    local_functions: frozenset = frozenset()  # (domain, name) of the model's own functions
    # A bypass of a node that makes a graph output renames the tensor it reads (graph_ops.bypass).
    # Renames wait until the other rewrites reach their fixed point: a renamed tensor is a graph
    # output, whose own producer can then only be bypassed by another rename, so an early rename
    # could block a rewrite made without one.
    rename_outputs: bool = False  # renames are allowed (set by the manager)
    renames_waiting: bool = False  # a check found a bypass that needs a rename (while not allowed)

    # tensors with a static dim past LOAD_SAFE_DIM (graph_ops.huge_tensors): nodes() skips their
    # readers and makers
    huge: frozenset = frozenset()
    opaque: frozenset = frozenset()  # id() of nodes holding a graph_ops.HeldAttribute
    # (domain, name) of the model-local functions that hold an If (graph.structure.functions_holding_if)
    if_functions: frozenset = frozenset()
    # id() of the nodes that make what a branch onnxruntime checks at load reads, and of their
    # tensors (graph_ops.branch_guard, set by the manager each round): nodes() skips them
    guarded: frozenset = frozenset()
    guarded_tensors: frozenset = frozenset()
    # id() of the tensors onnxruntime's load-time inference already sees all inference knows of
    # (optimizer.load_view.visible_tensors): no rewrite shows it more of them. None: not found
    # yet -- ``find_visible`` (set by the manager) finds them when a branch first needs them
    visible: Optional[frozenset] = None
    find_visible: Optional[Callable] = None
    # id() of the tensors, as imported, computed from constants alone (load_view.varying_tensors):
    # an If whose condition is one may yet be decided once folding gets there. With
    # ``optimistic``, branch_guard leaves the branches of such an If unguarded meanwhile, and
    # says in ``pending_ifs`` whether one is still there (the manager then starts again without)
    constant_derived: frozenset = frozenset()
    optimistic: bool = False
    pending_ifs: bool = False
    _names: Optional[set] = None  # names in use (the manager gives those of the import; else built once)
    has_subgraphs: bool = True  # some node may hold a graph (False: the importer built it without any)
    shared_constants: dict = field(default_factory=dict)  # int64 shape values -> Constant
    memo: dict = field(default_factory=dict)  # per-run caches of the passes (keyed by pass)
    _unknown: dict = field(default_factory=dict)
    _indexed: Optional[tuple] = None  # (graph.nodes, its length, op -> nodes) for nodes()
    _positions: dict = field(default_factory=dict)  # id(node) -> its place in graph.nodes
    _retyped: bool = False  # a node is filed under a second op

    def unique_name(self, base: str) -> str:
        """A tensor name not used in the model yet -- in the graph or its subgraphs (the set of
        names is built once per run)."""
        if self._names is None:
            from .graph_ops import subgraph_names

            self._names = set(self.graph.tensors()) | subgraph_names(self.graph)
        name, k = base, 0
        while name in self._names:
            k += 1
            name = f"{base}_{k}"
        self._names.add(name)
        return name

    def shape(self, tensor) -> Optional[tuple]:
        if isinstance(tensor, Constant):  # possibly made by a pass: it knows its shape
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

    def nodes(self, *ops: str) -> Iterator:
        """The main graph's nodes that are one of the ONNX ``ops`` (by ``op()``), in order.

        The list of nodes is taken when the walk starts: a rewrite may add nodes (not visited)
        or take some out (still visited, without outputs). Each node's op is read when the walk
        reaches it, after the rewrites of the nodes before it.

        A node that reads or makes a tensor of ``huge`` is not given (see graph_ops.huge_tensors),
        nor one of ``guarded`` (see graph_ops.branch_guard).

        The nodes come from an index by op (a pass reads a few ops: walking every node for
        each pass and round was most of the time on large graphs), rebuilt when the list of
        nodes has changed; a node whose op a pass changes is filed under its new op too
        (``touched``)."""
        index = self._op_index()
        wanted = frozenset(ops)
        found = []
        for op in wanted:
            found.extend(index.get(op, ()))
        if len(found) > 1 and (len(wanted) > 1 or self._retyped):
            pos = self._positions
            if self._retyped:  # (a node filed under two ops may be in found twice)
                found = list({id(n): n for n in found}.values())
            found.sort(key=lambda n: pos[id(n)])
        plain = not self.local_functions  # (then op() is node.op for the default domain)
        huge, guarded = self.huge, self.guarded
        for node in found:
            op = node.op
            if op in wanted and (plain and (not node.domain or node.domain == "ai.onnx") or self.op(node) == op):
                if huge and (any(t.name in huge for t in node.inputs) or any(t.name in huge for t in node.outputs)):
                    continue
                if guarded and id(node) in guarded:
                    continue
                yield node

    def graph_holders(self) -> list:
        """The main graph's nodes that may hold a graph or call a model-local function: If, Loop,
        Scan, SequenceMap and every node that is no ONNX op (from the index of ``nodes``, with
        nodes a pass took out among them)."""
        index = self._op_index()
        return [n for op in ("If", "Loop", "Scan", "SequenceMap", "") for n in index.get(op, ())]

    def _op_index(self) -> dict:
        nodes = self.graph.nodes
        if self._indexed is not None and self._indexed[0] is nodes and self._indexed[1] == len(nodes):
            return self._indexed[2]
        index: dict = {}
        for node in nodes:
            index.setdefault(self.op(node), []).append(node)
        self._positions = {id(n): k for k, n in enumerate(nodes)}
        self._retyped = False
        self._indexed = (nodes, len(nodes), index)
        return index

    def touched(self, node) -> None:
        """A pass changed node's op or attributes: forget what was cached about it (and file it
        under its op in the index of ``nodes``)."""
        for cache in self.memo.values():
            cache.pop(id(node), None)
        if self._indexed is not None and id(node) in self._positions:
            self._indexed[2].setdefault(self.op(node), []).append(node)
            self._retyped = True

    def is_unknown(self, d) -> bool:
        if type(d) is int:
            return False
        got = self._unknown.get(d)
        if got is None:
            got = self._unknown[d] = self.facts.is_unknown_dim(d)
        return got


class Pass:
    """Base class: subclasses set ``name`` and implement ``run``. A pass that is not bit-exact
    sets ``assumption``: the manager reports it whenever the pass is selected."""

    name = "pass"
    description = ""
    assumption = ""

    def run(self, ctx: PassContext) -> PassResult:  # pragma: no cover - interface
        raise NotImplementedError


class RewritePass(Pass):
    """A pass that rewrites nodes one at a time: each node of ``ops`` is checked, then rewritten
    where the check allows it (see the module docstring)."""

    ops: tuple = ()

    def run(self, ctx: PassContext) -> PassResult:
        result = PassResult()
        self.rewrite_each(ctx, self.ops, self.check, self.rewrite, result)
        return result

    @staticmethod
    def rewrite_each(ctx: PassContext, ops: tuple, check, rewrite, result: PassResult) -> None:
        """One walk over the nodes of ``ops``: rewrite(ctx, node, match) -> what it did, for each
        node check(ctx, node) matches; a decline's reason, if any, goes to ``result``."""
        for node in ctx.nodes(*ops):
            found = check(ctx, node)
            if found:
                result.change(node, rewrite(ctx, node, found))
            elif found.reason:
                result.decline(node, found.reason)

    def check(self, ctx: PassContext, node):  # pragma: no cover - interface
        """A Match (what rewrite needs) when node may be rewritten, else a Decline."""
        raise NotImplementedError

    def rewrite(self, ctx: PassContext, node, match: Match) -> str:  # pragma: no cover - interface
        """Rewrite node as check found it may be, and say what was done."""
        raise NotImplementedError


REGISTRY: dict = {}


def register(cls):
    """Class decorator: make the pass known by its name. A name taken twice is an error (one
    pass would silently replace the other)."""
    if cls.name in REGISTRY:
        other = REGISTRY[cls.name]
        raise ValueError(f"pass {cls.name!r} is registered twice: {other.__module__}.{other.__qualname__} "
                         f"and {cls.__module__}.{cls.__qualname__}")
    REGISTRY[cls.name] = cls
    return cls
