"""Control flow: If, Loop and Scan, with their bodies walked by the same engine.

Outer-scope facts are visible inside a body. A branch or loop result whose dims differ between
the ways it can come about gets a fresh symbol rather than either guess; a Loop/Scan state dim
that a body iteration changes becomes fresh too (the dims are a fixed point or unknown) -- unless
the body provably runs and its second iteration keeps what the first made.
"""

from __future__ import annotations

from contextlib import nullcontext

from ...symbolic import Expr, ExpressionTooLarge, free_symbols, iszero, provably_positive, sub
from ..facts import Fact, dtype_name
from ..registry import rule


def _merge(ctx, a: Fact, b: Fact) -> Fact:
    dtype = a.dtype or b.dtype
    if a.type_proto is not None or b.type_proto is not None:
        return Fact(dtype=dtype, type_proto=a.type_proto or b.type_proto)
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return Fact(dtype=dtype)
    return Fact(dtype=dtype, shape=tuple(x if x == y else ctx.fresh("if") for x, y in zip(a.shape, b.shape)))


@rule("If", since=1)
def if_(ctx):
    cond = ctx.input(0)
    then_g, else_g = ctx.attr("then_branch"), ctx.attr("else_branch")
    eng = ctx.engine
    eng.saw_if = True
    if then_g is None or else_g is None:
        return None
    flat = cond.known_elements() if cond is not None else None
    if flat is not None and len(flat) == 1 and isinstance(flat[0], bool):
        taken, other = (then_g, else_g) if flat[0] else (else_g, then_g)
        # the branch never taken runs at no size; onnxruntime's load-time inference still reads
        # it, and refuses the model where it sees a node there break its rule (unreached.py)
        with eng.may_not_run(ctx.node, f"the branch of If {ctx.name!r} never taken", 0):
            never = eng.run_subgraph(other, ctx.scope, ctx.opsets, [], ctx.attr_scope, ctx.node)
        got = eng.run_subgraph(taken, ctx.scope, ctx.opsets, [], ctx.attr_scope, ctx.node)
        _same_types(ctx, got, never)
        return got
    # Each branch may not run. Where the condition is a function of the sizes (a 0/1 dim), each
    # runs exactly where it says; otherwise it depends on tensor data.
    c = flat[0] if flat is not None and len(flat) == 1 and isinstance(flat[0], Expr) else None
    runs_else = None
    if c is not None:
        try:
            runs_else = sub(1, c)
        except ExpressionTooLarge:
            c = None
    with eng.may_not_run(ctx.node, f"the then-branch of If {ctx.name!r}", c) as then_region:
        t = eng.run_subgraph(then_g, ctx.scope, ctx.opsets, [], ctx.attr_scope, ctx.node)
    with eng.may_not_run(ctx.node, f"the else-branch of If {ctx.name!r}", runs_else) as else_region:
        e = eng.run_subgraph(else_g, ctx.scope, ctx.opsets, [], ctx.attr_scope, ctx.node)
    _same_types(ctx, t, e)
    if then_region.failed and else_region.failed:
        eng.drop_unreached(then_region.failures + else_region.failures)
        first, second = then_region.failures[0].error, else_region.failures[0].error
        raise ctx.error(f"both branches fail: the then-branch at {_where(first)} ({first.rule}), "
                        f"the else-branch at {_where(second)} ({second.rule})")
    # A branch that fails wherever it runs gives no run: the other one's facts are the If's.
    if then_region.failed:
        return e
    if else_region.failed:
        return t
    return [_merge(ctx, x, y) for x, y in zip(t, e)]


def _same_types(ctx, a: list, b: list) -> None:
    """Both branches give each output one element type (onnxruntime refuses an If whose
    branches return float and double)."""
    for k, (x, y) in enumerate(zip(a, b)):
        if x is not None and y is not None and x.dtype and y.dtype and x.dtype != y.dtype \
                and x.type_proto is None and y.type_proto is None:
            raise ctx.error(f"output {k} is {dtype_name(x.dtype)} in one branch and {dtype_name(y.dtype)} in the other")


