"""``shapeinfer.optimize``: run the passes to a fixed point and return the optimised model.

``optimize`` checks the pass names (``select_passes``, which the CLI uses too) and hands the
passes and options to a ``PassManager``, whose ``run(model)`` does the work. Inference is
strict, or uses the opt-in ``assume_nonempty`` (reported). The model's opset imports, IR
version, metadata, doc strings, model-local functions and external data references are kept.
Inference runs once; the passes then repeat on the onnx-graphsurgeon graph until none changes
anything, and dead nodes are dropped at the end.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Callable, Optional

from onnx import AttributeProto, ModelProto, helper

from ..errors import ModelLoadError, UnsupportedModelError, UsageError
from ..infer.overrides import check_input_shapes
from ..infer.dim_names import identifier_dim_names
from ..infer.run import check_dim_names, infer
from ..symbolic import to_str
from ..modelio.load import load_model
from ..graph.structure import functions_holding_if, node_label, shadowed_name, topological_order, validate_structure
from ..infer.engine import paused_gc
from ..infer.protos import clear_negative_dims
from ..infer.unreached import onnx_rejections
from ..fold.folder import DEFAULT_BUDGET_BYTES
from .exporter import export_model
from .importer import import_model
from .load_view import runtime_view, varying_tensors, visible_tensors
from .passes import REGISTRY
from .passes.base import PassContext
from .passes.graph_ops import HeldAttribute, branch_guard, huge_tensors, remove_dead_nodes, replace_uses, subgraph_names
from .run_facts import BoundedFacts, run_lows

# The order matters for how many rounds a graph takes, not for what it ends as: the passes that
# turn a node into a reshape-like op or a no-op (Tile/Expand/reductions) go before remove-noop,
# which removes them; dedupe goes last, merging the copies this round's rewrites made (the 50k
# chain: 2 rounds instead of 4).
DEFAULT_PASSES = ("fold-constants", "inline-if", "remove-identity", "tile-to-expand", "tile-uniform", "reduce-broadcast",
                  "reduce-size-one", "expand-into-broadcast", "remove-noop", "constant-shapes", "collapse-reshapes",
                  "cancel-reshapes", "neutral-elements", "merge-transposes", "merge-concats", "dedupe")
# Passes that are not bit-exact: run only when asked for (by name, or fuse_gemm=True).
OPT_IN_PASSES = ("fuse-gemm",)
ALL_PASSES = DEFAULT_PASSES + OPT_IN_PASSES
# A pass that found nothing to do is not run again until some pass has changed the graph (its
# result would be the same); tests turn this off to check that the result is the same.
SKIP_UNCHANGED = True
# With fold-constants selected, the importer makes small Constant nodes the constants that pass
# would make of them (importer.import_model); tests turn this off to check the result is the same.
MOVE_CONSTANTS = True
# After a round that changed the graph, the nodes no graph output needs leave graph.nodes, so the
# next round does not walk them (on the 50k chain, 46,000 of 50,000 after round 1); tests turn
# this off to check that the result is the same.
DROP_DEAD = True
COUNTED_OPS = ("Reshape", "Expand", "Tile", "Shape", "Gather", "Concat", "Unsqueeze")


MAX_LOAD_ROUNDS = 4  # optimisations tried before the model is given back unchanged (see PassManager._run)


@dataclass
class OptimizeReport:
    before: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)
    changes: dict = field(default_factory=dict)  # pass name -> [what]
    kept: list = field(default_factory=list)  # (node, op, reason) for Reshape/Expand/Tile left
    declined: list = field(default_factory=list)  # (node, op, reason): every decline of the last round's walk
    not_folded: list = field(default_factory=list)  # (node, op, reason): constant nodes left, and why
    rounds: int = 0
    seconds: float = 0.0
    assumptions: list = field(default_factory=list)
    # what every run of the model that succeeds meets, which the rewrites rely on (run_facts.py)
    run_facts: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "before": self.before, "after": self.after, "changes": self.changes,
            "kept": [{"node": n, "op": o, "reason": r} for n, o, r in self.kept],
            "not_folded": [{"node": n, "op": o, "reason": r} for n, o, r in self.not_folded],
            "rounds": self.rounds, "seconds": round(self.seconds, 3), "assumptions": self.assumptions,
            "run_facts": self.run_facts,
        }


def model_stats(model: ModelProto) -> dict:
    """Node count, counts of COUNTED_OPS and of every op type (``ops``, ``domain.Op`` outside the
    default domain), Reshape/Expand with a computed shape, and the model's size in bytes: one
    walk over the nodes (each field read once)."""
    init = {t.name for t in model.graph.initializer}
    by_op: Counter = Counter()
    consts: set = set()
    shaped = []  # the shape input of each Reshape/Expand
    for n in model.graph.node:
        op, domain = n.op_type, n.domain
        by_op[(domain if domain not in ("", "ai.onnx") else "", op)] += 1
        if op == "Constant":
            consts.update(n.output)
        elif op in ("Reshape", "Expand"):
            inputs = n.input
            if len(inputs) > 1:
                shaped.append(inputs[1])
    ops = Counter()
    for (domain, op), c in by_op.items():
        if type(op) is not str or type(domain) is not str:  # (protobuf hands such a string over as bytes)
            raise ModelLoadError(f"the op {domain!r}.{op!r} is not valid UTF-8; the file is corrupt")
        ops[op] += c
    stats = {"nodes": len(model.graph.node)}
    stats.update({op: ops.get(op, 0) for op in COUNTED_OPS})
    stats["computed_reshape_shapes"] = sum(1 for t in shaped if t not in init and t not in consts)
    stats["bytes"] = model.ByteSize()
    stats["ops"] = {f"{domain}.{op}" if domain else op: c
                    for (domain, op), c in sorted(by_op.items(), key=lambda kv: (-kv[1], kv[0]))}
    return stats


def _copy_model_meta(src: ModelProto, graph_model: ModelProto, subgraphs: bool = True) -> ModelProto:
    """The exported model given the source model's fields but its graph (opsets, metadata,
    functions...): those are copied into ``graph_model``, which is returned -- the source's
    graph, weights included, is never copied.

    Graph inputs and outputs keep their declared types (onnx-graphsurgeon writes an unknown
    shape as rank 0), and value_info is dropped: it described the graph before the rewrites."""
    out = graph_model
    for fd in list(out.DESCRIPTOR.fields):
        if fd.name != "graph":
            out.ClearField(fd.name)
    for fd, value in src.ListFields():
        if fd.name == "graph":
            continue
        repeated = fd.is_repeated if hasattr(fd, "is_repeated") else fd.label == fd.LABEL_REPEATED
        if repeated:
            getattr(out, fd.name).extend(value)
        elif fd.message_type is not None:
            getattr(out, fd.name).CopyFrom(value)
        else:
            setattr(out, fd.name, value)
    declared = {vi.name: vi for vi in list(src.graph.input) + list(src.graph.output)}
    for vi in list(out.graph.input) + list(out.graph.output):
        if vi.name in declared:
            vi.type.CopyFrom(declared[vi.name].type)
    out.graph.ClearField("value_info")
    clear_negative_dims(out.graph, subgraphs)  # (the export copies outer tensors' dims into bodies)
    return out


class UnknownPassError(UsageError):
    """A pass name no pass is registered under (``name``; ``known``: every pass there is)."""

    def __init__(self, name: str):
        self.name, self.known = name, ALL_PASSES
        super().__init__(f"unknown pass {name!r}; passes: {', '.join(ALL_PASSES)}")


def select_passes(passes=None, skip=(), fuse_gemm: bool = False) -> list:
    """The names of the passes to run, in order: ``passes`` (default: DEFAULT_PASSES) with
    ``fuse-gemm`` added when ``fuse_gemm`` asks for it, less ``skip``. Raises UnknownPassError
    for a name in ``passes`` or ``skip`` that is no pass -- the one check of pass names, which
    the API and the CLI share."""
    names = list(passes) if passes else list(DEFAULT_PASSES)
    if fuse_gemm and "fuse-gemm" not in names:
        names.append("fuse-gemm")
    for name in list(names) + list(skip):
        if name not in REGISTRY:
            raise UnknownPassError(name)
    return [n for n in names if n not in set(skip)]


def _names(value, what: str) -> Optional[list]:
    """Pass names given as a list/tuple of names or one comma-separated string."""
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if not all(isinstance(v, str) for v in value):
        raise TypeError(f"{what}: pass names (str) or one comma-separated string; got {value!r}")
    return list(value)


def optimize(model, *, passes=None, skip=(), input_shapes: Optional[dict] = None, write_shapes: bool = True,
             dim_names: str = "expressions", fold_budget: int = DEFAULT_BUDGET_BYTES, assume_nonempty: bool = False,
             ignore_signed_zero: bool = False, fold_float_math: bool = False, fuse_gemm: bool = False,
             max_rounds: int = 8, progress: Optional[Callable[[str], None]] = None,
             report: Optional[OptimizeReport] = None) -> ModelProto:
    """The optimised model (a new ModelProto; the one given is not changed).

    ``passes`` selects passes by name (default: all, in DEFAULT_PASSES order), ``skip`` removes
    some (each a list of names or a comma-separated string); ``input_shapes`` fixes inputs'
    shapes as ``infer`` takes them ({"x": [1, 16]}: what becomes static is folded, the inputs
    are written with these shapes); ``write_shapes`` writes every inferred shape into the
    result (value_info and graph outputs), ``dim_names="identifiers"`` writes symbolic dims as
    identifiers (``batch_x_seq``, the mapping in metadata_props); ``fold_budget`` bounds how large a folded constant
    may grow beyond its inputs; ``report`` (an OptimizeReport) receives the before/after counts
    and what each pass did. Every default rewrite is bit-exact. Two opt-ins are not, and are
    reported as assumptions: ``fold_float_math`` folds float math whose last bits may differ
    between NumPy and a runtime (transcendental functions, reductions, MatMul), ``fuse_gemm``
    runs the ``fuse-gemm`` pass (MatMul + Add as Gemm adds the bias in another order).

    Raises ShapeInferenceError (an invalid model), InputShapeError (input shapes malformed or
    contradicting the model), UnknownPassError (a ValueError: a pass name that is none),
    ModelLoadError (an unreadable path), TypeError (an argument of the wrong type)."""
    check_dim_names(dim_names)
    selected = [REGISTRY[name]() for name in select_passes(_names(passes, "passes"), _names(skip, "skip") or (),
                                                             fuse_gemm)]
    manager = PassManager(selected, fold_budget=fold_budget, assume_nonempty=assume_nonempty,
                          ignore_signed_zero=ignore_signed_zero, fold_float_math=fold_float_math,
                          max_rounds=max_rounds, progress=progress, input_shapes=input_shapes,
                          write_shapes=write_shapes, dim_names=dim_names)
    return manager.run(model, report)


class PassManager:
    """Runs passes over a model until a round changes nothing, and exports the result.

    The options are the ones ``optimize`` documents; ``passes`` are Pass instances, run in the
    order given. The graph is imported into onnx-graphsurgeon once and inferred once (the
    facts stay true: see passes/base.py); the passes then run round after round on that graph,
    at most ``max_rounds`` rounds, and the nodes no graph output depends on are dropped before
    the export."""

    def __init__(self, passes, *, fold_budget: int = DEFAULT_BUDGET_BYTES, assume_nonempty: bool = False,
                 ignore_signed_zero: bool = False, fold_float_math: bool = False, max_rounds: int = 8,
                 progress: Optional[Callable[[str], None]] = None, input_shapes: Optional[dict] = None,
                 write_shapes: bool = False, dim_names: str = "expressions"):
        self.passes = list(passes)
        self.dim_names = dim_names
        self.input_shapes = input_shapes
        self.write_shapes = write_shapes
        self.fold_budget = fold_budget
        self.assume_nonempty = assume_nonempty
        self.ignore_signed_zero = ignore_signed_zero
        self.fold_float_math = fold_float_math
        self.max_rounds = max_rounds
        self.progress = progress

    def _write_shapes(self, current: ModelProto, facts, fixed: dict) -> None:
        """The inputs fixed by the caller, then every inferred shape written into the optimised
        model -- inferred anew on it (its constants and rewrites included), which also checks it
        (``write_shapes=False`` with input shapes: the inputs and graph outputs only)."""
        from ..infer.annotate import annotate_loadable

        self._say("writing the shapes")
        _fixed_inputs(current.graph, facts, fixed)
        result = infer(current, assume_nonempty=self.assume_nonempty)
        # with inputs fixed, a declared name may now mean another dim: every inferred dim is written
        annotate_loadable(current, result, input_shapes=fixed or None, in_place=True)
        if not self.write_shapes:
            current.graph.ClearField("value_info")

    def _say(self, message: str) -> None:
        if self.progress:
            self.progress(message)

    def run(self, model, report: Optional[OptimizeReport] = None) -> ModelProto:
        """The optimised model (a new ModelProto: ``model``, a ModelProto or a path, is not
        changed); ``report`` receives what was done."""
        import onnx_graphsurgeon as gs
        from onnx_graphsurgeon.logger import G_LOGGER

        G_LOGGER.severity = G_LOGGER.ERROR  # its warnings (and its hint to install colors) are not ours
        t0 = time.perf_counter()
        try:
            return self._run(model, report, gs, t0)
        except UnicodeDecodeError as e:  # (a string field, read where it is used: one place to catch)
            near = bytes(e.object[max(0, e.start - 8):e.end + 8])
            raise ModelLoadError(f"a string in the model is not valid UTF-8 (near {near!r}); the file is corrupt") from None

    def _run(self, model, report, gs, t0) -> ModelProto:
        src = model if isinstance(model, ModelProto) else load_model(model)
        io = validate_structure(src)
        if not io.in_order:
            # onnx-graphsurgeon imports in the order given: a subgraph's read of a tensor a later
            # node makes would become a tensor of its own, with no producer (which dead-node
            # removal then drops). Work on a copy in topological order (the export sorts anyway).
            copy = ModelProto()
            copy.CopyFrom(src)
            _sorted_nodes(copy.graph)
            src = copy
            io = validate_structure(src)
        if io.has_subgraphs:
            shadow = shadowed_name(src.graph)
            if shadow is not None:
                name, node = shadow
                raise UnsupportedModelError(
                    f"node {node_label(node)!r} ({node.op_type}): a subgraph of it holds an initializer {name!r}, a name the graph around it defines too: "
                    "onnxruntime reads the inner one there, but optimize's graph library would read the outer one and "
                    "change what the model computes; rename one of them (nothing written)")
        report = report if report is not None else OptimizeReport()
        # Every model written must load in onnxruntime. The passes leave alone what a branch
        # onnxruntime checks at load reads (graph_ops.branch_guard) and what code that fails if
        # it runs reads (InferenceResult.guarded). Where onnx's strict inference (what
        # onnxruntime's load runs) still rejects a node of the optimised model that it accepts
        # in the original -- a TopK valid only on an empty tensor whose input's dims a rewrite
        # made visible, say --, what that node reads is left alone too (``holders``) and the
        # passes run again; after MAX_LOAD_ROUNDS the model is given back as it was. An If whose
        # condition seemed to be one folding would decide goes unguarded at first; still there
        # at the end, the passes run again guarding it (``optimistic``).
        holders: list = []
        known: Optional[set] = None  # the original's rejections, read when needed
        optimistic = True
        current = None
        for _ in range(MAX_LOAD_ROUNDS):
            attempt = OptimizeReport(before=model_stats(src))
            attempt.assumptions.extend(p.assumption for p in self.passes if p.assumption)
            self._say(f"importing {len(src.graph.node)} nodes")
            with paused_gc():  # many small acyclic objects (see paused_gc)
                current, pending = self._optimize(gs, src, attempt, io, holders, optimistic)
            if pending:
                self._say("again, guarding the branches of every If left undecided")
                optimistic = False
                continue
            new = {tuple(c) for c in onnx_rejections(current)}
            if new:
                if known is None:
                    known = {tuple(c) for c in onnx_rejections(src)}
                new -= known
            if not new:
                break
            more = [n for n in src.graph.node if any((n.op_type, n.name) == c[0] for c in new)
                    and not any(n is h for h in holders)]
            if not more:
                current = None
                break
            holders.extend(more)
            current = None
        if current is None:
            current = ModelProto()
            current.CopyFrom(src)
            attempt = OptimizeReport(before=model_stats(src), after=model_stats(src))
            attempt.assumptions.append("not optimised: every rewrite tried let onnxruntime's load-time inference "
                                       "reject a node it accepts in the model given")
        for f in fields(OptimizeReport):
            setattr(report, f.name, getattr(attempt, f.name))
        report.seconds = time.perf_counter() - t0
        return current

    def _optimize(self, gs, src: ModelProto, report: OptimizeReport, io, holders: list,
                  optimistic: bool = False) -> tuple:
        """(the optimised model, whether an If was left whose branches the passes did not guard
        because folding seemed to decide its condition: see graph_ops.branch_guard). ``holders``:
        main-graph nodes whose reads the passes leave alone (see _run)."""
        opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in src.opset_import}
        moving = MOVE_CONSTANTS and any(p.name == "fold-constants" for p in self.passes)
        graph, tensors, pairs = import_model(gs, src, self.fold_budget if moving else None, io)
        imported = (list(_all_nodes(gs, graph)), tensors)  # (see _release)
        empty_lists = _unexportable_attributes(gs, src.graph, graph, pairs)
        other_types = _other_types(gs, src.graph, graph, bodies=pairs is None)  # (before any rewrite: by position)
        # a call's overload (IR 10: which of the model's functions of one name it calls), which
        # onnx-graphsurgeon drops: id(node) -> overload, written back after the export
        overloads = {id(gn): pn.overload for pn, gn in (pairs if pairs is not None else _node_pairs(gs, src.graph, graph))
                     if pn.overload} if any(f.overload for f in src.functions) else {}
        overridable = _keep_overridable_inputs(gs, graph, src)
        # training_info's graphs read main-graph tensors by name, and its bindings assign
        # main-graph initializers: those stay, under their names (see _keep_training_tensors)
        training_inits, training_outputs = _keep_training_tensors(gs, graph, src)
        # One inference serves every round: no pass changes the shape or value of a tensor that
        # stays in the graph (folding keeps values, bypasses read an equal tensor), and the
        # constants they add carry their own shapes.
        self._say("inferring shapes")
        fixed = check_input_shapes(src, self.input_shapes)
        facts = infer(src, input_shapes=fixed, assume_nonempty=self.assume_nonempty, node_io=io)
        lows = run_lows(src, facts, graph)
        read = facts
        if lows:  # the passes read the facts with the bounds: what the zero cases come to
            read = BoundedFacts(facts, {s: lo for s, (lo, _) in lows.items()})
            report.run_facts.extend(f"{s} >= {lo} in every run that succeeds (below it, {why})"
                                    for s, (lo, why) in lows.items())
        report.assumptions.extend(d.message for d in facts.diagnostics if d.kind == "future-opset")
        ctx = PassContext(graph=graph, facts=read, opsets=opsets, ir_version=src.ir_version,
                          fold_budget=self.fold_budget, graph_outputs={t.name for t in graph.outputs},
                          ignore_signed_zero=self.ignore_signed_zero, fold_float_math=self.fold_float_math,
                          local_functions=frozenset((f.domain, f.name) for f in src.functions),
                          huge=huge_tensors(facts.facts) | _guarded(src, list(facts.guarded) + holders),
                          opaque=frozenset(k for k, held in empty_lists.items() if any(t is None for _, t in held)),
                          # the names in use, for unique_name (graph.tensors() would walk every node),
                          # the subgraphs' too: each name is made once in the model
                          _names={t.name for t in tensors} | (subgraph_names(graph) if pairs is None else set()),
                          has_subgraphs=pairs is None, if_functions=_if_functions(src))
        # a branch onnxruntime checks at load may read what the passes would rewrite: guarded
        # each round (graph_ops.branch_guard), when the model has a subgraph or calls a function
        # holding an If
        guard = pairs is None and (io.has_subgraphs or bool(ctx.if_functions))
        if guard:  # (what onnxruntime sees of the graph as imported: found when a branch needs it)
            varying, ctx.constant_derived = varying_tensors(gs, graph)
            ctx.optimistic = optimistic
            given = {name: facts.shape(name) for name in facts.fixed_inputs} if fixed else {}
            ctx.find_visible = lambda: visible_tensors(varying, ctx.facts, runtime_view(src, given))
        declined, not_folded, clean = self._rounds(ctx, report, guard)
        if guard and ctx.optimistic:  # (the graph as it ends: an If whose branches went unguarded?)
            branch_guard(ctx)
            if ctx.pending_ifs:
                _release(gs, graph, imported)
                return None, True
        guarded = {n.name or "<unnamed>" for n in graph.nodes if id(n) in ctx.guarded} if ctx.guarded else set()
        if not clean:
            remove_dead_nodes(graph)
        ordered = _in_order(gs, graph, bodies=pairs is None)  # (read on the graph: no protobuf reads)
        self._say("exporting")
        current = _copy_model_meta(src, _export(gs, graph, empty_lists, other_types),
                                   subgraphs=pairs is None)  # (the importer builds graphs without subgraphs only)
        if overloads:
            for pn, gn in _node_pairs(gs, current.graph, graph):
                if id(gn) in overloads:
                    pn.overload = overloads[id(gn)]
        _release(gs, graph, imported)
        if training_outputs:  # (graph outputs for the passes only: the model's outputs are its own)
            kept_outputs = [o for o in current.graph.output if o.name not in training_outputs]
            del current.graph.output[:]
            current.graph.output.extend(kept_outputs)
        restored = overridable | training_inits
        if restored:  # their defaults (values training_info starts from), as the model had them
            present = {t.name for t in current.graph.initializer}
            current.graph.initializer.extend(t for t in src.graph.initializer
                                             if t.name in restored and t.name not in present)
        _outputs_made_by_nodes(current.graph, src, opsets.get("", 0))  # (Constant nodes, first: in order)
        if not ordered:
            _sorted_nodes(current.graph)
        if src.ir_version < 4 and any(t.name not in {i.name for i in current.graph.input} for t in current.graph.initializer):
            # Before IR 4 every initializer is also an input the caller may override: constants
            # folding made need IR 4 (the first to have constant initializers; the model's own
            # initializers stay inputs, as they were). A Constant node could not hold them: before
            # opset 9 it takes float types only.
            current.ir_version = 4
            report.changes.setdefault("export", []).append(
                f"IR version {src.ir_version} -> 4: folded constants are initializers, which IR 3 would list as inputs")
        if fixed:
            shared = [f"{vi.name}=[{','.join(to_str(d) for d in facts.shape(vi.name))}]" for vi in src.graph.input
                      if vi.name in facts.fixed_inputs and vi.name not in fixed and facts.shape(vi.name) is not None]
            report.assumptions.append("inputs fixed: " + "; ".join(
                f"{k}=[{','.join(map(str, v))}]" for k, v in fixed.items())
                + (f" (and, sharing their dims, {'; '.join(shared)})" if shared else ""))
        if self.write_shapes or fixed:
            self._write_shapes(current, facts, fixed)
        if self.dim_names == "identifiers":
            identifier_dim_names(current)
        if self.assume_nonempty:
            report.assumptions.append("no tensor is empty: every dim of every tensor is at least 1 (--assume-nonempty)")
        if self.ignore_signed_zero:
            report.assumptions.append("x + 0.0 may turn -0.0 into +0.0 (--ignore-signed-zero)")
        if self.fold_float_math:
            report.assumptions.append("folded float math may differ from a runtime's in the last bits (--fold-float-math)")
        report.declined = declined
        live = {n.name or "<unnamed>" for n in current.graph.node}
        report.not_folded = [d for d in not_folded if d[0] in live]
        report.kept = _kept_reasons(current, [k for k in declined if k[1] in ("Reshape", "Expand", "Tile")], ctx.huge,
                                    guarded)
        report.after = model_stats(current)
        return current, False

    def _rounds(self, ctx: PassContext, report: OptimizeReport, guard: bool = False) -> tuple:
        """Run the passes until a round changes nothing; the declines of the last round, the
        nodes fold-constants left (with why), and whether the graph holds no dead node (dead
        nodes were dropped after the last edit).

        A pass whose last run changed nothing, with no change by any pass since it started, is
        not run again: on the same graph it would decide the same (the facts never change), so
        its last result stands -- its declines, and whether it found a bypass waiting for a
        rename. (A full last round costs as much as the first; this leaves the passes that
        follow the last change.)

        A round that changes nothing but found a bypass that needs a graph output's name to move
        (``ctx.renames_waiting``) allows such renames from then on, and the rounds go on: the
        renames come after every rewrite that needs none (see PassContext.rename_outputs).

        ``guard``: before each round, the nodes that make what an If's branch reads are found anew
        (graph_ops.branch_guard) -- inline-if removes Ifs, dedupe makes a branch read another
        node's tensor -- and the passes leave them as they are."""
        declined, not_folded = [], []
        total = 0  # changes made so far, by every pass
        cleaned = None  # ``total`` when dead nodes were last dropped
        last: dict = {}  # pass name -> (total when it started, its PassResult, it found a rename waiting)
        for round_no in range(1, self.max_rounds + 1):
            report.rounds = round_no
            changed = 0
            declined, not_folded = [], []
            ctx.renames_waiting = False
            if guard:
                ctx.guarded, ctx.guarded_tensors = branch_guard(ctx)
            for k, p in enumerate(self.passes, 1):
                before = last.get(p.name)
                if SKIP_UNCHANGED and before is not None and before[0] == total and not (before[1].changed or before[1].quiet):
                    res, waiting = before[1], before[2]  # nothing changed since it found nothing
                else:
                    self._say(f"round {round_no}, pass {k}/{len(self.passes)}: {p.name}")
                    started, was_waiting = total, ctx.renames_waiting
                    ctx.renames_waiting = False
                    res = p.run(ctx)
                    waiting = ctx.renames_waiting
                    ctx.renames_waiting = was_waiting
                    total += res.changed + res.quiet
                    last[p.name] = (started, res, waiting)
                    report.changes.setdefault(p.name, []).extend(res.changes)
                ctx.renames_waiting = ctx.renames_waiting or waiting
                changed += res.changed
                declined.extend(res.declined)
                if p.name == "fold-constants":
                    not_folded = list(res.declined)
            if not changed:
                if ctx.rename_outputs or not ctx.renames_waiting:
                    break
                ctx.rename_outputs = True
                last.clear()  # renames allowed: every pass decides anew
            elif DROP_DEAD:
                remove_dead_nodes(ctx.graph)
                cleaned = total
        return declined, not_folded, cleaned == total


