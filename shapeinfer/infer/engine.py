"""The inference walk: one pass over the graph in topological order.

For each node the engine collects the input facts, runs the rule registered for the op at the
model's opset version (``infer/ops/``), and asks onnx's per-node inference (``fallback.py``) for
whatever the rule leaves open. Subgraphs (If/Loop/Scan bodies) are walked by the same engine with
the outer scope visible; calls of model-local functions walk the function body with the call's
inputs and attributes bound. There is no per-node copy of the model and no restart. The run's
symbols -- the names the model declares and those minted for unknown dims -- are a SymbolTable
(``symbols.py``) that the engine holds and rules reach as ``ctx.engine.symbols``.
"""

from __future__ import annotations

import contextlib
import gc
from math import gcd
from collections import ChainMap
from itertools import islice
from typing import Optional

from onnx import AttributeProto, TensorProto

from ..errors import CannotDecide, ModelLoadError, ShapeInferenceError
from ..symbolic import (Bcast, ExpressionTooLarge, Max, Min, add, atom_dim, atoms, bounds, fits, free_symbols, mul, provably_nonneg,
                        provably_positive, replace_atom, substitute, sym, term_atoms, truediv)
from . import ops  # noqa: F401  (registers the rules)
from ..graph.structure import node_label, topological_order, unread_initializer_problems
from .context import NodeContext
from ..semantics import INT_RANGES, wrap_int
from .facts import UNKNOWN, Fact, Wrapped, obj_array, shape_str
from .ops._util import value_or_none
from .fallback import infer_with_onnx
from ..modelio.tensors import tensor_problem
from .protos import fact_from_type, value_from_tensor
from .registry import lookup, normalize_domain
from .symbols import SymbolTable, input_symbol_names
from .unreached import Region, UnreachedFailure, describe, load_time_static, onnx_rejections, visible_to_runtime
from .validate import attribute_problem, schema_problem

_NO_RULE = object()
_UNSET = object()