def _where(error) -> str:
    return f"node {error.node_name!r} ({error.op_type})"


def _minted_since(engine, mark: int, dim) -> bool:
    return any(engine.symbols.minted_index(s) >= mark for s in free_symbols(dim))


def _fixpoint(ctx, before: Fact, after: Fact, mark: int) -> Fact:
    """The state after any number of iterations: dims the body keeps, fresh ones elsewhere."""
    if before is None or before.shape is None or after.shape is None or len(before.shape) != len(after.shape):
        dtype = (before.dtype if before is not None else 0) or after.dtype
        return Fact(dtype=dtype, type_proto=after.type_proto)
    eng = ctx.engine
    dims = tuple(
        b if (a == b and not _minted_since(eng, mark, a)) else ctx.fresh("loop")
        for a, b in zip(after.shape, before.shape)
    )
    return Fact(dtype=before.dtype or after.dtype, shape=dims)


def _per_iteration(ctx, f: Fact, mark: int, lead) -> Fact:
    if f.shape is None:
        return Fact(dtype=f.dtype, type_proto=f.type_proto)
    rest = tuple(ctx.fresh("loop") if _minted_since(ctx.engine, mark, d) else d for d in f.shape)
    return Fact(dtype=f.dtype, shape=(lead,) + rest)


@rule("Loop", since=1)
def loop(ctx):
    """The Loop's outputs; its scan outputs unsure (Fact.unsure): at 0 iterations no body ran,
    and onnxruntime gives them dims of its own (from its own inference of the body's output,
    0 where that is unknown; the rank the body declares, a scalar [] making [0]), so where the
    Loop may make no iteration their dims past the first are left unknown, and their rank too
    where the body declares another rank or none."""
    m = ctx.input(0) if ctx.has_input(0) else None
    never = _runs_never(ctx, m)
    outs = _loop(ctx, m, never)
    if outs is not None:
        n_carried = len(ctx.node.input) - 2
        may_skip = never != 0
        body_outs = ctx.attr("body").output
        for j, f in enumerate(outs[n_carried:]):
            if f is not None:
                if may_skip and f.shape is not None:
                    declared = body_outs[1 + n_carried + j].type if 1 + n_carried + j < len(body_outs) else None
                    if declared is not None and declared.HasField("tensor_type") and declared.tensor_type.HasField("shape") \
                            and len(declared.tensor_type.shape.dim) + 1 == len(f.shape):
                        f.shape = f.shape[:1] + tuple(ctx.fresh("loop") for _ in f.shape[1:])
                    else:  # at 0 iterations onnxruntime makes [0] + the body output's declared dims
                        f.shape = None
                ctx.unsure(f)
    return outs


def _loop(ctx, m, never):
    """The Loop's outputs; ``m`` the trip-count fact, ``never`` _runs_never's indicator."""
    body = ctx.attr("body")
    if body is None:
        return None
    eng = ctx.engine
    eng.saw_if = True  # (annotate looks at Loops too: see annotate._declarations_kept)
    n_carried = len(ctx.node.input) - 2
    carried = [ctx.input(2 + i) for i in range(n_carried)]
    from onnx import TensorProto

    iter_fact = Fact(dtype=TensorProto.INT64, shape=())
    cond_fact = Fact(dtype=TensorProto.BOOL, shape=())
    mark = eng.symbols.mint_mark()
    initial = carried
    # a body that may run no iteration is code that may not run (unreached.py)
    region = None
    if never != 0:
        runs = None if never is None else (0 if never == 1 else _complement(never))
        region = eng.may_not_run(ctx.node, f"the body of Loop {ctx.name!r}", runs)
    with region if region is not None else nullcontext() as region:
        results = _loop_walks(ctx, body, carried, initial, never, mark, iter_fact, cond_fact, n_carried, m)
    if region is not None and region.failed:
        # the body fails whenever it runs (its first iteration does): the runs that succeed
        # make no iteration
        results = [_passed_through(b, f) for b, f in zip(initial, results)] + \
            [Fact(dtype=f.dtype) for f in results[n_carried:]]
    return results