_LIST_TYPES = frozenset({AttributeProto.INTS, AttributeProto.FLOATS, AttributeProto.STRINGS, AttributeProto.TENSORS,
                         AttributeProto.GRAPHS, AttributeProto.SPARSE_TENSORS, AttributeProto.TYPE_PROTOS})


def _sorted_nodes(graph) -> None:
    """Put the main graph's nodes in topological order where they are not (onnxruntime loads a
    model out of order, and onnx.checker refuses it; the model given may have been)."""
    nodes = topological_order(graph.node)
    if all(a is b for a, b in zip(nodes, graph.node)):
        return
    ordered = [type(n)() for n in nodes]
    for copy, n in zip(ordered, nodes):
        copy.CopyFrom(n)
    del graph.node[:]
    graph.node.extend(ordered)


def _in_order(gs, graph, bodies: bool) -> bool:
    """Whether every node of the main graph comes after the producers of what it reads (with
    ``bodies``, of what its subgraphs read from outside too). The model is sorted before the
    import and the passes keep that order; this checks it, without reading the exported nodes."""
    from ..fold.folder import outer_variables

    seen: set = set()
    add = seen.add
    for node in graph.nodes:
        for t in node.inputs:
            for p in t.inputs:
                if id(p) not in seen:
                    return False
        if bodies and any(isinstance(v, gs.Graph) for v in node.attrs.values()):
            for t in outer_variables(node):
                for p in t.inputs:
                    if id(p) not in seen:
                        return False
        add(id(node))
    return True