@contextlib.contextmanager
def paused_gc():
    """The cyclic garbage collector paused for a block: a walk allocates many small, acyclic
    objects, and the collector's full passes over them would make time grow faster than the
    graph. Collection resumes afterwards (nested pauses resume at the outermost)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

class Diagnostic:
    """Something inference noticed. ``severity`` is "error" (a node broke its op's rule, in the
    keep-going mode of shapeinfer check), "warning" or "info"; ``kind`` says what it is for the
    check: "shape-error", "overflow", "condition" (valid only for some sizes: ``dims`` holds
    (kind, a, b)), "unreached-failure", "future-opset", "unknown-op", "opset-implied",
    "fallback". ``region``: the code that may not run (unreached.Region) the node sits in, if
    any -- a condition there matters only where that code runs."""

    __slots__ = ("severity", "node_name", "op_type", "message", "dims", "kind", "region")

    def __init__(self, severity: str, node_name: str, op_type: str, message: str, dims: tuple = (),
                 kind: str = "", region=None):
        self.severity = severity
        self.node_name = node_name
        self.op_type = op_type
        self.message = message
        self.dims = dims
        self.kind = kind
        self.region = region

    def as_dict(self) -> dict:
        return {
            "severity": self.severity,
            "kind": self.kind,
            "node": self.node_name,
            "op_type": self.op_type,
            "message": self.message,
        }

    def __str__(self):
        where = f"{self.node_name or '<unnamed>'} ({self.op_type})" if self.op_type else "model"
        return f"{self.severity}: {where}: {self.message}"


def _known_opsets() -> dict:
    import onnx

    got = getattr(_known_opsets, "cache", None)
    if got is None:
        version_map = getattr(onnx.defs.C, "schema_version_map", None)  # (an onnx without it: the default domain only)
        got = {} if version_map is None else {normalize_domain(d): hi for d, (_, hi) in version_map().items()}
        got.setdefault("", onnx.defs.onnx_opset_version())
        _known_opsets.cache = got
    return got


class Engine:
    """Infers facts for every tensor of a model. Use :meth:`run`, then read :attr:`facts`."""

    def __init__(self, model, input_shapes: Optional[dict] = None, assume_nonempty: bool = False,
                 base_dir: Optional[str] = None, keep_going: bool = False):
        self.model = model
        # keep_going (shapeinfer check): an invalid node becomes an "error" diagnostic and its
        # outputs unknown, instead of ending the walk with ShapeInferenceError.
        self.keep_going = keep_going
        self.base_dir = base_dir  # where external data lives (None: it is not read at all)
        self.input_shapes = dict(input_shapes or {})
        self._shared: dict = {}  # see _shared_dims
        self.propagated: set = set()
        # Opt-in: no tensor is empty -- every dim of every tensor is at least 1. Symbols named
        # on graph inputs then carry the lower bound 1 (all others stay >= 0), and a dim that is
        # the size of some tensor (tensor_dims) counts as positive where that matters.
        self.assume_nonempty = assume_nonempty
        self.tensor_dims: set = set()
        self.symbols = SymbolTable(model)
        self._rules: dict = {}  # (domain, op, version) -> rule or None, looked up once
        self._memo: dict = {}  # _memo_key -> the output facts a rule gave (see infer_node)
        self._kids: dict = {}  # (dtype, shape, value) -> its number (Fact.kid), for memo keys
        self._fast: dict = {}  # (op, domain as written) -> rule key, for memo hits in run_nodes
        self._clean_hit = False  # the last infer_node was served by the memo
        # how often a rule read what the tensors of its scope tell (settle_wrapped,
        # nonneg_given_tensor_dims): a result that did is not memoized
        self._contextual = 0
        self._wrapped = False  # some value holds a Wrapped element (made unknown after the walk)
        self.any_unsure = False  # some fact is unsure (Fact.unsure): run_nodes carries it on
        # an If or a Loop was inferred, or a body was left unwalked (it may hold one): annotate then
        # looks for the declarations a branch never taken (or a Loop's empty scan output) would see
        self.saw_if = False
        self.node_io = None  # the main graph's NodeIO, when the caller has read it (infer's node_io)
        self._tables: dict = {}  # id(a dict of facts) -> [that dict, facts read, its _ScopeTable]
        self.opsets = {normalize_domain(o.domain): o.version for o in model.opset_import}
        for domain in self.opsets:
            if type(domain) is not str:  # (protobuf hands a string that is not valid UTF-8 over as bytes)
                raise ModelLoadError(f"the opset domain {domain!r} is not valid UTF-8; the file is corrupt")
        self.functions = {function_key(f.domain, f.name, getattr(f, "overload", "")): f for f in model.functions}
        self._calls: list = []  # the model-local functions being walked, outermost first
        self._depth = 0  # function calls and subgraphs being walked
        self._work = 0  # nodes walked, bodies included
        self._work_limit = None  # proportional to the model; counted when a body is first walked
        self.diagnostics: list = []
        # code that may not run (unreached.py): the regions being walked, innermost last; the
        # nodes holding the code being walked (If, Loop, Scan, function calls), outermost first;
        # the failures found in such code, settled after the walk
        self._regions: list = []
        self._holders: list = []
        self.unreached: list = []
        self.guarded: list = []  # the main graph's nodes holding such code onnxruntime does not see fail
        self._implied: set = set()  # domains read at an implied version (see IMPLIED_OPSETS)
        self.facts: dict = {}
        self.produced: list = []
        self.ir_version = model.ir_version

    def positive_given_tensor_dims(self, d) -> bool:
        """Under assume_nonempty: d >= 1, given that every tensor dim seen so far is >= 1.

        d itself may be such a dim; otherwise each atom of d (at any depth) that is one is
        replaced by 1 + t (t >= 0, a placeholder) and the algebra asked again."""
        if d in self.tensor_dims:
            return True
        if type(d) is int:
            return d >= 1
        mapping = {}
        taken = free_symbols(d)
        stack = [d]
        while stack:
            for atom in term_atoms(stack.pop()):
                if atom in mapping:
                    continue
                if atom_dim(atom) in self.tensor_dims:
                    mapping[atom] = add(1, _placeholder(len(mapping), taken))
                else:
                    stack.extend(atom.args)  # a symbol has none
        if not mapping:
            return False
        try:
            return provably_positive(substitute(d, mapping))
        except ExpressionTooLarge:
            return False

    def settle_wrapped(self, scope, value):
        """``value`` (an int64 shape value) with each Wrapped element whose dim is the element
        count of a tensor in ``scope`` -- or that count over a positive integer -- replaced by
        that dim: every tensor of a run that succeeds holds at most 2**63-1 elements (a runtime
        refuses a larger one: onnxruntime's TensorShape::Size checks its product), so the
        count, computed modulo 2**64, is exact. Exporters compute a flattened size as the
        product of a tensor's dims, one Mul at a time, each partial product possibly past int64
        where another dim is 0 -- but the full product is the count, and fits.

        The answer depends on the scope, not only on the node's input facts: the node's
        result is not memoized."""
        self._contextual += 1
        tables = self._scope_tables(scope)
        flat = value.reshape(-1).tolist()
        for i, e in enumerate(flat):
            if type(e) is Wrapped:
                if e.dim.__class__ is not int and _fits_given_counts(e.dim, tables):
                    flat[i] = e.dim
                else:
                    self._wrapped = True
        return obj_array(flat, value.shape)

    def nonneg_given_tensor_dims(self, scope, d) -> bool:
        """d >= 0 in every run that succeeds, given that every dim of a tensor in ``scope`` is
        >= 0 there (a runtime makes no tensor with a negative dim): d is such a dim, or the
        algebra proves d >= 0 once each atom a that such a dim holds linearly (``c*a + k``,
        c > 0) is replaced by its lower bound plus a new non-negative placeholder -- a conv's
        frame count ``(samples+240)//320 - 1`` makes ``(samples+240)//320`` at least 1.

        The answer depends on the scope: the node's result is not memoized."""
        self._contextual += 1
        tables = self._scope_tables(scope)
        if any(d in t.dims for t in tables):
            return True
        if type(d) is int or not any(t.lows for t in tables):
            return False
        mapping = {}
        taken = free_symbols(d)
        for atom in atoms(d):
            lows = [t.lows[atom] for t in tables if atom in t.lows]
            if lows and atom not in mapping:
                lo = max(lows)
                mapping[atom] = add(lo, _placeholder(len(mapping), taken))
        if not mapping:
            return False
        try:
            return provably_nonneg(substitute(d, mapping))
        except ExpressionTooLarge:
            return False

    def _scope_tables(self, scope) -> list:
        """What the tensors in ``scope`` tell of every run that succeeds (_ScopeTable), one
        table per dict of the scope (a subgraph's own facts, then its outer scopes'). Each is
        built once and extended as the walk adds facts (a dict keeps their order)."""
        maps = scope.maps if isinstance(scope, ChainMap) else [scope]
        tables = []
        cache = self._tables
        for facts in maps:
            got = cache.get(id(facts))
            if got is None or got[0] is not facts:
                if len(cache) >= 16:
                    cache.clear()
                got = cache[id(facts)] = [facts, 0, _ScopeTable()]
            if got[1] < len(facts):
                _scan(got[2], islice(facts.values(), got[1], None))
                got[1] = len(facts)
            tables.append(got[2])
        return tables

    def warn(self, node, message: str, kind: str = "fallback", severity: str = "warning", dims: tuple = ()) -> None:
        region = self._regions[-1] if self._regions else None
        self.diagnostics.append(Diagnostic(severity, node_label(node), node.op_type, message, dims, kind, region))

    # -- the walk ------------------------------------------------------------------------------

    def run(self) -> dict:
        """Infer the whole model; the facts of the main graph's tensors."""
        with paused_gc():
            return self._run()

    def _run(self) -> dict:
        graph = self.model.graph
        facts: dict = {}
        known = _known_opsets()
        for domain, version in sorted(self.opsets.items()):
            if domain in known and version > known[domain]:
                self.diagnostics.append(Diagnostic(
                    "warning", "", "", f"opset {domain or 'ai.onnx'} {version} is newer than the installed onnx "
                    f"knows ({known[domain]}): ops are read by their latest known definitions", kind="future-opset"))
        init_names = {t.name for t in graph.initializer}
        if self.assume_nonempty:
            self.symbols.assume_positive(input_symbol_names(graph, init_names, self.input_shapes))
        unread = None
        for t in graph.initializer:
            problem = tensor_problem(t)
            if problem:
                if unread is None:
                    unread = {name for name, _ in unread_initializer_problems(self.model)}
                if t.name in unread:
                    continue  # (nothing reads it: onnxruntime drops it; check warns)
                raise ShapeInferenceError(f"initializer {t.name!r}: {problem}")
            value = value_from_tensor(t, self.base_dir)
            facts[t.name] = Fact(dtype=t.data_type, shape=tuple(int(d) for d in t.dims), value=value)
        for t in graph.sparse_initializer:
            facts[t.values.name] = Fact(dtype=t.values.data_type, shape=tuple(int(d) for d in t.dims))
        self._shared = self._shared_dims(graph, init_names)
        for vi in graph.input:
            fact = self._input_fact(vi)
            if vi.name in init_names:
                # An initializer that is also an input is only a default: keep no value.
                if fact.shape is None:
                    fact.shape = facts[vi.name].shape
            facts[vi.name] = fact
        self.facts = facts
        io = self.node_io
        if io is not None and len(io.nodes) == len(graph.node):
            self.produced = self.run_nodes(io.nodes, facts, self.opsets, None, io)
        else:
            self.produced = self.run_nodes(graph.node, facts, self.opsets, None)
        if self._wrapped:
            _forget_wrapped(facts)
        if self.unreached:
            self._settle_unreached()
        return facts

    # -- code that may not run -------------------------------------------------------------------

    @contextlib.contextmanager
    def may_not_run(self, node, what: str, runs):
        """Walk code that may not run (see unreached.py) inside a Region: a node there that breaks
        its op's rule is recorded in it, and its outputs are unknown. ``runs``: the 0/1 dim of
        "it runs" where that is a function of the sizes, else None."""
        region = Region(node, what, runs)
        self._regions.append(region)
        try:
            yield region
        finally:
            self._regions.pop()

    def drop_unreached(self, failures: list) -> None:
        """Forget failures another finding says (both branches of an If fail: the If does)."""
        dropped = {id(f) for f in failures}
        self.unreached = [f for f in self.unreached if id(f) not in dropped]

    def _unreached(self, node, error: ShapeInferenceError) -> None:
        region = self._regions[-1]
        path = tuple((n.op_type, n.name) for n in self._holders) + ((node.op_type, node.name),)
        holder = self._holders[0] if self._holders else node
        failure = UnreachedFailure(error, node, path, region, holder)
        region.failures.append(failure)
        self.unreached.append(failure)

    def _settle_unreached(self) -> None:
        """onnxruntime's verdict on each failure in code that may not run: refused at load where
        its load-time inference sees the failure (an error, raised unless in check's keep-going
        mode), else a warning that the code fails if it runs."""
        # (not under input shapes the caller gives, which onnxruntime's load does not see)
        static = {} if self.input_shapes else load_time_static(self.model, self.facts)
        rejections = onnx_rejections(self.model, static)
        for failure in self.unreached:
            err = failure.error
            if visible_to_runtime(failure, rejections):
                if not self.keep_going:
                    raise err
                self.diagnostics.append(Diagnostic("error", err.node_name, err.op_type,
                                                   f"{err.rule} (onnxruntime's load-time inference sees it too and "
                                                   "refuses the model, although this code may not run)",
                                                   kind="shape-error"))
                continue
            if failure.region.runs != 0:
                # (the branch of a decided If never taken: inline-if takes it out, and
                # annotate leaves what it reads as the model has it -- _declarations_kept)
                self.guarded.append(failure.holder)
            message = describe(failure)
            if message is not None:
                self.diagnostics.append(Diagnostic("warning", err.node_name, err.op_type, message,
                                                   kind="unreached-failure"))

    def _shared_dims(self, graph, init_names: set) -> dict:
        """{dim_param: the dim given for it}: names the declared shapes of inputs whose shapes
        the caller gives (input_shapes) bind -- ``batch`` of ``input_ids: [batch,seq]`` given
        as ``[1,seq]`` is 1 -- for the other inputs that declare them (``attention_mask:
        [batch,seq]`` is then ``[1,seq]``, the dims the model declares equal staying equal). A
        name given two different dims binds nothing."""
        shared: dict = {}
        clash: set = set()
        for vi in graph.input:
            override = self.input_shapes.get(vi.name)
            tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
            if override is None or vi.name in init_names or tt is None or not tt.HasField("shape") \
                    or len(tt.shape.dim) != len(override):
                continue
            for dp, d in zip(tt.shape.dim, override):
                if dp.dim_param:
                    given = d if isinstance(d, int) and not isinstance(d, bool) else self.symbols.given(str(d))
                    if shared.setdefault(dp.dim_param, given) != given:
                        clash.add(dp.dim_param)
        for name in clash:
            del shared[name]
        self.propagated = set()  # inputs not given whose shapes take some of these dims
        if shared:
            for vi in graph.input:
                tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
                if vi.name not in self.input_shapes and vi.name not in init_names and tt is not None \
                        and any(dp.dim_param in shared for dp in tt.shape.dim):
                    self.propagated.add(vi.name)
        return shared

    def _input_fact(self, vi) -> Fact:
        shared = self._shared if vi.name in self.propagated else {}
        fact = fact_from_type(
            vi.type,
            lambda: self.symbols.mint(f"{vi.name}", origin=f"input {vi.name}", positive=self.assume_nonempty),
            (lambda text: shared[text] if text in shared else self.symbols.param(text)) if shared
            else self.symbols.param,
        )
        override = self.input_shapes.get(vi.name)
        if override is not None:
            dims = []
            for d in override:
                if isinstance(d, int) and not isinstance(d, bool):
                    dims.append(d)
                else:
                    dims.append(self.symbols.given(str(d)))
            fact.shape = tuple(dims)
        return fact

    def run_nodes(self, nodes, facts, opsets: dict, attr_scope: Optional[dict], io=None) -> list:
        """Infer the nodes in order; returns the names of the tensors they produce (``io``: the
        NodeIO of ``nodes``, whose names are then not read again).

        The given order is used as long as it is topological. An input that no earlier node
        produced is either dangling (its fact stays unknown) or made by a later node: only then
        are the remaining nodes sorted (Kahn), so a sorted graph costs one pass."""
        produced = []
        order = nodes
        i = 0
        later = None
        self._work += len(nodes)
        # Memo hits are served here, without a call: (op, domain) -> the rule's key, for ops
        # whose rule infer_node found memoizable under the main graph's opsets.
        fast = self._fast if (MEMOIZE and opsets is self.opsets and attr_scope is None and not self.assume_nonempty
                              and not self.functions) else None
        memo, kids = self._memo, self._kids
        nonempty = self.assume_nonempty
        while i < len(order):
            node = order[i]
            inputs = []
            absent = False
            # (one list: each read of a protobuf field makes new objects)
            names_in = node.input[:] if io is None else io.ins[i]
            for n in names_in:
                if not n:
                    inputs.append(None)
                    absent = True
                    continue
                f = facts.get(n)
                if f is None and n not in facts:
                    if later is None:
                        later = {o for m in order[i:] for o in m.output if o}
                    if n in later:
                        order = list(order[:i]) + topological_order(list(order[i:]))
                        later = set()
                        io = None  # (its lists follow the order given)
                        node = order[i]
                        break
                inputs.append(f)
            else:
                names_out = node.output[:] if io is None else io.outs[i]
                outs = None
                memo_key = _UNSET
                if fast is not None:
                    key = fast.get((node.op_type, node.domain))
                    if key is not None:
                        memo_key = _memo_key(key, node, inputs, absent, kids, names_in, names_out)
                        hit = memo.get(memo_key) if memo_key is not None else None
                        if hit is not None:
                            outs = self._served(node, hit)
                if outs is not None:
                    checked = True  # (a memo hit: its facts passed the checks below when stored)
                else:
                    self._clean_hit = False
                    outs = self.infer_node(node, inputs, opsets, attr_scope, facts, absent, memo_key)
                    checked = self._clean_hit
                if self.any_unsure and any(f is not None and f.unsure for f in inputs):
                    outs = [_unsure_copy(f) for f in outs]
                if not checked:
                    for fact in outs:
                        if fact.shape:
                            for d in fact.shape:
                                if d.__class__ is int and d > INT64_MAX:
                                    self._dim_past_int64(node, fact)
                                    break
                for name, fact in zip(names_out, outs):
                    if type(name) is not str:
                        raise ModelLoadError(f"node {node_label(node)!r} ({node.op_type}): an output name is not "
                                             f"valid UTF-8 ({name!r}); the file is corrupt")
                    if not checked and fact.value is not None and fact.dtype in INT_RANGES and fact.value.dtype == object:
                        self._check_overflow(node, fact)
                    if name:
                        facts[name] = fact
                        produced.append(name)
                        if nonempty and fact.shape is not None:
                            self.tensor_dims.update(d for d in fact.shape if type(d) is not int)
                i += 1
        return produced

    def _dim_past_int64(self, node, fact) -> None:
        """A dim no tensor can have (runtimes count dims in int64): the node cannot run."""
        big = next(d for d in fact.shape if type(d) is int and d > INT64_MAX)
        error = ShapeInferenceError(f"an output dim would be {big}, past int64: no runtime can make this tensor",
                                    node_name=node_label(node), op_type=node.op_type)
        if self._regions:
            self._unreached(node, error)
            fact.shape = None
            return
        if not self.keep_going:
            raise error
        self.diagnostics.append(Diagnostic("error", error.node_name, node.op_type, error.rule, kind="shape-error"))
        fact.shape = None

    def _check_overflow(self, node, fact) -> None:
        """A concrete integer value outside its type's range wraps at run time: keep the wrapped
        number (what the runtime holds) and give the node an "overflow" finding. (Cast wraps by
        definition and does it itself; symbolic values that may not fit are made unknown where
        they are computed.)"""
        lo, hi = INT_RANGES[fact.dtype]
        flat = fact.value.reshape(-1).tolist()
        bad = [v for v in flat if type(v) is int and not lo <= v <= hi]
        if not bad:
            return
        fact.value = obj_array([wrap_int(v, fact.dtype) if type(v) is int else v for v in flat], fact.value.shape)
        name = TensorProto.DataType.Name(fact.dtype).lower()
        self.warn(node, f"integer overflow: a value {bad[0]} does not fit {name} (it wraps at run time)", kind="overflow")

    def _served(self, node, hit) -> list:
        """The output facts of a memo hit for ``node``: copies of the stored facts (numbers
        kept), and the rule's conditions said again, of this node."""
        facts, said = hit
        if said:
            label = node_label(node)
            op = node.op_type
            region = self._regions[-1] if self._regions else None
            self.diagnostics.extend(Diagnostic(sev, label, op, msg, dims, kind, region) for sev, msg, dims, kind in said)
        return [f.copy() for f in facts]

    def infer_node(self, node, inputs: list, opsets: dict, attr_scope, scope, absent: bool = True,
                   memo_key=_UNSET) -> list:
        """The output facts of one node. ``absent``: some input name is empty (False lets the
        memo skip looking). ``memo_key``: the node's memo key when run_nodes has computed it
        (and found no hit)."""
        op, raw_domain = node.op_type, node.domain
        if op.__class__ is not str or raw_domain.__class__ is not str:  # (protobuf's bytes for invalid UTF-8)
            raise ModelLoadError(f"node {node_label(node)!r}: its op type or domain is not valid UTF-8 "
                                 f"({op!r}, {raw_domain!r}); the file is corrupt")
        if self.functions:
            function = self.functions.get(function_key(raw_domain, op, getattr(node, "overload", "")))
            if function is not None:
                return self._call_function(function, node, inputs, attr_scope)
        domain = "" if raw_domain == "ai.onnx" else raw_domain
        n_out = len(node.output)
        version = opsets.get(domain)
        if version is None and domain in IMPLIED_OPSETS:
            version = self._implied_opset(node, domain)
        outs: list = [None] * n_out
        key = (domain, op, version)
        fn = self._rules.get(key, _NO_RULE)
        if fn is _NO_RULE:
            fn = self._rules[key] = lookup(domain, op, version) if version is not None else None
        if fn is not None and MEMOIZE and attr_scope is None and not self.assume_nonempty and op not in _NEVER_MEMOIZED:
            if opsets is self.opsets and not self.functions:
                self._fast[(op, raw_domain)] = key
            if memo_key is _UNSET:
                memo_key = _memo_key(key, node, inputs, absent, self._kids, node.input, node.output)
                if memo_key is not None:
                    hit = self._memo.get(memo_key)
                    if hit is not None:
                        self._clean_hit = True
                        return self._served(node, hit)
        else:
            memo_key = None
        if version is not None and (domain == "" or domain == "ai.onnx.ml"):
            why = schema_problem(node, version, inputs)
            if why is None and domain == "":
                why = attribute_problem(node, version)
            if why is not None:  # (what onnxruntime checks at load: see validate.py)
                return self._invalid(node, ShapeInferenceError(
                    why, node_name=node_label(node), op_type=op,
                    input_shapes=[shape_str(f.shape) if f is not None else "?" for f in inputs]), n_out,
                    kind="schema-error")
        if fn is not None:
            ctx = NodeContext(node, inputs, version, self, attr_scope, scope, opsets)
            mark = (self.symbols._counter, len(self.diagnostics), self._contextual)
            try:
                got = fn(ctx)
            except ShapeInferenceError as e:
                return self._invalid(node, e, n_out)
            except ExpressionTooLarge as e:
                self.warn(node, f"{e}: its dims are left to onnx inference (fresh symbols where it has none)",
                          kind="budget")
                got = None
            except CannotDecide as e:  # (on purpose: anything else a rule raises is a bug)
                if e.reason in ("odd-flag", "off-spec-input"):  # onnx's inference and runtimes disagree
                    self.warn(node, f"unknown because {e}", kind="off-spec")
                    fb = infer_with_onnx(self, node, inputs, opsets, attr_scope, have_rule=True)
                    return [Fact(dtype=f.dtype if f is not None else 0) for f in fb]
                self.warn(node, f"unknown because {e}; used onnx inference")
                got = None
            if got is not None:
                if len(got) == n_out and all(o is not None for o in got):
                    # the same op, attributes and input facts give the same facts and the same
                    # conditions (their text is made of dims, never of names) -- unless the rule
                    # minted a symbol (two unknowns are not one) or said something else
                    if memo_key is not None and mark[0] == self.symbols._counter and mark[2] == self._contextual \
                            and all(o.type_proto is None and _passes_checks(o) for o in got):
                        said = self.diagnostics[mark[1]:]
                        if all(d.kind == "condition" for d in said):
                            # (the facts themselves: their numbers, once given, serve every hit)
                            self._memo[memo_key] = (list(got), tuple((d.severity, d.message, d.dims, d.kind) for d in said))
                    return got
                outs = (list(got) + [None] * n_out)[:n_out]
        if not outs or any(o is None for o in outs):  # (a node with no output is still inferred at load)
            if version is None and domain not in self.opsets:
                self.warn(node, f"no opset imported for domain {domain!r}; outputs unknown", kind="unknown-op")
                fb = [None] * n_out
            else:
                try:
                    fb = infer_with_onnx(self, node, inputs, opsets, attr_scope, have_rule=fn is not None,
                                         refuse=True)
                except ShapeInferenceError as e:  # (what onnxruntime's load-time inference rejects)
                    return self._invalid(node, e, n_out)
            outs = [o if o is not None else (f if f is not None else Fact()) for o, f in zip(outs, fb)]
        return outs

    def _invalid(self, node, error: ShapeInferenceError, n_out: int, kind: str = "shape-error") -> list:
        """A node that breaks its op's rule (``kind`` "shape-error") or schema ("schema-error"):
        in code that may not run, recorded and settled after the walk (unreached.py); in check's
        keep-going mode, an error diagnostic; else raised. Its outputs are unknown."""
        if self._regions:
            self._unreached(node, error)
        elif self.keep_going:  # check mode: record it and walk on
            self.diagnostics.append(Diagnostic("error", node_label(node), node.op_type, error.rule, kind=kind))
        else:
            raise error
        return [Fact() for _ in range(n_out)]

    def _implied_opset(self, node, domain: str) -> int:
        """The version a runtime reads a domain at when the model imports no opset for it
        (onnxruntime adds the import itself, at its latest version); said once per domain."""
        version = IMPLIED_OPSETS[domain]
        if domain not in self._implied:
            self._implied.add(domain)
            self.warn(node, f"nodes of domain {domain!r} but no opset import for it: read at version {version}, "
                            "as onnxruntime does", kind="opset-implied", severity="info")
        return version

    @property
    def depth(self) -> int:
        """How many function calls and subgraphs are being walked (0: the main graph)."""
        return self._depth

    def _deeper(self, node, what: str) -> bool:
        """Whether walking one more body (a function call, a subgraph) stays within bounds; if
        not, the node's outputs stay unknown and a warning says why."""
        if self._depth >= MAX_NESTING:
            self.warn(node, f"{what} nested more than {MAX_NESTING} deep: outputs unknown", kind="budget")
            self.saw_if = True  # (a body not walked may hold an If)
            return False
        if self._work_limit is None:
            self._work_limit = WORK_PER_NODE * _count_nodes(self.model) + WORK_FLOOR
        if self._work > self._work_limit:
            self.warn(node, f"{what} not walked: the model has already taken {self._work} node visits, "
                            f"{WORK_PER_NODE} times its size (calls that multiply); outputs unknown", kind="budget")
            self.saw_if = True
            return False
        return True

    def _call_function(self, function, node, inputs: list, attr_scope) -> list:
        key = function_key(function.domain, function.name, getattr(function, "overload", ""))
        if key in self._calls:
            chain = " -> ".join(_function_str(k) for k in self._calls[self._calls.index(key):] + [key])
            raise ShapeInferenceError(f"model-local function {_function_str(key)} calls itself ({chain}); "
                                      "functions must not be recursive", node_name=node_label(node), op_type=node.op_type)
        if len(node.input) > len(function.input) or len(node.output) != len(function.output):
            # (fewer inputs: onnxruntime inlines the call with the missing ones absent, and the
            # body's nodes decide whether that is allowed)
            return self._invalid(node, ShapeInferenceError(
                f"calls {_function_str(key)} with {len(node.input)} inputs and {len(node.output)} outputs; the "
                f"function takes {len(function.input)} inputs and makes {len(function.output)} outputs",
                node_name=node_label(node), op_type=node.op_type), len(node.output), kind="schema-error")
        if not self._deeper(node, f"function {_function_str(key)}"):
            return [Fact() for _ in node.output]
        self._calls.append(key)
        self._holders.append(node)
        self._depth += 1
        try:
            return self._walk_function(function, node, inputs, attr_scope)
        finally:
            self._calls.pop()
            self._holders.pop()
            self._depth -= 1

    def _walk_function(self, function, node, inputs: list, attr_scope) -> list:
        absent = {f for k, f in enumerate(function.input) if f and (k >= len(node.input) or not node.input[k])}
        if absent:
            function = _without_inputs(function, absent)
        facts: dict = {}
        for formal, fact in zip(function.input, inputs):
            if formal:
                facts[formal] = fact
        scope = {a.name: a for a in function.attribute_proto}
        for a in node.attribute:
            if a.ref_attr_name:
                # a reference to the caller's attribute: its value under this name, or -- where the
                # caller has none -- no value at all (the function's default, else the op's)
                ref = attr_scope.get(a.ref_attr_name) if attr_scope is not None else None
                if ref is None:
                    continue
                a2 = type(a)()
                a2.CopyFrom(ref)
                a2.name = a.name
                a = a2
            scope[a.name] = a
        opsets = dict(self.opsets)
        opsets.update({normalize_domain(o.domain): o.version for o in function.opset_import})
        self.run_nodes(function.node, facts, opsets, scope)
        return [facts.get(o) or Fact() for o in function.output]

    def run_subgraph(self, graph, outer, opsets: dict, input_facts: list, attr_scope=None, node=None) -> list:
        """Walk a subgraph with the outer scope visible; returns the facts of its outputs (unknown
        ones past the nesting or work bounds)."""
        if node is not None and not self._deeper(node, "subgraph"):
            return [Fact() for _ in graph.output]
        self._depth += 1
        if node is not None:
            self._holders.append(node)
        try:
            return self._walk_subgraph(graph, outer, opsets, input_facts, attr_scope)
        finally:
            self._depth -= 1
            if node is not None:
                self._holders.pop()

    def _walk_subgraph(self, graph, outer, opsets: dict, input_facts: list, attr_scope) -> list:
        local: dict = {}
        facts = ChainMap(local, outer)
        for t in graph.initializer:
            local[t.name] = Fact(dtype=t.data_type, shape=tuple(int(d) for d in t.dims), value=value_from_tensor(t, self.base_dir))
        for vi, given in zip(graph.input, input_facts):
            fact = given
            if fact is None or (fact.shape is None and fact.type_proto is None):
                fact = fact_from_type(vi.type, lambda: self.symbols.mint("sub"), self.symbols.param)
                fact.unsure = self.any_unsure = True  # (no runtime checks a subgraph input's declared type)
            local[vi.name] = fact
        self.run_nodes(graph.node, facts, opsets, attr_scope)
        return [facts.get(o.name) or Fact() for o in graph.output]


def _without_inputs(function, absent: set):
    """A copy of ``function`` whose nodes read each formal input in ``absent`` (one the call
    leaves out) as an absent optional input, as onnxruntime's inlining makes them."""
    out = type(function)()
    out.CopyFrom(function)

    def rename(nodes):
        for n in nodes:
            for k, name in enumerate(n.input):
                if name in absent:
                    n.input[k] = ""
            for a in n.attribute:
                for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    if not any(vi.name in absent for vi in g.input):  # (a subgraph input of that name hides it)
                        rename(g.node)

    rename(out.node)
    return out


# Rule results are memoized (a model repeats its layers: the same op on the same input facts);
# tests turn it off to check that nothing changes.
MEMOIZE = True
# Rules whose result depends on more than the op, its attributes and its input facts: they walk
# subgraphs (whose facts hang on the outer scope).
_NEVER_MEMOIZED = frozenset({"If", "Loop", "Scan", "SequenceMap"})


def _memo_key(key: tuple, node, inputs: list, absent: bool, kids: dict, names_in, names_out):
    """What a rule's result is a function of: (domain, op, version), the attributes, which
    inputs and outputs are given, and each input's element type, shape and value (as the
    number ``kids`` gives it). None where one cannot be told cheaply (a subgraph or a reference
    among the attributes, an input that is a sequence or a map)."""
    attrs = node.attribute
    if attrs:
        parts = []
        for a in attrs:
            if a.type in _GRAPH_ATTRS or a.ref_attr_name:
                return None
            parts.append(a.SerializeToString())
        attrs = tuple(parts)
    else:
        attrs = ()
    facts = []
    for f in inputs:
        if f is None:
            facts.append(None)
            continue
        kid = f.kid
        if kid is None:
            if f.type_proto is not None:
                return None
            v = f.value
            if v is None:
                full = (f.dtype, f.shape)
            elif v.dtype == object:
                full = (f.dtype, f.shape, v.shape, tuple(v.reshape(-1).tolist()))
            else:
                full = (f.dtype, f.shape, v.dtype.str, v.shape, v.tobytes())
            kid = kids.get(full)
            if kid is None:
                kid = kids[full] = len(kids)
            f.kid = kid
        facts.append(kid)
    given_in = tuple(not n for n in names_in) if absent else len(inputs)
    given_out = tuple(not n for n in names_out) if len(names_out) != 1 else names_out[0] == ""
    return (key, attrs, given_in, given_out, tuple(facts))


_GRAPH_ATTRS = frozenset({AttributeProto.GRAPH, AttributeProto.GRAPHS})


def _unsure_copy(f: Fact) -> Fact:
    """f marked unsure (computed from an unsure input), as a copy: the memo may hold f."""
    if f.unsure:
        return f
    copy = f.copy()
    copy.unsure = True
    return copy


def _forget_wrapped(facts: dict) -> None:
    """After the walk: a Wrapped element is, to every reader of the result, unknown."""
    for f in facts.values():
        v = f.value if f is not None else None
        if v is not None and v.dtype == object:
            flat = v.reshape(-1).tolist()
            if any(type(e) is Wrapped for e in flat):
                f.value = value_or_none(obj_array([UNKNOWN if type(e) is Wrapped else e for e in flat], v.shape))


def _placeholder(i: int, taken: set):
    """A symbol >= 0 standing for "some value" in a proof about a dim whose own symbols are
    ``taken`` (a dim_param may be any text, so the name is checked, not reserved)."""
    name = f"_t{i}"
    while name in taken:
        name += "~"
    return sym(name)


class _ScopeTable:
    """Engine._scope_tables: element counts by primitive part -> the set of their contents, the
    symbolic tensor dims, and for each atom a tensor dim holds linearly, its lower bound."""

    __slots__ = ("counts", "dims", "lows")

    def __init__(self):
        self.counts: dict = {}
        self.dims: set = set()
        self.lows: dict = {}

    def add_dim(self, d) -> None:
        if d in self.dims:
            return
        self.dims.add(d)
        if len(d.terms) > 2:
            return
        atom, c, k = None, 0, 0
        for mono, coef in d.terms:
            if not mono:
                k = coef
            elif len(mono) == 1 and mono[0][1] == 1:
                atom, c = mono[0][0], coef
            else:
                return
        if atom is None or not isinstance(c, int) or c <= 0 or not isinstance(k, int):
            return
        lo = -((k) // c)  # c*a + k >= 0  <=>  a >= ceil(-k/c)
        if lo > bounds(atom_dim(atom))[0] and lo > self.lows.get(atom, lo - 1):
            self.lows[atom] = lo


# At most this many min/max/bcast atoms of a Wrapped dim are split into cases (2**4 cases for
# four max(0,x) atoms): past it, the dim stays Wrapped.
MAX_CASE_ATOMS = 4


def _scan(table: "_ScopeTable", facts) -> None:
    """Add the symbolic dims and element counts of these facts to the table (but for facts a
    runtime may make with other dims: Fact.unsure)."""
    for f in facts:
        shape = f.shape if f is not None else None
        if not shape or f.unsure or all(d.__class__ is int for d in shape):
            continue
        count = 1
        try:
            for d in shape:
                if d.__class__ is not int:
                    table.add_dim(d)
                count = mul(count, d)
        except ExpressionTooLarge:
            continue
        if count.__class__ is not int:
            key, content = _primitive(count)
            if content > 0:
                table.counts.setdefault(key, set()).add(content)


def _fits_given_counts(d, tables: list) -> bool:
    """d fits int64 in every run whose tensors' element counts are those of ``table`` (see
    Engine.settle_wrapped): d is such a count over a positive integer, or -- splitting each
    min/max/bcast atom among its terms into the cases "it is this operand" (every binding is in
    one of them) -- in each case d is such a count or fits by the symbols' bounds. Exporters
    write a dim as ``max(0, x-1) + 1`` (it is x where x >= 1): the product of those is the
    count where every x >= 1 and small where some x is 0."""
    if _is_count(d, tables):
        return True
    split = []
    for mono, _ in d.terms:
        for atom, _ in mono:
            if isinstance(atom, (Max, Min, Bcast)) and atom not in split:
                split.append(atom)
    if not split or len(split) > MAX_CASE_ATOMS:
        return False
    cases = [d]
    try:
        for atom in split:
            cases = [replace_atom(c, atom, x) for c in cases for x in atom.args]
        return all(fits(c, INT64_MIN, INT64_MAX) or _is_count(c, tables) for c in cases)
    except ExpressionTooLarge:
        return False


def _is_count(d, tables: list) -> bool:
    """d is the element count of a tensor of the tables over a positive integer."""
    if d.__class__ is int:
        return False
    key, content = _primitive(d)
    if content <= 0:
        return False
    for t in tables:
        counts = t.counts.get(key)
        if counts and any(c % content == 0 for c in counts):
            return True
    return False


def _primitive(d) -> tuple:
    """(d over the gcd of its coefficients, that gcd) for a dim with integer coefficients (the
    gcd 0 otherwise), so that k*d and d share the first part."""
    g = 0
    for _, c in d.terms:
        if c.__class__ is not int:
            return d, 0
        g = gcd(g, c)
    if g <= 1:
        return d, g
    return truediv(d, g), g


def _passes_checks(fact) -> bool:
    """No dim past int64 and no integer value out of its type's range: what run_nodes checks
    after each node, so that a memo hit need not be checked again."""
    if fact.shape:
        for d in fact.shape:
            if d.__class__ is int and d > INT64_MAX:
                return False
    v = fact.value
    if v is not None and fact.dtype in INT_RANGES and v.dtype == object:
        lo, hi = INT_RANGES[fact.dtype]
        return all(type(e) is not int or lo <= e <= hi for e in v.reshape(-1).tolist())
    return True


# Bounds on the walk (DESIGN: every loop and recursion has one): function calls and subgraphs
# nest at most MAX_NESTING deep (onnxruntime runs chains of hundreds of functions; past the
# bound their outputs are unknown, never a RecursionError), and the whole walk visits at most
# WORK_PER_NODE times the model's nodes plus WORK_FLOOR (functions that call the next one twice,
# 40 deep, would take 2^40 walks).
MAX_NESTING = 100
# Domains onnxruntime reads without an opset import (it adds one at its latest version): their
# nodes keep their rules instead of becoming unknown. com.microsoft has only version 1.
IMPLIED_OPSETS = {"com.microsoft": 1}
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
WORK_PER_NODE = 32
WORK_FLOOR = 20_000


def function_key(domain: str, name: str, overload: str = "") -> tuple:
    """How a node names a model-local function: domain, name and (IR 10) overload."""
    return (domain, name, overload or "")


def _function_str(key) -> str:
    domain, name, overload = key
    return f"{domain}:{name}" + (f" (overload {overload})" if overload else "")


def _count_nodes(model) -> int:
    """Nodes of the main graph, every subgraph and every function body."""
    total = 0
    stack = [model.graph] + [f for f in model.functions]
    while stack:
        g = stack.pop()
        for n in g.node:
            total += 1
            for a in n.attribute:
                if a.type == a.GRAPH:
                    stack.append(a.g)
                stack.extend(a.graphs)
    return total


__all__ = ["Engine", "Diagnostic"]