def _complement(d):
    """1 - d for a 0/1 dim, or None past the expression budget."""
    try:
        return sub(1, d)
    except ExpressionTooLarge:
        return None


def _passed_through(b: Fact, a: Fact) -> Fact:
    """A state that leaves a Loop as it went in (a is the body's output, for its element type)."""
    if b is not None:
        return Fact(dtype=b.dtype, shape=b.shape, value=b.value, type_proto=b.type_proto)
    return Fact(dtype=a.dtype if a is not None else 0)


def _loop_walks(ctx, body, carried, initial, never, mark, iter_fact, cond_fact, n_carried, m):
    eng = ctx.engine
    outs = eng.run_subgraph(body, ctx.scope, ctx.opsets, [iter_fact, cond_fact] + carried, ctx.attr_scope, ctx.node)
    first = outs[1:1 + n_carried]
    if not _values_kept(carried, first):
        # the first iteration saw values the next ones do not (a flag it flips, a counter it
        # steps): what it decided from them (an If's branch, a Reshape's entries) holds for it
        # alone -- the body is read again with the states' values unknown
        carried = _without_values(carried)
        outs = eng.run_subgraph(body, ctx.scope, ctx.opsets, [iter_fact, cond_fact] + carried, ctx.attr_scope, ctx.node)
        first = outs[1:1 + n_carried]
    if not _same_shapes(carried, first) and never is not None and never != 1:
        # as for Scan: a state the first iteration reshapes (a broadcast that grows it) is
        # final after it when the next iteration leaves it as it is -- and where the body may
        # not run at all, the initial state there
        after = [Fact(dtype=f.dtype, shape=f.shape) if f is not None else None for f in first]
        with eng.may_not_run(ctx.node, f"the second iteration of Loop {ctx.name!r}", None):
            again = eng.run_subgraph(body, ctx.scope, ctx.opsets, [iter_fact, cond_fact] + after, ctx.attr_scope,
                                     ctx.node)
        results = [_fixpoint(ctx, a, b, mark) for a, b in zip(after, again[1:1 + n_carried])]
        if never != 0:
            results = [_or_when_empty(ctx, never, before, f, mark, indicator=True)
                       for before, f in zip(carried, results)]
        per_iter = [x if x.shape == y.shape else Fact(dtype=x.dtype, shape=None if x.shape is None else
                    tuple(d if d == e else ctx.fresh("loop") for d, e in zip(x.shape, y.shape)))
                    for x, y in zip(outs[1 + n_carried:], again[1 + n_carried:])]
        outs = outs[:1 + n_carried] + per_iter
    elif never == 1:  # the body never runs: the states come out as they went in
        results = [_passed_through(b, a) for b, a in zip(initial, first)]
    else:
        results = [_fixpoint(ctx, b, a, mark) for b, a in zip(carried, first)]
    trip = None
    cond_out = outs[0].known_elements() if outs else None
    if m is not None and not ctx.has_input(1) or (cond_out == [True]):
        elems = m.known_elements() if m is not None else None
        if elems is not None and len(elems) == 1 and not isinstance(elems[0], bool):
            trip = elems[0]
    for f in outs[1 + n_carried:]:
        results.append(_per_iteration(ctx, f, mark, trip if trip is not None else ctx.fresh("loop")))
    return results