def _guarded(src: ModelProto, holders: list) -> frozenset:
    """What these main-graph nodes read, with what that is computed from: nodes holding code
    that fails if it runs (InferenceResult.guarded), and nodes the load check of optimize's
    output named. The passes leave those tensors' makers and readers alone, as onnxruntime's
    load-time inference must see them as it does in the model -- a shape folded or a Reshape
    removed there would let it see a failure and refuse the model."""
    if not holders:
        return frozenset()
    from ..infer.annotate import guarded_reads

    return frozenset(guarded_reads(src.graph, holders))


def _fixed_inputs(graph, facts, fixed: dict) -> None:
    """Write the input shapes the caller fixed into the graph's inputs (a dim past 2**31-1 as
    unknown: annotate.loadable_shape)."""
    from ..infer.annotate import loadable_shape
    from ..infer.protos import fill_shape_proto

    for vi in graph.input:
        fact = facts.fact(vi.name) if vi.name in fixed or vi.name in facts.fixed_inputs else None
        if fact is not None and fact.shape is not None:
            vi.type.tensor_type.ClearField("shape")
            vi.type.tensor_type.shape.SetInParent()
            fill_shape_proto(vi.type.tensor_type.shape, loadable_shape(fact.shape))


def _node_pairs(gs, proto_graph, gs_graph):
    """(NodeProto, gs.Node) pairs of a graph and its subgraphs, matched by position (onnx-
    graphsurgeon imports and exports the nodes of a graph in order)."""
    stack = [(proto_graph, gs_graph)]
    while stack:
        pg, gg = stack.pop()
        for pn, gn in zip(pg.node, gg.nodes):
            yield pn, gn
            for a in pn.attribute:
                if a.type == AttributeProto.GRAPH and isinstance(gn.attrs.get(a.name), gs.Graph):
                    stack.append((a.g, gn.attrs[a.name]))


