"""``shapeinfer.optimize``: run the passes to a fixed point and return the optimised model.

``optimize`` checks the pass names (``select_passes``, which the CLI uses too) and hands the
passes and options to a ``PassManager``, whose ``run(model)`` does the work. Inference is
strict, or uses the opt-in ``assume_nonempty`` (reported). The model's opset imports, IR
version, metadata, doc strings, model-local functions and external data references are kept.
Inference runs once; the passes then repeat on the onnx-graphsurgeon graph until none changes
anything, and dead nodes are dropped at the end. Importing the graph, exporting it and freeing
it are the adapter's (optimizer/adapter.py, the one module that knows onnx-graphsurgeon).
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Callable, Optional

from onnx import ModelProto, helper

from ..errors import ModelLoadError, UsageError
from ..infer.overrides import check_input_shapes, resolve_dims
from ..infer.dim_names import identifier_dim_names
from ..infer.run import check_dim_names, infer
from ..symbolic import to_str
from ..modelio.load import load_model
from ..graph.structure import functions_holding_if, topological_order, validate_structure
from ..infer.engine import paused_gc
from ..infer.unreached import onnx_rejections
from ..fold.folder import DEFAULT_BUDGET_BYTES
from . import adapter
from .adapter import Constant
from .load_view import runtime_view, varying_tensors, visible_tensors
from .passes import REGISTRY
from .passes.base import PassContext
from .passes.constant_folding import movable_value
from .passes.graph_ops import branch_guard, huge_tensors, remove_dead_nodes, subgraph_names
from .run_facts import BoundedFacts

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
# With fold-constants selected, the import makes small Constant nodes the constants that pass
# would make of them (adapter.build_graph); tests turn this off to check the result is the same.
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
             report: Optional[OptimizeReport] = None, dims: Optional[dict] = None) -> ModelProto:
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
    ``dims`` ({symbol: sizes} as check takes it, ``--dims``) is an opt-in too: the rewrites may assume each
    symbol at least the least size given (as run facts do), and the written model computes what
    the original does at those sizes; reported as an assumption.

    Raises ShapeInferenceError (an invalid model), InputShapeError (input shapes malformed or
    contradicting the model), UnknownPassError (a ValueError: a pass name that is none),
    ModelLoadError (an unreadable path), TypeError (an argument of the wrong type)."""
    check_dim_names(dim_names)
    selected = [REGISTRY[name]() for name in select_passes(_names(passes, "passes"), _names(skip, "skip") or (),
                                                             fuse_gemm)]
    manager = PassManager(selected, fold_budget=fold_budget, assume_nonempty=assume_nonempty,
                          ignore_signed_zero=ignore_signed_zero, fold_float_math=fold_float_math,
                          max_rounds=max_rounds, progress=progress, input_shapes=input_shapes,
                          write_shapes=write_shapes, dim_names=dim_names, dims=dims)
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
                 write_shapes: bool = False, dim_names: str = "expressions", dims: Optional[dict] = None):
        self.passes = list(passes)
        self.dims_given = dict(dims or {})
        self.dims: dict = {}  # the sizes given, resolved against the model being optimised: {symbol: DimSizes}
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
        t0 = time.perf_counter()
        try:
            return self._run(model, report, t0)
        except UnicodeDecodeError as e:  # (a string field, read where it is used: one place to catch)
            near = bytes(e.object[max(0, e.start - 8):e.end + 8])
            raise ModelLoadError(f"a string in the model is not valid UTF-8 (near {near!r}); the file is corrupt") from None

    def _run(self, model, report, t0) -> ModelProto:
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
        report = report if report is not None else OptimizeReport()
        # (the sizes given, against the dims the model's inputs name: once, on the model read)
        self.dims = resolve_dims(self.dims_given, src) if self.dims_given else {}
        if not src.graph.output:
            # no output reads anything: every node would be dropped, and a graph emptied of
            # them is one onnxruntime refuses to load (the model given loads)
            given = ModelProto()
            given.CopyFrom(src)
            stats = model_stats(src)
            report.before, report.after, report.seconds = stats, stats, time.perf_counter() - t0
            report.assumptions.append("not optimised: the graph has no outputs, so every node would be dropped, "
                                      "and onnxruntime refuses a graph with nothing in it")
            return given
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
                current, pending = self._optimize(src, attempt, io, holders, optimistic)
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

    def _optimize(self, src: ModelProto, report: OptimizeReport, io, holders: list,
                  optimistic: bool = False) -> tuple:
        """(the optimised model, whether an If was left whose branches the passes did not guard
        because folding seemed to decide its condition: see graph_ops.branch_guard). ``holders``:
        main-graph nodes whose reads the passes leave alone (see _run)."""
        opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in src.opset_import}
        moving = MOVE_CONSTANTS and any(p.name == "fold-constants" for p in self.passes)
        # (with fold-constants, a small Constant node becomes at import the constant that pass makes of it)
        move = functools.partial(movable_value, budget=self.fold_budget) if moving else None
        imported = adapter.import_model(src, move_constant=move, io=io)
        graph, has_subgraphs = imported.graph, imported.has_subgraphs
        # training_info's graphs read main-graph tensors by name, and its bindings assign
        # main-graph initializers: those stay, under their names (see _keep_training_tensors)
        training_inits, training_outputs = _keep_training_tensors(graph, src)
        # One inference serves every round: no pass changes the shape or value of a tensor that
        # stays in the graph (folding keeps values, bypasses read an equal tensor), and the
        # constants they add carry their own shapes.
        self._say("inferring shapes")
        fixed = check_input_shapes(src, self.input_shapes)
        facts = infer(src, input_shapes=fixed, assume_nonempty=self.assume_nonempty, node_io=io)
        lows = facts.run_lows()
        given = {}  # the least sizes --dims gives, past what every run needs: an opt-in, reported
        inputs = facts.input_symbols()
        for name, sizes in self.dims.items():
            if name in inputs and sizes.lo > lows.get(name, (0, ""))[0]:
                given[name] = sizes.lo
        if self.dims:
            report.assumptions.append("the sizes --dims gives (" + ", ".join(f"{n}={d.text()}" for n, d in self.dims.items())
                                      + "): the written model computes what the original does there"
                                      + (f"; rewrites assume {', '.join(f'{n} >= {v}' for n, v in given.items())}"
                                         if given else ""))
        read = facts
        if lows or given:  # the passes read the facts with the bounds: what the zero cases come to
            read = BoundedFacts(facts, {**{s: lo for s, (lo, _) in lows.items()}, **given})
            report.run_facts.extend(f"{s} >= {lo} in every run that succeeds (below it, {why})"
                                    for s, (lo, why) in lows.items())
        report.assumptions.extend(d.message for d in facts.diagnostics if d.kind == "future-opset")
        ctx = PassContext(graph=graph, facts=read, opsets=opsets, ir_version=src.ir_version,
                          fold_budget=self.fold_budget, graph_outputs={t.name for t in graph.outputs},
                          ignore_signed_zero=self.ignore_signed_zero, fold_float_math=self.fold_float_math,
                          local_functions=frozenset((f.domain, f.name) for f in src.functions),
                          huge=huge_tensors(facts.facts) | _guarded(src, list(facts.guarded) + holders),
                          opaque=imported.opaque,
                          # the names in use, for unique_name (graph.tensors() would walk every node),
                          # the subgraphs' too: each name is made once in the model
                          _names={t.name for t in imported.tensors}
                          | (subgraph_names(graph) if has_subgraphs else set()),
                          has_subgraphs=has_subgraphs, if_functions=_if_functions(src))
        # a branch onnxruntime checks at load may read what the passes would rewrite: guarded
        # each round (graph_ops.branch_guard), when the model has a subgraph or calls a function
        # holding an If
        guard = has_subgraphs and (io.has_subgraphs or bool(ctx.if_functions))
        if guard:  # (what onnxruntime sees of the graph as imported: found when a branch needs it)
            varying, ctx.constant_derived = varying_tensors(graph)
            ctx.optimistic = optimistic
            given = {name: facts.shape(name) for name in facts.fixed_inputs} if fixed else {}
            ctx.find_visible = lambda: visible_tensors(varying, ctx.facts, runtime_view(src, given))
        declined, not_folded, clean = self._rounds(ctx, report, guard)
        if guard and ctx.optimistic:  # (the graph as it ends: an If whose branches went unguarded?)
            branch_guard(ctx)
            if ctx.pending_ifs:
                adapter.release(imported)
                return None, True
        guarded = {n.name or "<unnamed>" for n in graph.nodes if id(n) in ctx.guarded} if ctx.guarded else set()
        if not clean:
            remove_dead_nodes(graph)
        ordered = adapter.in_topological_order(graph, bodies=has_subgraphs)
        self._say("exporting")
        current = adapter.export_model(imported, src)
        adapter.release(imported)
        if training_outputs:  # (graph outputs for the passes only: the model's outputs are its own)
            kept_outputs = [o for o in current.graph.output if o.name not in training_outputs]
            del current.graph.output[:]
            current.graph.output.extend(kept_outputs)
        restored = imported.overridable | training_inits
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


def _if_functions(src) -> frozenset:
    """(domain, name) of the model's functions that hold an If, the default domain under both
    its spellings (a call names it "" or "ai.onnx")."""
    if not src.functions:
        return frozenset()
    found = functions_holding_if(src.functions)
    return found | {("ai.onnx" if d == "" else "", name) for d, name in found if d in ("", "ai.onnx")}


def _keep_training_tensors(graph, src) -> tuple:
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
        if isinstance(t, Constant):
            var = adapter.variable_for(graph, t, f"{name} (trained)")
            graph.outputs = [var if o is t else o for o in graph.outputs]
    outputs = {t.name for t in graph.outputs}
    inputs = {t.name for t in graph.inputs}
    made = []
    for name in sorted(read - outputs - inputs - set(inits)):
        t = tensors.get(name)
        if t is not None and not isinstance(t, Constant) and t.inputs:
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