def _runs_never(ctx, m):
    """The indicator of "the Loop's body runs no time" (1 or 0 when decided, a 0/1 dim where it
    depends on the symbols -- a trip count that may be 0, a first condition computed from
    dims), or None when it is not known (an unknown trip count or condition; neither given)."""
    from ...symbolic import ExpressionTooLarge, iszero, mul, sub

    if m is None and not ctx.has_input(1):
        return None  # runs until the body's condition stops it: not followed
    no_trips = 0
    if m is not None:
        elems = m.known_elements()
        if elems is None or len(elems) != 1 or isinstance(elems[0], bool):
            return None
        no_trips = iszero(elems[0])
    stopped = 0
    if ctx.has_input(1):
        cond = ctx.input(1)
        elems = cond.known_elements() if cond is not None else None
        if elems is None or len(elems) != 1:
            return None
        c = elems[0]
        stopped = (0 if c else 1) if isinstance(c, bool) else (sub(1, c) if isinstance(c, Expr) else None)
        if stopped is None:
            return None
    try:
        return sub(1, mul(sub(1, no_trips), sub(1, stopped)))
    except ExpressionTooLarge:
        return None


def _values_kept(before: list, after: list) -> bool:
    """Whether every state whose value is known going into an iteration comes out of it with
    that same value (then whatever the body decided from it holds for every iteration)."""
    return all(b is None or b.value is None or b.same_value(a) for b, a in zip(before, after))


def _without_values(facts: list) -> list:
    return [Fact(dtype=f.dtype, shape=f.shape, type_proto=f.type_proto) if f is not None and f.value is not None else f
            for f in facts]


def _same_shapes(a: list, b: list) -> bool:
    return all(x is not None and y is not None and x.shape == y.shape and x.shape is not None for x, y in zip(a, b))


def _scan_states(ctx, body, states, slices, first, seq_len, mark) -> list:
    """Final Scan states. If the first iteration changes a state's shape (a broadcast that grows
    it, say) the body runs once more from there: when that is a fixed point and the sequence is
    provably non-empty, the state after one iteration is the final one. Otherwise a changed dim
    becomes fresh."""
    from ...symbolic import provably_positive

    if _same_shapes(states, first) or seq_len is None:
        return [_fixpoint(ctx, b, a, mark) for b, a in zip(states, first)]
    n = len(states)
    after = [Fact(dtype=f.dtype, shape=f.shape) if f is not None else None for f in first]
    with ctx.engine.may_not_run(ctx.node, f"the second iteration of Scan {ctx.name!r}", None):
        second = ctx.engine.run_subgraph(body, ctx.scope, ctx.opsets, after + slices, ctx.attr_scope, ctx.node)[:n]
    final = [_fixpoint(ctx, a, b, mark) for a, b in zip(after, second)]
    if provably_positive(seq_len):
        return final
    # An empty sequence leaves the states as they came in: each dim is the one after the
    # iterations where the sequence has any, the input's where it is empty.
    return [_or_when_empty(ctx, seq_len, before, f, mark) for before, f in zip(states, final)]


def _or_when_empty(ctx, trips, before: Fact, after: Fact, mark: int, indicator: bool = False) -> Fact:
    """The state ``after + iszero(trips)*(before - after)`` dim by dim (a dim the iterations
    do not fix, or past the budget: fresh). ``indicator``: trips is already the 0/1 dim of
    "no iteration"."""
    from ...symbolic import ExpressionTooLarge, add, iszero, mul, sub

    if before is None or before.shape is None or after.shape is None or len(before.shape) != len(after.shape):
        return _fixpoint(ctx, before, after, mark)
    dims = []
    for b, a in zip(before.shape, after.shape):
        if a == b or _minted_since(ctx.engine, mark, a):
            dims.append(b if a == b else ctx.fresh("loop"))
            continue
        try:
            dims.append(add(a, mul(trips if indicator else iszero(trips), sub(b, a))))
        except ExpressionTooLarge:
            dims.append(ctx.fresh("loop"))
    return Fact(dtype=before.dtype or after.dtype, shape=tuple(dims))