def _unexportable_attributes(gs, proto_graph, gs_graph, pairs=None) -> dict:
    """id(node) -> [(name, attribute type)] for the empty list attributes of the imported nodes:
    onnx-graphsurgeon keeps them as [] but cannot export them (the type of an empty list is
    unknown to it). Passes see [] as before; _export writes them back with their type. An
    attribute it skipped (a sparse tensor) becomes a HeldAttribute in the node's attrs, listed
    with type None; _export writes it back as it was.
    ``pairs``: (NodeProto, gs.Node) as the importer built them (None: matched by position)."""
    out: dict = {}
    for pn, gn in pairs if pairs is not None else _node_pairs(gs, proto_graph, gs_graph):
        for a in pn.attribute:
            if a.ref_attr_name:
                continue
            if a.type in _LIST_TYPES and gn.attrs.get(a.name) == []:
                out.setdefault(id(gn), []).append((a.name, a.type))
            elif a.name not in gn.attrs:  # (one it skipped: a sparse tensor)
                gn.attrs[a.name] = HeldAttribute(a)
                out.setdefault(id(gn), []).append((a.name, None))
    return out


_GS_TYPES = ("tensor_type", "sequence_type", "sparse_tensor_type")


def _odd_types(graph) -> bool:
    return any(vi.type.WhichOneof("value") not in _GS_TYPES
               for vi in list(graph.input) + list(graph.output) + list(graph.value_info))


def _other_types(gs, proto_graph, gs_graph, bodies: bool = True) -> Optional[dict]:
    """None when every declared type of the graph and its bodies (inputs, outputs, value_info:
    where onnx-graphsurgeon takes types from) is of a kind onnx-graphsurgeon writes; else, for
    each body (id of its gs.Graph, as imported: matched by position, before any rewrite), the
    declared types of its inputs and outputs of another kind (an optional, a map), by name --
    onnx-graphsurgeon fails on them, so _export writes them untyped and then puts these back.
    ``bodies``: the graph may have subgraphs (the importer's own graphs have none)."""
    odd = _odd_types(proto_graph)
    found: dict = {}
    for pn, gn in _node_pairs(gs, proto_graph, gs_graph) if bodies else ():
        for a in pn.attribute:
            if a.type == AttributeProto.GRAPH and isinstance(gn.attrs.get(a.name), gs.Graph):
                body = a.g
                if _odd_types(body):
                    odd = True
                    found[id(gn.attrs[a.name])] = {vi.name: vi.type for vi in list(body.input) + list(body.output)
                                                   if vi.type.WhichOneof("value") not in _GS_TYPES}
    return found if odd else None


def _export(gs, graph, empty_lists: dict, other_types: Optional[dict] = None):
    """The graph as a ModelProto whose only field is the graph (exporter.export_model: no
    value_info), empty list attributes included (``other_types``: see _other_types)."""
    held, kept = [], []
    if empty_lists:
        for node in _all_nodes(gs, graph):
            for name, kind in empty_lists.get(id(node), ()):
                value = node.attrs.get(name)
                if kind is None and isinstance(value, HeldAttribute):
                    kept.append((node, name, value))
                    del node.attrs[name]
                elif value == []:
                    held.append((node, name))
                    del node.attrs[name]
    # onnx-graphsurgeon writes value infos of tensor, sequence and sparse types only (another,
    # such as an optional, fails inside it): the main graph's such tensors go out untyped -- its
    # inputs and outputs get their declared types back (_copy_model_meta), value_info is rewritten
    # (and so do the bodies' tensors, whose inputs and outputs get their types back below)
    untyped = [t for g in [graph, *_bodies(gs, graph)] for t in [*g.tensors().values(), *g.inputs, *g.outputs]
               if isinstance(t, gs.Variable) and t.dtype is not None
               and getattr(t, "type", "tensor_type") not in _GS_TYPES] if other_types is not None else []
    kept_dtypes = [(t, t.dtype) for t in untyped]
    for t in untyped:
        t.dtype = None
    try:
        exported = export_model(gs, graph)
    finally:
        for node, name in held:
            node.attrs[name] = []
        for node, name, value in kept:
            node.attrs[name] = value
        for t, dtype in kept_dtypes:
            t.dtype = dtype
    if other_types:
        for pn, gn in _node_pairs(gs, exported.graph, graph):
            for a in pn.attribute:
                declared = other_types.get(id(gn.attrs.get(a.name))) if a.type == AttributeProto.GRAPH else None
                for vi in list(a.g.input) + list(a.g.output) if declared else ():
                    if vi.name in declared and not vi.type.WhichOneof("value"):
                        vi.type.CopyFrom(declared[vi.name])
    if kept:
        values = {}
        for node, name, value in kept:
            values.setdefault(id(node), []).append(value)
        for pn, gn in _node_pairs(gs, exported.graph, graph):
            for value in values.get(id(gn), ()):
                pn.attribute.append(value.proto)
    if held:
        kinds = {id(n): dict(empty_lists[id(n)]) for n, _ in held}
        names = {}
        for node, name in held:
            names.setdefault(id(node), []).append(name)
        for pn, gn in _node_pairs(gs, exported.graph, graph):
            for name in names.get(id(gn), ()):
                pn.attribute.append(helper.make_attribute(name, [], attr_type=kinds[id(gn)][name]))
    return exported