@rule("Scan", since=9)
def scan(ctx):
    body = ctx.attr("body")
    n_scan = ctx.attr("num_scan_inputs")
    if body is None or n_scan is None:
        return None
    n_in = len(ctx.node.input)
    if not 1 <= n_scan <= n_in:
        raise ctx.error(f"num_scan_inputs is {n_scan}; a Scan scans 1 to {n_in} of its {n_in} inputs")
    eng = ctx.engine
    n_state = n_in - n_scan
    if n_state > len(ctx.node.output):
        raise ctx.error(f"the Scan has {len(ctx.node.output)} outputs, fewer than its {n_state} state variables "
                        "(its outputs are the final states, then the scan outputs)")
    for name, count, what in (("scan_input_axes", n_scan, "scan inputs"),
                              ("scan_output_axes", len(ctx.node.output) - n_state, "scan outputs")):
        given = ctx.attr(name)
        if given is not None and len(given) != count:
            raise ctx.error(f"{name} holds {len(given)} axes for {count} {what}")
    states = [ctx.input(i) for i in range(n_state)]
    scans = [ctx.input(i) for i in range(n_state, n_in)]
    in_axes = list(ctx.attr("scan_input_axes") or [0] * n_scan)
    slices = []
    seq_len = None
    for f, ax in zip(scans, in_axes):
        if f is None or f.shape is None:
            slices.append(None)
            continue
        if not -len(f.shape) <= ax < len(f.shape):
            raise ctx.error(f"scan_input_axes holds {ax}, outside the {len(f.shape)} axes of a scan input")
        ax = ax + len(f.shape) if ax < 0 else ax
        if seq_len is None:
            seq_len = f.shape[ax]
        slices.append(Fact(dtype=f.dtype, shape=f.shape[:ax] + f.shape[ax + 1:]))
    for k, (vi, f) in enumerate(zip(body.input, states + slices)):
        declared = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if f is not None and f.shape is not None and declared is not None and declared.HasField("shape") \
                and len(declared.shape.dim) != len(f.shape):
            what = "state" if k < n_state else "scan input (less its scanned axis)"
            # (onnxruntime's load infers the body from these and refuses the mismatch)
            raise ctx.error(f"the body declares input {vi.name!r} of rank {len(declared.shape.dim)}; the Scan gives a "
                            f"{what} of rank {len(f.shape)}")
    mark = eng.symbols.mint_mark()
    initial = states
    # a body over a sequence that may be empty is code that may not run (unreached.py)
    region = None
    if seq_len is None or not provably_positive(seq_len):
        runs = None if seq_len is None else (0 if seq_len == 0 else _complement(iszero(seq_len)))
        region = eng.may_not_run(ctx.node, f"the body of Scan {ctx.name!r}", runs)
    with region if region is not None else nullcontext() as region:
        outs = eng.run_subgraph(body, ctx.scope, ctx.opsets, states + slices, ctx.attr_scope, ctx.node)
        if not _values_kept(states, outs[:n_state]):  # (as for Loop: what the first step decided holds for it alone)
            states = _without_values(states)
            outs = eng.run_subgraph(body, ctx.scope, ctx.opsets, states + slices, ctx.attr_scope, ctx.node)
        results = _scan_states(ctx, body, states, slices, outs[:n_state], seq_len, mark)
    if region is not None and region.failed:
        # the body fails whenever it runs: the runs that succeed scan an empty sequence
        return [_passed_through(b, a) for b, a in zip(initial, outs[:n_state])] + \
            [Fact(dtype=f.dtype) for f in outs[n_state:]]
    out_axes = list(ctx.attr("scan_output_axes") or [0] * (len(outs) - n_state))
    lead = seq_len if seq_len is not None else ctx.fresh("scan")
    for f, ax in zip(outs[n_state:], out_axes):
        g = _per_iteration(ctx, f, mark, lead)
        if g.shape is not None and ax != 0:
            r = len(g.shape)
            if not -r <= ax < r:
                raise ctx.error(f"scan_output_axes holds {ax}, outside the {r} axes of a scan output")
            ax = ax + r if ax < 0 else ax
            dims = list(g.shape[1:])
            dims.insert(ax, lead)
            g = Fact(dtype=g.dtype, shape=tuple(dims))
        results.append(g)
    return results