def _release(gs, graph, imported: tuple) -> None:
    """Break the graph's reference cycles once it is exported -- a node lists its tensors and
    each tensor its nodes, and every such synchronised list refers to its owner -- so that
    reference counting frees it at once, instead of the cyclic collector walking every object
    of the graph after the walk's pause of it ends (a tenth of a second on a 7,000-node model).
    ``imported``: the nodes and tensors as imported (passes drop some from the graph).

    Each node's and tensor's fields are dropped (the graph is never used again): nothing then
    refers to their lists, which go, and with them every cycle through an owner."""
    nodes, tensors = imported
    Tensor = gs.Tensor
    extend = tensors.extend
    for group in (list(_all_nodes(gs, graph)), nodes):  # (the graph's walk reads fields: first)
        for node in group:
            d = node.__dict__
            if not d:  # (released already: a node in both groups)
                continue
            extend(d["inputs"])
            extend(d["outputs"])
            extend(v for v in d["attrs"].values() if isinstance(v, Tensor))
            d.clear()
    for t in tensors:
        t.__dict__.clear()


def _bodies(gs, graph) -> list:
    """Every subgraph of the graph's nodes, nested ones included."""
    return [v for n in _all_nodes(gs, graph) for v in n.attrs.values() if isinstance(v, gs.Graph)]


def _all_nodes(gs, graph):
    stack = [graph]
    while stack:
        g = stack.pop()
        for n in g.nodes:
            yield n
            stack.extend(v for v in n.attrs.values() if isinstance(v, gs.Graph))


def _keep_overridable_inputs(gs, graph, src) -> set:
    """An initializer that is also a graph input is a default the caller may override (older
    exports list every initializer as an input): onnx-graphsurgeon imports it as a constant and
    drops the input. Make it an input again -- a Variable, so no pass folds or rewrites with its
    value -- and return the names, whose initializers are written back after export."""
    init = {t.name for t in src.graph.initializer}
    names = [vi.name for vi in src.graph.input if vi.name in init]
    if not names:
        return set()
    tensors = graph.tensors()
    protos = {t.name: t for t in src.graph.initializer}
    variables = {}
    for name in names:
        t = tensors.get(name)
        if isinstance(t, gs.Constant):
            var = gs.Variable(name, dtype=t.dtype, shape=list(t.shape))
            replace_uses(graph, t, var)
            t.name = f"{name} (default)"  # unreferenced now; never exported
            variables[name] = var
        elif t is not None:
            variables[name] = t
        else:  # read by no node: onnx-graphsurgeon does not keep it, but it is still an input
            proto = protos[name]
            variables[name] = gs.Variable(name, dtype=helper.tensor_dtype_to_np_dtype(proto.data_type),
                                          shape=list(proto.dims))
    by_name = {t.name: t for t in graph.inputs}
    graph.inputs = [variables.get(vi.name) or by_name[vi.name] for vi in src.graph.input
                    if vi.name in variables or vi.name in by_name]
    return set(variables)


def _if_functions(src) -> frozenset:
    """(domain, name) of the model's functions that hold an If, the default domain under both
    its spellings (a call names it "" or "ai.onnx")."""
    if not src.functions:
        return frozenset()
    found = functions_holding_if(src.functions)
    return found | {("ai.onnx" if d == "" else "", name) for d, name in found if d in ("", "ai.onnx")}


def _keep_training_tensors(gs, graph, src) -> tuple:
    """What training_info needs of the main graph, kept: (the initializers to write back after
    the export, the names of the tensors made graph outputs for the passes -- to take out of the
    outputs after it).

    Its bindings (``initialization_binding``, ``update_binding``) assign main-graph initializers:
    mutable variables, whose values training changes -- so, as an overridable default, each
    becomes a Variable (nothing is folded or merged with its value) and is written back as it
    was. Its graphs read main-graph tensors by name (the algorithm runs after the model's graph,
    on its tensors): an initializer among them is written back if the passes left it out; a
    tensor a node makes is a graph output while the passes run, so that it stays, under its
    name, as a graph output would."""
    if not src.training_info:
        return set(), set()
    from ..graph.structure import graph_reads

    inits = {t.name: t for t in src.graph.initializer}
    bound: set = set()
    read: set = set()
    for info in src.training_info:
        bound.update(b.key for b in list(info.initialization_binding) + list(info.update_binding) if b.key in inits)
        for g in (info.initialization, info.algorithm):
            read.update(graph_reads(g))
    tensors = graph.tensors()
    for name in sorted(bound):
        t = tensors.get(name)
        if isinstance(t, gs.Constant):
            var = gs.Variable(name, dtype=t.dtype, shape=list(t.shape))
            replace_uses(graph, t, var)
            graph.outputs = [var if o is t else o for o in graph.outputs]
            t.name = f"{name} (trained)"  # unreferenced now; never exported
    outputs = {t.name for t in graph.outputs}
    inputs = {t.name for t in graph.inputs}
    made = []
    for name in sorted(read - outputs - inputs - set(inits)):
        t = tensors.get(name)
        if t is not None and not isinstance(t, gs.Constant) and t.inputs:
            made.append(t)
    if made:
        graph.outputs = list(graph.outputs) + made
    return bound | (read & set(inits)), {t.name for t in made}


# Constant before opset 9 holds float types only.
_CONSTANT_V1_TYPES = frozenset({1, 10, 11})


def _outputs_made_by_nodes(graph, src, opset: int) -> None:
    """A graph output that folding turned into a bare initializer is made by a Constant node
    again, as in the original: an output that is an initializer is legal, but consumers (onnx's
    own inference among them, which then reads the output's declaration instead) mishandle it."""
    before = {t.name for t in src.graph.initializer}
    outputs = {o.name for o in graph.output}
    made = [t for t in graph.initializer if t.name in outputs and t.name not in before
            and (opset >= 9 or t.data_type in _CONSTANT_V1_TYPES)]
    if not made:
        return
    names = {t.name for t in made}
    keep = [t for t in graph.initializer if t.name not in names]
    taken = {n.name for n in graph.node if n.name}  # (a node name is one node's in a graph)
    nodes = []
    for t in made:
        name, k = f"{t.name}_constant", 0
        while name in taken:
            k += 1
            name = f"{t.name}_constant_{k}"
        taken.add(name)
        nodes.append(helper.make_node("Constant", [], [t.name], name=name, value=t))
    nodes.extend(graph.node)
    del graph.initializer[:]
    graph.initializer.extend(keep)
    del graph.node[:]
    graph.node.extend(nodes)


def _kept_reasons(model: ModelProto, declined: list, huge: frozenset = frozenset(), guarded=frozenset()) -> list:
    """The latest reason for each Reshape/Expand/Tile still in the model (``huge``: the tensors
    whose readers and makers the passes leave alone, graph_ops.huge_tensors; ``guarded``: the
    names of the nodes they leave alone for an If's branch, graph_ops.branch_guard)."""
    present = {(n.name or "<unnamed>", n.op_type) for n in model.graph.node if n.op_type in ("Reshape", "Expand", "Tile")}
    reasons: dict = {}
    for name, op, why in declined:
        if (name, op) in present:
            reasons[(name, op)] = why
    out = []
    for n in model.graph.node:
        key = (n.name or "<unnamed>", n.op_type)
        if key in present:
            why = reasons.get(key)
            if why is None and huge and any(t in huge for t in list(n.input) + list(n.output)):
                why = "left as it is: it reads or makes a tensor with a dim past 2**31-1, which a rewrite could " \
                      "let onnxruntime's load-time inference see (it then refuses some such models)"
            if why is None and key[0] in guarded:
                why = "left as it is: an If's branch reads what it computes, and onnxruntime checks that branch " \
                      "at load with the shapes it can see -- a constant shape here could make it refuse the model"
            out.append((key[0], key[1], why or "nothing provably simpler was found"))
    return out
