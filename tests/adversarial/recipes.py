"""The recipes the generator draws from: each adds a few nodes to a Builder.

``RECIPES[name] = (weight, lowest opset, function)``. A recipe raises SkipRecipe when the graph has
nothing it can work on (the builder then drops what it added).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from . import spec
from .gen import (FLOAT_SPECIALS, INT32_MAX, INT64_MAX, INT64_MIN, NAN_PAYLOAD32, NEG_QNAN32, SNAN32, Builder,
                  SkipRecipe, V, np_of)

FLOATS = (TP.FLOAT, TP.DOUBLE, TP.FLOAT16)


def _need(v):
    if v is None:
        raise SkipRecipe()
    return v


def special_floats(b: Builder, n, dtype=TP.FLOAT):
    r = b.rng
    vals = [r.choice(FLOAT_SPECIALS) for _ in range(n)]
    arr = np.array(vals, dtype=np_of(dtype))
    if dtype == TP.FLOAT and n and r.random() < 0.3:
        arr[r.randrange(n)] = r.choice([SNAN32, NEG_QNAN32, NAN_PAYLOAD32])
    return arr


def float_const(b: Builder, x: V, dtype=None, fed=False):
    """A float constant that broadcasts against x: scalar, [1], or x's static last dim."""
    r = b.rng
    dtype = dtype or x.dtype
    rank = x.rank() or 0
    shapes = [(), (1,)]
    if rank and x.static_dim(rank - 1) is not None and x.static_dim(rank - 1) <= 8:
        shapes.append((x.static_dim(rank - 1),))
    shape = r.choice(shapes)
    arr = special_floats(b, int(np.prod(shape)), dtype).reshape(shape)
    fed_val = None
    if fed:
        fed_val = special_floats(b, arr.size, dtype).reshape(shape)
    return b.const(arr, dtype=dtype, fed=fed_val)


# ----------------------------------------------------------------------------------- Reshape


def reshape_target(b: Builder, x: V, allowzero: int, attr_form: bool):
    """Entries for a Reshape of x: a partition of x's dims (in order or shuffled), each group one
    entry (0 where it copies, -1 once, a constant when static, else computed), 1s inserted, and
    now and then a wrong entry."""
    r = b.rng
    rank = x.rank()
    idx = list(range(rank))
    if r.random() < 0.2:
        r.shuffle(idx)
    groups, cur = [], []
    for i in idx:
        cur.append(i)
        if r.random() < 0.55:
            groups.append(cur)
            cur = []
    if cur:
        groups.append(cur)
    entries = [("group", g) for g in groups]
    for _ in range(r.choice([0, 0, 0, 1, 2])):
        entries.insert(r.randint(0, len(entries)), ("const", 1))
    if r.random() < 0.08:
        entries = [("const", -1)] if r.random() < 0.5 else []
    minus = False
    out = []
    for pos, (kind, g) in enumerate(entries):
        if kind == "const":
            out.append(("const", g))
            continue
        statics = [x.static_dim(i) for i in g]
        u = r.random()
        if len(g) == 1 and g[0] == pos and not allowzero and u < 0.4:
            out.append(("const", 0))
        elif not minus and u < 0.6:
            minus = True
            out.append(("const", -1))
        elif all(s is not None for s in statics):
            out.append(("const", int(np.prod(statics))))
        elif attr_form:
            out.append(("const", -1) if not minus else ("const", 0))
            minus = True
        else:
            out.append(("vec", g))
    if r.random() < 0.1 and out:  # a wrong entry: valid at some sizes only (or none)
        out[r.randrange(len(out))] = ("const", r.choice([0, 2, 3, -1, 6]))
    if allowzero and r.random() < 0.3 and out:
        out[r.randrange(len(out))] = ("const", 0)
    return out


def build_vec(b: Builder, x: V, entries) -> V:
    """A 1-D int64 shape value from entries: constants and products of x's dims."""
    r = b.rng
    if all(k == "const" for k, _ in entries):
        return b.i64([c for _, c in entries])
    parts, run = [], []
    for kind, e in entries:
        if kind == "const":
            run.append(e)
            continue
        if run:
            parts.append(b.i64(run))
            run = []
        g = e
        if g == list(range(g[0], g[-1] + 1)) and len(g) > 1 and r.random() < 0.5:
            s = b.shape_of(x, start=g[0], end=g[-1] + 1) if b.opset >= 15 else b.slice(
                b.shape_of(x), [g[0]], [g[-1] + 1], tags={"shape"})
            parts.append(b.reduce_vec("ReduceProd", s, keepdims=1) if b.opset >= 11 else b.product(
                [b.dim_vec(x, i) for i in g]))
        else:
            parts.append(b.product([b.dim_vec(x, i) for i in g]))
    if run:
        parts.append(b.i64(run))
    return b.concat(parts)


def emit_reshape(b: Builder, x: V, target, allowzero=0, explicit_az=False) -> V:
    if b.opset < 5:
        attrs = {"shape": list(target)}
        return b.emit1("Reshape", [x], lambda k, ins: spec.reshape(attrs, ins, b.opset), attrs=attrs)
    attrs = {}
    if b.opset >= 14 and (allowzero or explicit_az):
        attrs["allowzero"] = allowzero
    return b.emit1("Reshape", [x, target], lambda k, ins: spec.reshape(attrs, ins, b.opset), attrs=attrs)


def r_reshape(b: Builder):
    r = b.rng
    x = _need(b.data(max_rank=5))
    allowzero = 1 if b.opset >= 14 and r.random() < 0.25 else 0
    for _ in range(3):
        entries = reshape_target(b, x, allowzero, b.opset < 5)
        # the spec model says whether it runs somewhere: retry a little if it never does
        ok = any(_reshape_ok(x.shapes[k], entries, allowzero) for k in range(b.nb) if x.shapes[k] is not None)
        if ok or r.random() < 0.15:
            break
    if b.opset < 5:
        return emit_reshape(b, x, [c for _, c in entries])
    target = build_vec(b, x, entries)
    return emit_reshape(b, x, target, allowzero, explicit_az=r.random() < 0.2)


def _reshape_ok(shape, entries, allowzero):
    vals = []
    for kind, e in entries:
        vals.append(e if kind == "const" else int(np.prod([shape[i] for i in e])))
    try:
        spec.reshape({"allowzero": allowzero}, [(shape, None), ((len(vals),), np.array(vals, np.int64))], 14)
        return True
    except (spec.Invalid, OverflowError):  # (an entry past int64 is no valid shape either)
        return False


# ----------------------------------------------------------------------------------- Expand


def expand_target(b: Builder, x: V) -> V:
    r = b.rng
    rank = x.rank()
    if r.random() < 0.25:
        y = b.data()
        if y is not None:
            return b.shape_of(y)
    if r.random() < 0.15:
        R = r.randint(0, rank)
    else:
        R = rank + r.choice([0, 0, 1, 1, 2])
    entries = []
    other = b.data(min_rank=1)
    for j in range(R):
        xi = j - (R - rank)
        u = r.random()
        if xi < 0:
            if other is not None and u < 0.3:
                entries.append(("vec", b.dim_vec(other, r.randrange(other.rank()))))
            else:
                entries.append(("const", r.choice([0, 1, 1, 2, 3])))
            continue
        sd = x.static_dim(xi)
        if u < 0.35:
            entries.append(("const", 1))
        elif u < 0.7:
            entries.append(("vec", b.dim_vec(x, xi)) if sd is None or r.random() < 0.3 else ("const", sd))
        elif sd == 1 or u < 0.78:
            if other is not None and r.random() < 0.5:
                entries.append(("vec", b.dim_vec(other, r.randrange(other.rank()))))
            else:
                entries.append(("const", r.choice([0, 1, 2, 3])))
        else:
            entries.append(("const", 1))
    return _entries_vec(b, entries)


def _entries_vec(b: Builder, entries: list) -> V:
    """A 1-D int64 shape value from entries ("const", int) and ("vec", a 1-D value): the
    constants in runs, Concat-ed with the computed pieces."""
    if all(k == "const" for k, _ in entries):
        return b.i64([c for _, c in entries])
    parts, run = [], []
    for kind, e in entries:
        if kind == "const":
            run.append(e)
        else:
            if run:
                parts.append(b.i64(run))
                run = []
            parts.append(e)
    if run:
        parts.append(b.i64(run))
    return b.concat(parts)


def emit_expand(b: Builder, x: V, target: V) -> V:
    return b.emit1("Expand", [x, target], lambda k, ins: spec.expand({}, ins), tags={"unbounded"} if not target.ints() else ())


def r_expand(b: Builder):
    x = _need(b.data(max_rank=4))
    return emit_expand(b, x, expand_target(b, x))


# ----------------------------------------------------------------------------------- Tile


def tile_repeats(b: Builder, x: V) -> V:
    r = b.rng
    rank = x.rank()
    if rank and r.random() < 0.2:
        y = b.pick(lambda v: v.rank() == rank and "shape" not in v.tags and v.known() and v is not x)
        if y is not None and all(max(s) <= 3 for s in y.shapes if s):
            return b.shape_of(y)
    entries = []
    for _ in range(rank):
        u = r.random()
        if u < 0.2:
            other = b.data(min_rank=1)
            if other is not None:
                entries.append(("vec", b.dim_vec(other, r.randrange(other.rank()))))
                continue
        entries.append(("const", r.choice([0, 1, 1, 1, 2, 3])))
    return _entries_vec(b, entries)


def emit_tile(b: Builder, x: V, reps: V) -> V:
    return b.emit1("Tile", [x, reps], lambda k, ins: spec.tile({}, ins, b.opset))


def r_tile(b: Builder):
    r = b.rng
    if b.opset < 6:  # Tile-1: (input, tiles, axis), tiles and axis of the input's type
        x = _need(b.data(min_rank=1, float_only=True))
        t, a = r.choice([0, 1, 2, 3]), r.randrange(x.rank())
        tiles = b.const(np.array(t, dtype=np_of(x.dtype)))
        axis = b.const(np.array(a, dtype=np_of(x.dtype)))

        def fn(k, ins):
            out = list(ins[0][0])
            out[a] *= t
            return [(tuple(out), None)]
        return b.emit1("Tile", [x, tiles, axis], fn)
    x = _need(b.data(max_rank=4))
    return emit_tile(b, x, tile_repeats(b, x))


def _const_float(b: Builder, name):
    for t in b.inits:
        if t.name == name:
            return numpy_helper.to_array(t).reshape(-1)[0]
    for n in b.nodes:
        if n.op_type == "Constant" and n.output[0] == name:
            return numpy_helper.to_array(n.attribute[0].t).reshape(-1)[0]
    raise SkipRecipe()


# ----------------------------------------------------------------------------------- shape values


def some_shape_value(b: Builder) -> V:
    r = b.rng
    v = b.shape_vec() if r.random() < 0.5 else None
    if v is None:
        x = _need(b.data(min_rank=1))
        u = r.random()
        if u < 0.5:
            v = b.shape_of(x)
        else:
            v = b.dim_vec(x, r.randrange(x.rank()))
    return v


def int_const_like(b: Builder, v: V, nonzero=False, small=False):
    r = b.rng
    n = r.choice([None, 1]) if r.random() < 0.7 else (v.shapes[0][0] if v.shapes[0] else None)
    pool = [-3, -2, -1, 1, 2, 3, 4, 7] if nonzero else [-3, -1, 0, 1, 2, 3, 5]
    if not small and r.random() < 0.1:
        pool = pool + ([2**31, 2**62, -(2**40)] if not nonzero else [2**31 - 1, 2**33])
    info = np.iinfo(np_of(v.dtype))
    pool = [p for p in pool if info.min <= p <= info.max]
    if n is None:
        return b.const(np.array(r.choice(pool), dtype=np_of(v.dtype)))
    return b.const(np.array([r.choice(pool) for _ in range(n)], dtype=np_of(v.dtype)))


def arith_step(b: Builder, v: V) -> V:
    r = b.rng
    ops = ["Add", "Sub", "Mul", "Neg", "Abs"]
    if b.opset >= 7:
        ops += ["Div", "Div"]
    if b.opset >= 10:
        ops += ["Mod", "Mod"]
    if b.opset >= 12:
        ops += ["Max", "Min"]
    op = r.choice(ops)
    if op in ("Neg", "Abs"):
        return b.emit1(op, [v], lambda k, ins: spec.unary_int(op, {}, ins), tags={"shape"})
    if op in ("Div", "Mod"):
        c = int_const_like(b, v, nonzero=True)
        vals = c.values[0]
        # INT64_MIN / -1 kills onnxruntime (SIGFPE): only divide values the spec model knows
        if not v.ints() or (np.asarray(vals) == -1).any() and any(
                (np.asarray(x) == np.iinfo(x.dtype).min).any() for x in v.values if x is not None):
            raise SkipRecipe()
        attrs = {"fmod": r.choice([0, 1])} if op == "Mod" and r.random() < 0.7 else {}
        if op == "Mod" and v.dtype in (TP.FLOAT, TP.DOUBLE):
            attrs = {"fmod": 1}
        args = [v, c] if r.random() < 0.85 else [c, v]
        if args[1] is v and not all(x is not None and (x != 0).all() for x in v.values):
            args = [v, c]
        return b.binop(op, *args, attrs=attrs)
    if r.random() < 0.3:
        w = b.pick(lambda u: u.dtype == v.dtype and u.ints() and u.rank() is not None and u.rank() <= 1 and u is not v)
        if w is not None:
            return b.binop(op, v, w) if r.random() < 0.7 else b.binop(op, w, v)
    c = int_const_like(b, v)
    return b.binop(op, v, c) if r.random() < 0.7 else b.binop(op, c, v)


def consume_shape_value(b: Builder, v: V):
    """Use an int64 1-D value the way exports do: as an Expand/Tile/Reshape shape, a
    ConstantOfShape shape, or leave it as a graph output."""
    r = b.rng
    if v.dtype != TP.INT64 or v.rank() != 1:
        return
    lens = {s[0] for s in v.shapes if s is not None}
    if len(lens) != 1:
        return
    n = lens.pop()
    vals_ok = [x is not None and (x >= 0).all() and spec.numel(x.tolist()) <= 5000 for x in v.values]
    u = r.random()
    if u < 0.3 and b.opset >= 8 and any(vals_ok):
        x = b.data(max_rank=n)
        if x is not None:
            return emit_expand(b, x, v)
    if u < 0.5 and b.opset >= 6:
        x = b.pick(lambda t: t.rank() == n and "shape" not in t.tags and t.valid_somewhere() and t.dtype != TP.BOOL)
        if x is not None and any(vals_ok):
            return emit_tile(b, x, v)
    if u < 0.7 and b.opset >= 9 and any(vals_ok) and n <= 4:
        return const_of_shape(b, v)
    if u < 0.85 and b.opset >= 5:
        x = _need(b.data())
        return emit_reshape(b, x, v, allowzero=1 if b.opset >= 14 and r.random() < 0.2 else 0)


def const_of_shape(b: Builder, v: V) -> V:
    r = b.rng
    attrs = {}
    u = r.random()
    if u < 0.6:
        dt = r.choice([TP.FLOAT, TP.FLOAT, TP.INT64, TP.INT32, TP.DOUBLE])
        if dt in FLOATS:
            arr = special_floats(b, 1, dt)
        else:
            arr = np.array([r.choice([0, 1, -1, 7])], dtype=np_of(dt))
        attrs["value"] = numpy_helper.from_array(arr, "value")
    else:
        dt, arr = TP.FLOAT, None
    py = {"value": arr} if arr is not None else {}
    return b.emit1("ConstantOfShape", [v], lambda k, ins: spec.constant_of_shape(py, ins, dt), attrs=attrs,
                   out_dtypes=[dt], tags={"unbounded"} if not v.ints() else ())


def r_shape_arith(b: Builder):
    r = b.rng
    if b.opset < 7:
        raise SkipRecipe()
    v = some_shape_value(b)
    int32 = r.random() < 0.25
    if int32:
        v = b.cast(v, TP.INT32)
    for _ in range(r.choice([1, 1, 2, 3, 4])):
        v = arith_step(b, v)
    if int32:
        v = b.cast(v, TP.INT64)
    consume_shape_value(b, v)


def r_narrow_cast(b: Builder):
    r = b.rng
    if b.opset < 7:
        raise SkipRecipe()
    v = some_shape_value(b)
    if r.random() < 0.5:
        v = b.binop("Mul", v, b.i64(r.choice([[255], [256], [65537], [2**31 + 1], [2**32], [129], [-1]])))
        if r.random() < 0.5:
            v = b.binop("Add", v, b.i64([r.choice([1, 127, 2**15, -2])]))
    to = r.choice([TP.INT32, TP.INT16, TP.INT8, TP.UINT8, TP.UINT16, TP.UINT32, TP.BOOL, TP.FLOAT, TP.DOUBLE, TP.FLOAT16])
    w = b.cast(v, to)
    if to in (TP.FLOAT, TP.DOUBLE, TP.FLOAT16) and r.random() < 0.5 and b.opset >= 7:
        w = b.emit1("Mul", [w, b.const(np.array(1.5 if r.random() < 0.5 else -1.0, dtype=np_of(to)))],
                    lambda k, ins: spec.binary("Mul", {}, ins), tags={"shape"})
    back = b.cast(w, TP.INT64)
    if r.random() < 0.5 and b.opset >= 12:
        back = b.binop("Max", back, b.i64([0]))
    consume_shape_value(b, back)


def r_growth(b: Builder):
    """v <- (v+1)*v + 2 (or squaring, or doubling) many times on a dim: values wrap, expressions
    must stay bounded."""
    r = b.rng
    if b.opset < 7:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1))
    s = b.dim_scalar(x, r.randrange(x.rank()))
    kind = r.choice(["poly", "poly", "square", "double", "mixed"])
    n = r.choice([5, 10, 20, 40, 64])
    one, two = b.const(np.array(1, np.int64)), b.const(np.array(2, np.int64))
    for i in range(n):
        if kind == "poly" or (kind == "mixed" and i % 3 == 0):
            s = b.binop("Add", b.binop("Mul", b.binop("Add", s, one), s), two)
        elif kind == "square" or (kind == "mixed" and i % 3 == 1):
            s = b.binop("Mul", s, s)
        else:
            s = b.binop("Add", s, s)
        if kind == "mixed" and i % 3 == 2 and b.opset >= 10:
            s = b.binop("Add", b.binop("Mod", s, b.const(np.array(7, np.int64))), s)
    if r.random() < 0.5 and b.opset >= 10:
        small = b.binop("Add", b.binop("Mod", s, b.const(np.array(3, np.int64)), attrs={"fmod": 0}), one)
        y = _need(b.data(min_rank=1))
        reps = b.concat([b.unsqueeze0(small)] + ([b.i64([1] * (y.rank() - 1))] if y.rank() > 1 else []))
        if b.opset >= 6:
            emit_tile(b, y, reps)


def r_where_equal(b: Builder):
    """The torch export of expand(-1, ...): Where(Equal(shape, -1), ones, shape) -> Expand."""
    r = b.rng
    if b.opset < 9:
        raise SkipRecipe()
    x = _need(b.data(max_rank=4))
    rank = x.rank()
    R = rank + r.choice([0, 1])
    ents = []
    for j in range(R):
        xi = j - (R - rank)
        if xi >= 0 and r.random() < 0.6:
            ents.append(-1)
        else:
            ents.append(r.choice([1, 2, 3]) if xi < 0 or x.static_dim(xi) == 1 else -1)
    if r.random() < 0.5:
        shape = b.i64(ents)
    else:
        parts = [b.dim_vec(x, j - (R - rank)) if e == -1 and r.random() < 0.5 and j - (R - rank) >= 0 else b.i64([e])
                 for j, e in enumerate(ents)]
        shape = b.concat(parts) if parts else b.i64([])
    eq = b.emit1("Equal", [shape, b.i64([-1]) if r.random() < 0.5 else b.const(np.array(-1, np.int64))],
                 lambda k, ins: spec.binary("Equal", {}, ins), out_dtypes=[TP.BOOL], tags={"shape"})
    ones = const_of_shape_ones(b, shape)
    t = b.emit1("Where", [eq, ones, shape], lambda k, ins: spec.where({}, ins), tags={"shape"}, out_dtypes=[TP.INT64])
    if r.random() < 0.7:
        emit_expand(b, x, t)
    else:
        consume_shape_value(b, t)


def const_of_shape_ones(b: Builder, like: V) -> V:
    shp = b.shape_of(like)
    attrs = {"value": numpy_helper.from_array(np.array([1], np.int64), "value")}
    return b.emit1("ConstantOfShape", [shp], lambda k, ins: spec.constant_of_shape({"value": np.array([1], np.int64)}, ins, TP.INT64),
                   attrs=attrs, out_dtypes=[TP.INT64], tags={"shape"})


def r_range(b: Builder):
    r = b.rng
    x = _need(b.data(min_rank=1))
    dt = r.choice([TP.INT64, TP.INT64, TP.INT32, TP.FLOAT])
    lim = b.dim_scalar(x, r.randrange(x.rank()))
    if r.random() < 0.4:
        lim = b.binop(r.choice(["Add", "Mul", "Sub"]), lim, b.const(np.array(r.choice([1, 2, -1, 3]), np.int64)))
    start = b.const(np.array(r.choice([0, 0, 1, -2, 5]), np.int64))
    delta = b.const(np.array(r.choice([1, 1, 2, -1, 3]), np.int64))
    if dt != TP.INT64:
        lim, start, delta = (b.cast(t, dt) for t in (lim, start, delta))
    ins = [start, lim, delta]
    if dt == TP.FLOAT:  # float casts are not tracked by the spec model: count from the int sources
        y = b.emit1("Range", ins, lambda k, ins_: _range_from_ints(b, ins, k), out_dtypes=[dt])
    else:
        y = b.emit1("Range", ins, lambda k, ins_: spec.range_op({}, ins_), out_dtypes=[dt])
    u = r.random()
    if u < 0.4:
        s = b.shape_of(y)
        consume_shape_value(b, s)
    elif u < 0.6 and dt == TP.INT64:
        b.gather(x, y, axis=r.randrange(x.rank()), tags=())


def _unknown(k, ins):
    raise spec.Unknown()


def need_scalar(v):
    if v is None:
        raise spec.Unknown()
    return np.asarray(v).reshape(-1)[0]


def _range_from_ints(b: Builder, ins, k):
    # the Cast-to-float inputs have no tracked value; their int sources do
    srcs = []
    for v in ins:
        node = next(n for n in b.nodes if v.name in n.output)
        srcs.append(b.vals[node.input[0]].values[k])
    st, li, de = (int(need_scalar(s)) for s in srcs)
    if de == 0:
        raise spec.Invalid()
    n = max(int(np.ceil((li - st) / de)), 0)
    return [((n,), None)]


def r_const_of_shape(b: Builder):
    if b.opset < 9:
        raise SkipRecipe()
    v = some_shape_value(b)
    if v.rank() != 1 or not v.ints():
        raise SkipRecipe()
    y = const_of_shape(b, v)
    if b.rng.random() < 0.5:
        x = b.data()
        if x is not None and x.dtype == y.dtype:
            b.binop(b.rng.choice(["Add", "Mul", "Max"]) if b.opset >= 8 else "Add", x, y, tags=())


def r_reduce_shape(b: Builder):
    r = b.rng
    x = _need(b.data(min_rank=1))
    s = b.shape_of(x)
    op = r.choice(["ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1"])
    v = b.reduce_vec(op, s, keepdims=r.choice([0, 1]))
    if v.rank() == 0:
        v = b.unsqueeze0(v)
    consume_shape_value(b, v)


def r_size(b: Builder):
    r = b.rng
    x = _need(b.data())
    s = b.emit1("Size", [x], lambda k, ins: spec.size_op({}, ins), out_dtypes=[TP.INT64], tags={"shape"})
    if r.random() < 0.7 and b.opset >= 5:
        y = _need(b.data())
        v = b.unsqueeze0(s)
        if r.random() < 0.5:
            v = b.concat([v, b.i64([r.choice([1, -1])])])
        emit_reshape(b, y if r.random() < 0.4 else x, v)


def r_gather_shape(b: Builder):
    """Gather on a shape value with index vectors (permutations, repeats, negative indices)."""
    r = b.rng
    x = _need(b.data(min_rank=1))
    s = b.shape_of(x)
    n = x.rank()
    lo = -n if b.opset >= 11 else 0
    idx = [r.randint(lo, n - 1) for _ in range(r.choice([1, 2, n, n + 1]))]
    if r.random() < 0.05:
        idx[0] = n  # out of range: the runtime fails
    v = b.gather(s, b.i64(idx))
    if r.random() < 0.3 and b.opset >= 10:
        v = b.slice(v, [r.choice([0, -1, 1, -INT64_MAX, INT64_MIN])], [r.choice([INT64_MAX, -1, 2, INT32_MAX, -INT64_MAX])],
                    axes=[0] if r.random() < 0.5 else None,
                    steps=[r.choice([1, -1, 2, -2])] if r.random() < 0.5 else None, tags={"shape"})
    consume_shape_value(b, v)


def r_unsqueeze_squeeze_value(b: Builder):
    r = b.rng
    x = _need(b.data(min_rank=1))
    s = b.dim_scalar(x, r.randrange(x.rank()))
    v = b.unsqueeze0(s)
    if r.random() < 0.5:
        v = b.unsqueeze0(v, axis=r.choice([0, 1, -1]) if b.opset >= 11 else 0)
        v = b.squeeze_v(v, [r.choice([0, -2])] if b.opset >= 11 else [0]) if r.random() < 0.7 else b.squeeze_v(v, None)
        if v.rank() == 0:
            v = b.unsqueeze0(v)
    consume_shape_value(b, v)


# ----------------------------------------------------------------------------------- float data


UNARY_EXACT = ["Relu", "Neg", "Abs", "Floor", "Ceil", "Sqrt", "Reciprocal"]
UNARY_TRANSC = ["Exp", "Log", "Sin", "Cos", "Tanh", "Sigmoid", "Erf", "Softplus", "Atan"]


def r_float_elementwise(b: Builder):
    r = b.rng
    x = _need(b.data(float_only=True))
    u = r.random()
    if u < 0.5:
        ops = ["Add", "Sub", "Mul", "Div"] + (["Max", "Min"] if b.opset >= 8 else []) + (["Pow"] if b.opset >= 7 else [])
        op = r.choice(ops)
        c = float_const(b, x, fed=r.random() < 0.1)
        args = [x, c] if r.random() < 0.7 else [c, x]
        return b.binop(op, *args, tags=())
    ops = UNARY_EXACT + (["Sign"] if b.opset >= 9 else []) + (["Round"] if b.opset >= 11 else []) + (
        UNARY_TRANSC if b.opset >= 9 else [])
    op = r.choice(ops)
    return b.emit1(op, [x], lambda k, ins: spec.same({}, ins))


def r_float_const_fold(b: Builder):
    """Constant-only float math (folding must be bit-exact or not happen), added to data."""
    r = b.rng
    if b.opset < 9:
        raise SkipRecipe()
    x = _need(b.data(float_only=True))
    dt = x.dtype
    c = float_const(b, x)
    for _ in range(r.choice([1, 2, 3])):
        u = r.random()
        if u < 0.4:
            op = r.choice(UNARY_EXACT + UNARY_TRANSC)
            c = b.emit1(op, [c], lambda k, ins: spec.same({}, ins))
        elif u < 0.75:
            op = r.choice(["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"])
            c = b.binop(op, c, float_const(b, x, dtype=dt), tags=())
        elif u < 0.9:
            op = r.choice(["ReduceSum", "ReduceMax", "ReduceMean", "ReduceProd", "ReduceLogSumExp", "ReduceSumSquare"])
            attrs = {"keepdims": 1}
            if r.random() < 0.5 and (b.opset < 18 and op != "ReduceSum" or b.opset < 13):
                attrs["axes"] = [-1] if c.rank() else []
            cr = c
            c = b.emit1(op, [cr], lambda k, ins, a=attrs, o=op: spec.reduce_op(o, a, ins, False))
        else:
            to = TP.DOUBLE if dt == TP.FLOAT else TP.FLOAT
            c = b.cast(b.cast(c, to, tags=()), dt, tags=())
    return b.binop(r.choice(["Add", "Mul", "Sub"]), x, c, tags=())


def r_tile_uniform(b: Builder):
    """Tile/Expand of small constants that look uniform but are not bit-equal ([0.0, -0.0], NaNs
    with different payloads)."""
    r = b.rng
    if b.opset < 8:
        raise SkipRecipe()
    vals = r.choice([[0.0, -0.0], [-0.0, -0.0], [np.nan, np.nan], [SNAN32, np.nan], [NAN_PAYLOAD32, np.nan],
                     [1.0, 1.0], [NEG_QNAN32, np.nan], [np.inf, np.inf]])
    arr = np.array(vals, dtype=np.float32)
    if r.random() < 0.5:
        arr = arr.reshape(2, 1)
    c = b.const(arr, dtype=TP.FLOAT)
    x = b.data(float_only=True)
    if x is not None and x.rank() >= 1 and r.random() < 0.6:
        reps_v = [b.dim_vec(x, r.randrange(x.rank())) if r.random() < 0.5 else b.i64([r.choice([1, 2, 3])])
                  for _ in range(arr.ndim)]
        reps = b.concat(reps_v)
    else:
        reps = b.i64([r.choice([1, 2, 3]) for _ in range(arr.ndim)])
    t = emit_tile(b, c, reps) if r.random() < 0.7 else emit_expand(b, c, b.i64([r.choice([1, 2])] * arr.ndim))
    if x is not None and r.random() < 0.5 and x.dtype == TP.FLOAT:
        b.binop("Add", x, t, tags=())


def reduce_node(b: Builder, op, x: V, axes, keepdims=None, noop=None) -> V:
    attrs = {}
    if keepdims is not None:
        attrs["keepdims"] = keepdims
    from_input = (op == "ReduceSum" and b.opset >= 13) or (b.opset >= 18 and op.startswith("Reduce"))
    if from_input:
        if noop is not None:
            attrs["noop_with_empty_axes"] = noop
        ins = [x] + ([b.i64(axes)] if axes is not None else [])
        return b.emit1(op, ins, lambda k, ins_: spec.reduce_op(op, attrs, ins_, True), attrs=attrs)
    if axes is not None:
        attrs["axes"] = list(axes)
    return b.emit1(op, [x], lambda k, ins_: spec.reduce_op(op, attrs, ins_, False), attrs=attrs)


def random_axes(b: Builder, rank):
    r = b.rng
    if rank == 0:
        return None if r.random() < 0.7 else []
    u = r.random()
    if u < 0.2:
        return None
    if u < 0.25:
        return []
    k = r.randint(1, rank)
    axes = r.sample(range(rank), k)
    return [a - rank if r.random() < 0.4 and b.opset >= 11 else a for a in axes]


def r_reduce_data(b: Builder):
    r = b.rng
    x = _need(b.data())
    if x.dtype == TP.BOOL:
        raise SkipRecipe()
    if r.random() < 0.15 and x.rank() >= 1:
        op = r.choice(["ArgMax", "ArgMin"])
        attrs = {"axis": r.randrange(x.rank()), "keepdims": r.choice([0, 1])}
        if b.opset >= 12 and r.random() < 0.3:
            attrs["select_last_index"] = 1
        return b.emit1(op, [x], lambda k, ins: spec.argmax(attrs, ins), attrs=attrs, out_dtypes=[TP.INT64])
    ops = ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceMean"]
    if x.dtype in FLOATS:
        ops += ["ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare", "ReduceLogSum"]
    op = r.choice(ops)
    return reduce_node(b, op, x, random_axes(b, x.rank()), keepdims=r.choice([None, 0, 1]),
                       noop=r.choice([None, 0, 1]) if r.random() < 0.3 else None)


def r_expand_reduce(b: Builder):
    """Reduce over copies: Expand or Tile, then ReduceMax/Min/Sum/Prod over (possibly empty)
    broadcast axes -- what reduce-broadcast and reduce-size-one rewrite."""
    r = b.rng
    if b.opset < 8:
        raise SkipRecipe()
    x = _need(b.data(max_rank=3))
    rank = x.rank()
    if r.random() < 0.6:
        # new leading axes and size-1 axes broadcast to symbols or 0
        other = b.data(min_rank=1)
        lead = []
        for _ in range(r.choice([1, 1, 2])):
            if other is not None and r.random() < 0.6:
                lead.append(b.dim_vec(other, r.randrange(other.rank())))
            else:
                lead.append(b.i64([r.choice([0, 1, 2, 3])]))
        tail = [b.i64([1] * rank)] if rank else []
        y = emit_expand(b, x, b.concat(lead + tail))
    else:
        if rank == 0:
            raise SkipRecipe()
        y = emit_tile(b, x, tile_repeats(b, x))
    op = r.choice(["ReduceMax", "ReduceMin", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceMean"])
    yr = y.rank() or 0
    axes = r.choice([[0], [0], list(range(yr)), None, [-yr] if yr else [0]]) if yr else None
    return reduce_node(b, op, y, axes, keepdims=r.choice([None, 0, 1]))


def r_layout(b: Builder):
    r = b.rng
    x = _need(b.data())
    rank = x.rank()
    u = r.random()
    if u < 0.3 and rank >= 2:
        p1 = list(range(rank))
        r.shuffle(p1)
        y = b.emit1("Transpose", [x], lambda k, ins: spec.transpose({"perm": p1}, ins), attrs={"perm": p1})
        p2 = list(range(rank))
        if r.random() < 0.5:
            p2 = [p1.index(i) for i in range(rank)]  # the inverse
        else:
            r.shuffle(p2)
        return b.emit1("Transpose", [y], lambda k, ins: spec.transpose({"perm": p2}, ins), attrs={"perm": p2})
    if u < 0.45 and (b.opset >= 9 or x.dtype in FLOATS):
        axis = r.randint(-rank if b.opset >= 11 else 0, rank)
        y = b.emit1("Flatten", [x], lambda k, ins: spec.flatten({"axis": axis}, ins), attrs={"axis": axis})
        if r.random() < 0.5 and b.opset >= 5:
            return emit_reshape(b, y, b.shape_of(x))
        return y
    if u < 0.6:
        axis = r.randint(0, rank)
        if b.opset < 13:
            y = b.emit1("Unsqueeze", [x], lambda k, ins: spec.unsqueeze({"axes": [axis]}, ins, b.opset), attrs={"axes": [axis]})
            return b.emit1("Squeeze", [y], lambda k, ins: spec.squeeze({"axes": [axis]}, ins, b.opset), attrs={"axes": [axis]})
        y = b.emit1("Unsqueeze", [x, b.i64([axis])], lambda k, ins: spec.unsqueeze({}, ins, b.opset))
        sq = [b.i64([axis - rank - 1 if r.random() < 0.5 else axis])] if r.random() < 0.8 else []
        return b.emit1("Squeeze", [y] + sq, lambda k, ins: spec.squeeze({}, ins, b.opset))
    if u < 0.7:
        return b.emit1("Identity", [x], lambda k, ins: spec.identity({}, ins))
    if u < 0.85 and b.opset >= 6:
        return b.cast(x, x.dtype, tags=())
    if x.dtype in (TP.FLOAT, TP.DOUBLE) and b.opset >= 6:
        mid = r.choice([TP.DOUBLE, TP.FLOAT16, TP.FLOAT, TP.INT32, TP.BOOL]) if b.opset >= 9 else TP.DOUBLE
        return b.cast(b.cast(x, mid, tags=()), x.dtype, tags=())
    raise SkipRecipe()


def r_cancel_reshape(b: Builder):
    r = b.rng
    if b.opset < 5:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1, float_only=True))
    flat = emit_reshape(b, x, b.i64(r.choice([[-1], [0, -1], [1, -1], [-1, 1]])))
    if r.random() < 0.5:
        y = b.emit1(r.choice(["Relu", "Neg", "Abs"]), [flat], lambda k, ins: spec.same({}, ins))
    else:
        y = b.binop(r.choice(["Add", "Mul"]), flat, b.const(special_floats(b, 1, x.dtype).reshape(())), tags=())
    target = b.shape_of(x) if r.random() < 0.7 else b.shape_of(b.data() or x)
    return emit_reshape(b, y, target)


def r_neutral(b: Builder):
    """x*1, x/1, x-0, x+(-0.0), x+0.0, 1*x (some with a constant that broadcasts to a larger
    shape, or an initializer that is an input): what neutral-elements may and may not drop."""
    r = b.rng
    x = _need(b.data())
    if x.dtype == TP.BOOL:
        raise SkipRecipe()
    op, val = r.choice([("Mul", 1.0), ("Div", 1.0), ("Sub", 0.0), ("Add", -0.0), ("Add", 0.0), ("Sub", -0.0),
                        ("Mul", -1.0), ("Pow", 1.0), ("Max", -np.inf), ("Min", np.inf)])
    if op in ("Max", "Min") and b.opset < 8:
        op = "Mul"
    npd = np_of(x.dtype)
    if npd is None or (np.issubdtype(npd, np.integer) and (np.isinf(val) or val != int(val))):
        raise SkipRecipe()
    if np.issubdtype(npd, np.integer) and op == "Pow" and b.opset < 12:
        raise SkipRecipe()
    shape = r.choice([(), (1,), (1, 1), (2, 1), (1, 1, 1, 1)])
    fed = None
    if r.random() < 0.15:
        fed = np.full(shape, 2 if op in ("Mul", "Div", "Pow") else 1, dtype=npd)
    c = b.const(np.full(shape, val, dtype=npd), fed=fed)
    if np.issubdtype(npd, np.integer) and op == "Pow":
        b.int_pow = True
    args = [x, c] if r.random() < 0.8 or op in ("Sub", "Div", "Pow") else [c, x]
    return b.binop(op, *args, tags=())


def r_fed_initializer(b: Builder):
    """An initializer that is also a graph input, fed another value at run time: not a constant."""
    r = b.rng
    u = r.random()
    if u < 0.35 and b.opset >= 6:
        x = _need(b.data(min_rank=1, max_rank=4))
        n = x.rank()
        reps = b.i64([1] * n, fed=[r.choice([1, 2, 3]) for _ in range(n)])
        return emit_tile(b, x, reps)
    if u < 0.6 and b.opset >= 5:
        x = _need(b.data(min_rank=1))
        # the fed value has the stored one's shape (onnxruntime checks it against the input's)
        stored, fed = r.choice([([0, -1], [-1, 1]), ([1, -1], [0, -1]), ([-1, 1], [1, -1]), ([1, -1, 1], [-1, 1, 1]),
                                ([-1], [-1]), ([0, -1], [0, -1])])
        return emit_reshape(b, x, b.i64(stored, fed=fed))
    if u < 0.8 and b.opset >= 8:
        x = _need(b.data(max_rank=3))
        stored = [1] * max(x.rank(), 1)
        fed = list(stored)
        fed[r.randrange(len(fed))] = r.choice([0, 2])
        return emit_expand(b, x, b.i64(stored, fed=fed))
    x = _need(b.data(float_only=True))
    w = float_const(b, x, fed=True)
    return b.binop(r.choice(["Mul", "Add", "Div"]), x, w, tags=())


def r_slice_data(b: Builder):
    r = b.rng
    x = _need(b.data(min_rank=1))
    rank = x.rank()
    k = r.randint(1, rank)
    axes = r.sample(range(rank), k)
    wild = [0, 1, 2, -1, -2, 5, INT64_MAX, INT64_MIN, INT32_MAX, -(2**31), -INT64_MAX, 1000, -1000]
    starts, ends, steps = [], [], []
    for a in axes:
        starts.append(r.choice(wild))
        ends.append(r.choice(wild))
        steps.append(r.choice([1, 1, -1, -1, 2, -2, 3, INT64_MAX, -INT64_MAX]) if b.opset >= 10 else 1)
    if b.opset < 10:
        return b.slice(x, starts, ends, axes=axes if r.random() < 0.7 else None)
    if r.random() < 0.3:
        # computed bounds: a dim of the input, maybe negated
        i = r.randrange(k)
        d = b.dim_vec(x, axes[i])
        if r.random() < 0.5:
            d = b.emit1("Neg", [d], lambda kk, ins: spec.unary_int("Neg", {}, ins), tags={"shape"})
        others_s = b.i64(starts)
        starts_v = b.concat([b.slice(others_s, [0], [i], tags={"shape"}), d, b.slice(others_s, [i + 1], [k], tags={"shape"})]) \
            if k > 1 else d
        starts = starts_v
    neg_axes = [a - rank if r.random() < 0.4 else a for a in axes]
    form = r.random()
    if form < 0.3 and all(s == 1 for s in steps):
        if neg_axes == list(range(rank))[:k] and r.random() < 0.5:
            return b.slice(x, starts, ends, tags=())
        return b.slice(x, starts, ends, axes=neg_axes, tags=())
    return b.slice(x, starts, ends, axes=neg_axes if r.random() < 0.8 else None, steps=steps, tags=())


def r_gather_data(b: Builder):
    r = b.rng
    x = _need(b.data(min_rank=1))
    rank = x.rank()
    axis = r.randrange(rank)
    lo = -2 if b.opset >= 11 else 0
    shape = r.choice([(), (1,), (2,), (2, 2)])
    idx = np.array([r.randint(lo, 1) for _ in range(int(np.prod(shape)))], dtype=np.int64).reshape(shape)
    ax = axis - rank if r.random() < 0.3 and b.opset >= 11 else axis
    return b.gather(x, b.const(idx), axis=ax, tags=())


def r_split(b: Builder):
    r = b.rng
    x = _need(b.data(min_rank=1))
    rank = x.rank()
    axis = r.randrange(rank)
    n = r.choice([2, 3])
    attrs = {"axis": axis}
    ins = [x]
    if b.opset >= 18 and r.random() < 0.5:
        attrs["num_outputs"] = n
    elif b.opset >= 18 and x.static_dim(axis) is None:
        attrs["num_outputs"] = n
    elif r.random() < 0.5:
        sd = x.static_dim(axis)
        if sd is None or sd > 2**63 - 1:  # (no int64 split size holds it)
            raise SkipRecipe()
        sizes = [sd // n] * (n - 1) + [sd - sd // n * (n - 1)]
        if b.opset >= 13:
            ins.append(b.i64(sizes))
        else:
            attrs["split"] = sizes
    if b.opset >= 18 and len(ins) == 1 and "num_outputs" not in attrs:
        attrs["num_outputs"] = n  # Split-18 needs one of the two
    py = dict(attrs)
    return b.emit("Split", ins, lambda k, ins_: spec.split(py, ins_, b.opset, n), attrs=attrs, n_out=n)


def r_nonzero(b: Builder):
    """A data-dependent dim (NonZero) flowing into shapes: it must stay unknown, never be wrong."""
    r = b.rng
    if b.opset < 9:
        raise SkipRecipe()
    x = _need(b.data(float_only=True))
    pos = b.emit1("Greater", [x, b.const(np.array(0.0, dtype=np_of(x.dtype)))], lambda k, ins: spec.binary("Greater", {}, ins),
                  out_dtypes=[TP.BOOL])
    nz = b.emit1("NonZero", [pos], _unknown, out_dtypes=[TP.INT64])
    s = b.shape_of(nz)
    if r.random() < 0.5:
        y = _need(b.data())
        emit_reshape(b, y, b.concat([b.i64([-1]), b.gather(s, b.i64([0]))]))


# ----------------------------------------------------------------------------------- control flow


def _vi(name, dtype, shape=None):
    return helper.make_tensor_value_info(name, dtype, shape)


def r_if(b: Builder):
    r = b.rng
    if b.opset < 11:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1, float_only=True))
    d = b.dim_scalar(x, r.randrange(x.rank()))
    c = b.const(np.array(r.choice([0, 1, 2]), np.int64))
    cond = b.emit1("Greater", [d, c], lambda k, ins: spec.binary("Greater", {}, ins), out_dtypes=[TP.BOOL], tags={"shape"})
    then_out, else_out = b.fresh("then_y"), b.fresh("else_y")
    kinds = ["flatten", "same", "neg", "reshape_minus1", "unsq"]
    tk, ek = r.choice(kinds), r.choice(kinds)

    def branch(kind, out):
        nodes = []
        if kind == "flatten":
            nodes.append(helper.make_node("Flatten", [x.name], [out], axis=1))
        elif kind == "same":
            nodes.append(helper.make_node("Identity", [x.name], [out]))
        elif kind == "neg":
            nodes.append(helper.make_node("Neg", [x.name], [out]))
        elif kind == "reshape_minus1":
            cn = b.fresh("ifc")
            nodes.append(helper.make_node("Constant", [], [cn], value=numpy_helper.from_array(np.array([-1], np.int64))))
            nodes.append(helper.make_node("Reshape", [x.name, cn], [out]))
        else:
            cn = b.fresh("ifc")
            if b.opset >= 13:
                nodes.append(helper.make_node("Constant", [], [cn], value=numpy_helper.from_array(np.array([0], np.int64))))
                nodes.append(helper.make_node("Unsqueeze", [x.name, cn], [out]))
            else:
                nodes.append(helper.make_node("Unsqueeze", [x.name], [out], axes=[0]))
        return helper.make_graph(nodes, b.fresh("branch"), [], [_vi(out, x.dtype)])

    def shape_for(kind, s):
        if kind == "flatten":
            return (s[0], spec.numel(s[1:]))
        if kind in ("same", "neg"):
            return s
        if kind == "reshape_minus1":
            return (spec.numel(s),)
        return (1,) + tuple(s)

    def fn(k, ins):
        (cs, cv), (xs, _) = ins
        if cv is None:
            raise spec.Unknown()
        return [(shape_for(tk if bool(cv) else ek, xs), None)]
    y = b.emit1("If", [cond, x], fn, out_dtypes=[x.dtype], attrs={"then_branch": branch(tk, then_out), "else_branch": branch(ek, else_out)})
    # the If node reads x through the outer scope only: drop it from the node's inputs
    node = b.nodes[-1]
    del node.input[1:]
    return y


def r_numel_guard(b: Builder):
    """What ``if x.numel():`` exports to: a 0-d bool made from a size (Size, a gathered dim, or
    either through a narrowing uint8 cast that wraps), read by If, Where, Not or a Cast."""
    r = b.rng
    if b.opset < 11:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1, float_only=True))
    if r.random() < 0.5:
        n = b.emit1("Size", [x], lambda k, ins: spec.size_op({}, ins), out_dtypes=[TP.INT64], tags={"shape"})
    else:
        n = b.dim_scalar(x, r.randrange(x.rank()))
    if r.random() < 0.3:
        n = b.cast(n, TP.UINT8)
    c = b.cast(n, TP.BOOL)
    use = r.choice(["if", "where", "not", "cast"])
    if use == "not":
        return b.emit1("Not", [c], lambda k, ins: _not_spec(ins), out_dtypes=[TP.BOOL], tags={"shape"})
    if use == "cast":
        return b.cast(c, r.choice([TP.FLOAT, TP.INT64, TP.INT32]), tags=())
    if use == "where":
        neg = b.emit1("Neg", [x], lambda k, ins: [(ins[0][0], None)])
        return b.emit1("Where", [c, x, neg], lambda k, ins: [(spec.bcast(ins[0][0], ins[1][0], ins[2][0]), None)])
    then_out, else_out = b.fresh("then_y"), b.fresh("else_y")
    then_g = helper.make_graph([helper.make_node("Neg", [x.name], [then_out])], b.fresh("branch"), [],
                               [_vi(then_out, x.dtype)])
    else_g = helper.make_graph([helper.make_node("Identity", [x.name], [else_out])], b.fresh("branch"), [],
                               [_vi(else_out, x.dtype)])
    y = b.emit1("If", [c, x], lambda k, ins: [(tuple(ins[1][0]), None)], out_dtypes=[x.dtype],
                attrs={"then_branch": then_g, "else_branch": else_g})
    del b.nodes[-1].input[1:]  # (x is read through the outer scope)
    return y


def _not_spec(ins):
    (s, v), = ins
    return [(tuple(s), None if v is None else np.logical_not(v))]


def r_failing_branch(b: Builder):
    """Code that may not run holding a node that fails whenever it runs: an If under a condition
    computed from tensor data (or from sizes) with a branch that squeezes an axis of size > 1,
    reshapes to a count that never matches, or multiplies mismatched matrices -- on shapes
    onnxruntime's load sees, or on shapes only a Shape value tells. The model runs where the
    other branch is taken; onnxruntime refuses it at load where it sees the failure."""
    r = b.rng
    if b.opset < 13:
        raise SkipRecipe()
    x = _need(b.data(min_rank=2, max_rank=3, float_only=True))
    if r.random() < 0.5:  # through a Shape value: the dims only values tell
        x = emit_reshape(b, x, b.shape_of(x))
    if r.random() < 0.6:  # a data condition
        mx = b.emit1("ReduceMax", [x], lambda k, ins: [((), None)] if 0 not in ins[0][0] else _raise_unknown(),
                     attrs={"keepdims": 0})
        zero = b.const(np.array(0, dtype=np_of(x.dtype)))
        cond = b.emit1("Greater", [mx, zero], lambda k, ins: [((), None)], out_dtypes=[TP.BOOL])
    else:  # a size condition
        n = b.emit1("Size", [x], lambda k, ins: spec.size_op({}, ins), out_dtypes=[TP.INT64], tags={"shape"})
        cond = b.cast(n, TP.BOOL)
    kind = r.choice(["squeeze", "reshape", "matmul"])
    bad_out, good_out = b.fresh("bad_y"), b.fresh("good_y")
    cn = b.fresh("ifc")
    if kind == "squeeze":
        axis = next((i for i in range(x.rank()) if all(s is None or s[i] != 1 for s in x.shapes)), None)
        if axis is None:
            raise SkipRecipe()
        nodes = [helper.make_node("Constant", [], [cn], value=numpy_helper.from_array(np.array([axis], np.int64))),
                 helper.make_node("Squeeze", [x.name, cn], [bad_out])]
    elif kind == "reshape":
        nodes = [helper.make_node("Constant", [], [cn], value=numpy_helper.from_array(np.array([7, 11, 13], np.int64))),
                 helper.make_node("Reshape", [x.name, cn], [bad_out])]
    else:
        last = x.static_dim(x.rank() - 1)
        inner = (last or 3) + 1
        nodes = [helper.make_node("Constant", [], [cn], value=numpy_helper.from_array(
                     np.ones((inner, 2), dtype=np_of(x.dtype)))),
                 helper.make_node("MatMul", [x.name, cn], [bad_out])]
    bad = helper.make_graph(nodes, b.fresh("branch"), [], [_vi(bad_out, x.dtype)])
    good = helper.make_graph([helper.make_node("Identity", [x.name], [good_out])], b.fresh("branch"), [],
                             [_vi(good_out, x.dtype)])
    bad_first = r.random() < 0.5

    def fn(k, ins):
        (cs, cv), (xs, _) = ins
        if cv is None:
            raise spec.Unknown()
        if bool(cv) == bad_first:
            raise spec.Invalid("the failing branch is taken")
        return [(tuple(xs), None)]
    y = b.emit1("If", [cond, x], fn, out_dtypes=[x.dtype],
                attrs={"then_branch": bad if bad_first else good, "else_branch": good if bad_first else bad})
    del b.nodes[-1].input[1:]  # (x is read through the outer scope)
    return y


def _raise_unknown():
    raise spec.Unknown()


# Loop and Scan make a trip per row even of an empty tensor: no more than this many
MAX_SCAN_TRIPS = 10_000


def r_loop(b: Builder):
    r = b.rng
    if b.opset < 11:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1, max_rank=3, float_only=True))
    rank = x.rank()
    kind = r.choice(["add", "concat", "flatten_once", "scan_out"])
    use_dim = r.random() < 0.7
    if use_dim:
        axis = r.randrange(rank)
        if any(sh is not None and sh[axis] > MAX_SCAN_TRIPS for sh in x.shapes):
            raise SkipRecipe()  # a trip count of 2**31 (a dim of an empty tensor) never ends
        m = b.dim_scalar(x, axis)
    else:
        m = b.const(np.array(r.choice([0, 1, 2, 3]), np.int64))
    it, cin, sin = b.fresh("it"), b.fresh("cond_in"), b.fresh("s_in")
    cout, sout, scan = b.fresh("cond_out"), b.fresh("s_out"), b.fresh("scan")
    nodes = [helper.make_node("Identity", [cin], [cout])]
    if kind == "add" or kind == "scan_out":
        one = b.fresh("one")
        nodes.append(helper.make_node("Constant", [], [one], value=numpy_helper.from_array(np.array(1.0, dtype=np_of(x.dtype)))))
        nodes.append(helper.make_node("Add", [sin, one], [sout]))
    elif kind == "concat":
        nodes.append(helper.make_node("Concat", [sin, x.name], [sout], axis=0))
    else:
        sh = b.fresh("sh")
        nodes.append(helper.make_node("Constant", [], [sh], value=numpy_helper.from_array(np.array([-1], np.int64))))
        nodes.append(helper.make_node("Reshape", [sin, sh], [sout]))
    outs = [_vi(cout, TP.BOOL, []), _vi(sout, x.dtype)]
    if kind == "scan_out":
        nodes.append(helper.make_node("Identity", [sin], [scan]))
        outs.append(_vi(scan, x.dtype))
    body = helper.make_graph(nodes, b.fresh("body"), [_vi(it, TP.INT64, []), _vi(cin, TP.BOOL, []), _vi(sin, x.dtype)], outs)
    cond = b.const(np.array(True))

    def fn(k, ins):
        (ms, mv), _, (xs, _) = ins
        n = int(need_scalar(mv))
        s = tuple(xs)
        if kind == "concat":
            s = (xs[0] * (n + 1),) + tuple(xs[1:])
        elif kind == "flatten_once" and n >= 1:
            s = (spec.numel(xs),)
        res = [(s, None)]
        if kind == "scan_out":
            res.append(((n,) + tuple(xs), None))
        return res
    n_out = 2 if kind == "scan_out" else 1
    return b.emit("Loop", [m, cond, x], fn, attrs={"body": body}, n_out=n_out, out_dtypes=[x.dtype] * n_out)


def r_scan(b: Builder):
    if b.opset < 11:
        raise SkipRecipe()
    x = _need(b.data(min_rank=2, max_rank=3, float_only=True))
    if any(sh is not None and sh[0] > MAX_SCAN_TRIPS for sh in x.shapes):
        raise SkipRecipe()  # one trip per row, even of an empty tensor: 2**63 rows never end
    s0 = b.gather(x, b.const(np.array(0, np.int64)), axis=0, tags=())
    sin, xt, sout, yout = b.fresh("s_in"), b.fresh("x_t"), b.fresh("s_out"), b.fresh("y_t")
    nodes = [helper.make_node("Add", [sin, xt], [sout]), helper.make_node("Mul", [xt, xt], [yout])]
    body = helper.make_graph(nodes, b.fresh("scan_body"), [_vi(sin, x.dtype), _vi(xt, x.dtype)],
                             [_vi(sout, x.dtype), _vi(yout, x.dtype)])

    def fn(k, ins):
        (ss, _), (xs, _) = ins
        return [(tuple(xs[1:]), None), (tuple(xs), None)]
    outs = b.emit("Scan", [s0, x], fn, attrs={"body": body, "num_scan_inputs": 1}, n_out=2, out_dtypes=[x.dtype] * 2)
    b.crash_checks.append((x, 0))
    return outs


# ----------------------------------------------------------------------------------- functions


def _function(b: Builder, name, inputs, outputs, nodes, attributes=(), domain="custom"):
    b.extra_opsets[domain] = 1
    f = helper.make_function(domain, name, inputs, outputs, nodes,
                             [helper.make_opsetid("", b.opset), helper.make_opsetid(domain, 1)],
                             attributes=list(attributes))
    b.functions[(domain, name)] = f
    return f


def r_function(b: Builder):
    """Model-local functions: named like ONNX ops in a custom domain with another body, nested,
    with attribute references, and (rarely) recursive."""
    r = b.rng
    if b.opset < 13:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1, float_only=True))
    kind = r.choice(["Identity", "Reshape", "Mul", "Expand", "Tile", "nested", "attr", "recursive", "mutual"])
    if kind in ("recursive", "mutual") and r.random() < 0.6:
        kind = "nested"
    if kind == "Identity":
        _function(b, "Identity", ["x"], ["y"], [helper.make_node("Neg", ["x"], ["y"])])
        return b.emit1("Identity", [x], lambda k, ins: spec.same({}, ins), domain="custom")
    if kind == "Reshape":
        _function(b, "Reshape", ["x", "s"], ["y"], [helper.make_node("Mul", ["x", "x"], ["y"])])
        tgt = b.i64([-1])
        return b.emit1("Reshape", [x, tgt], lambda k, ins: spec.same({}, ins), domain="custom")
    if kind == "Mul":
        _function(b, "Mul", ["a", "c"], ["y"], [helper.make_node("Sub", ["a", "c"], ["y"])])
        c = b.const(np.array(1.0, dtype=np_of(x.dtype)))
        return b.emit1("Mul", [x, c], lambda k, ins: [(spec.bcast(ins[0][0], ins[1][0]), None)], domain="custom")
    if kind == "Expand":
        _function(b, "Expand", ["x", "s"], ["y"], [helper.make_node("Identity", ["x"], ["y"])])
        tgt = b.i64([2] + [1] * x.rank())
        return b.emit1("Expand", [x, tgt], lambda k, ins: spec.same({}, ins), domain="custom")
    if kind == "Tile":
        _function(b, "Tile", ["x", "r"], ["y"], [helper.make_node("Concat", ["x", "x"], ["y"], axis=0)])
        reps = b.i64([1] * x.rank())
        def fn(k, ins):
            s = list(ins[0][0])
            s[0] *= 2
            return [(tuple(s), None)]
        return b.emit1("Tile", [x, reps], fn, domain="custom")
    if kind == "nested":
        inner = [helper.make_node("Constant", [], ["m1"], value=numpy_helper.from_array(np.array([-1], np.int64))),
                 helper.make_node("Reshape", ["x", "m1"], ["y"])]
        _function(b, "Inner", ["x"], ["y"], inner)
        _function(b, "Outer", ["x"], ["z"], [helper.make_node("Inner", ["x"], ["t"], domain="custom"),
                                              helper.make_node("Relu", ["t"], ["z"])])
        return b.emit1("Outer", [x], lambda k, ins: [((spec.numel(ins[0][0]),), None)], domain="custom")
    if kind == "attr":
        ax = r.randint(0, x.rank())
        node = helper.make_node("Flatten", ["x"], ["y"])
        a = onnx.AttributeProto()
        a.name, a.ref_attr_name, a.type = "axis", "fax", onnx.AttributeProto.INT
        node.attribute.append(a)
        _function(b, "Flat", ["x"], ["y"], [node], attributes=["fax"])
        return b.emit1("Flat", [x], lambda k, ins: spec.flatten({"axis": ax}, ins), domain="custom", attrs={"fax": ax})
    if kind == "recursive":
        _function(b, "Rec", ["x"], ["y"], [helper.make_node("Rec", ["x"], ["y"], domain="custom")])
        return b.emit1("Rec", [x], _unknown, domain="custom")
    _function(b, "Ping", ["x"], ["y"], [helper.make_node("Pong", ["x"], ["y"], domain="custom")])
    _function(b, "Pong", ["x"], ["y"], [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Ping", ["t"], ["y"], domain="custom")])
    return b.emit1("Ping", [x], _unknown, domain="custom")


def r_domain_alias(b: Builder):
    """A node in domain "ai.onnx" (the default domain by its other name)."""
    r = b.rng
    x = _need(b.data(float_only=True))
    b.extra_opsets["ai.onnx"] = b.opset
    if r.random() < 0.5 and b.opset >= 5:
        return b.emit1("Reshape", [x, b.i64([-1])], lambda k, ins: spec.reshape({}, ins, b.opset), domain="ai.onnx")
    return b.emit1("Relu", [x], lambda k, ins: spec.same({}, ins), domain="ai.onnx")


def r_value_info(b: Builder):
    """value_info entries for tensors already made: their spec shapes in the inputs' symbols, or a
    wrong static size now and then (shapeinfer must not take a declaration over inference)."""
    v = b.pick(lambda t: "input" not in t.tags and t.known() and t.rank() is not None and t.name not in
               {vi.name for vi in b.value_info} and t.name not in b.init_inputs and "const" not in t.tags)
    if v is None:
        raise SkipRecipe()
    shape = b.declared_shape(v)
    if shape is None:
        raise SkipRecipe()
    vi = helper.make_tensor_value_info(v.name, v.dtype, shape)
    vi.doc_string = "declared by the generator"
    b.value_info.append(vi)


RECIPES = {
    "reshape": (12, 1, r_reshape),
    "expand": (9, 8, r_expand),
    "tile": (7, 1, r_tile),
    "shape_arith": (8, 7, r_shape_arith),
    "narrow_cast": (4, 7, r_narrow_cast),
    "growth": (2, 7, r_growth),
    "where_equal": (3, 9, r_where_equal),
    "range": (2, 11, r_range),
    "const_of_shape": (3, 9, r_const_of_shape),
    "reduce_shape": (3, 1, r_reduce_shape),
    "size": (2, 1, r_size),
    "gather_shape": (4, 1, r_gather_shape),
    "unsqueeze_squeeze_value": (3, 1, r_unsqueeze_squeeze_value),
    "float_elementwise": (5, 1, r_float_elementwise),
    "float_const_fold": (4, 9, r_float_const_fold),
    "tile_uniform": (2, 8, r_tile_uniform),
    "reduce_data": (4, 1, r_reduce_data),
    "expand_reduce": (5, 8, r_expand_reduce),
    "layout": (4, 1, r_layout),
    "cancel_reshape": (3, 5, r_cancel_reshape),
    "neutral": (4, 1, r_neutral),
    "fed_initializer": (3, 5, r_fed_initializer),
    "slice_data": (4, 1, r_slice_data),
    "gather_data": (2, 1, r_gather_data),
    "split": (1, 2, r_split),
    "nonzero": (1, 9, r_nonzero),
    "if": (2, 11, r_if),
    "loop": (2, 11, r_loop),
    "scan": (1, 11, r_scan),
    "function": (3, 13, r_function),
    "domain_alias": (1, 1, r_domain_alias),
    "numel_guard": (2, 11, r_numel_guard),
    "failing_branch": (1, 13, r_failing_branch),
    "value_info": (2, 1, r_value_info),
}


# ----------------------------------------------------------------------------------- dim arithmetic


def _spatial_input(b: Builder, min_rank=3, max_rank=4):
    x = b.data(min_rank=min_rank, max_rank=max_rank, float_only=True)
    if x is None or b.rng.random() < 0.3:
        x = b.add_input(rank=b.rng.choice([3, 4]), dtype=TP.FLOAT)
    return x


def r_pool(b: Builder):
    r = b.rng
    x = _spatial_input(b)
    n = x.rank() - 2
    op = r.choice(["MaxPool", "AveragePool", "MaxPool", "LpPool", "GlobalAveragePool", "GlobalMaxPool"])
    if op.startswith("Global"):
        return b.emit1(op, [x], lambda k, ins: [(tuple(ins[0][0][:2]) + (1,) * n, None)])
    attrs = {"kernel_shape": [r.choice([1, 2, 3]) for _ in range(n)]}
    if r.random() < 0.6:
        attrs["strides"] = [r.choice([1, 2, 3]) for _ in range(n)]
    u = r.random()
    if u < 0.4:
        attrs["pads"] = [r.choice([0, 0, 1, 2]) for _ in range(2 * n)]
        attrs["pads"] = [min(p, kk - 1) for p, kk in zip(attrs["pads"], attrs["kernel_shape"] * 2)]
    elif u < 0.7:
        attrs["auto_pad"] = r.choice(["SAME_UPPER", "SAME_LOWER", "VALID"])
    if op == "MaxPool" and b.opset >= 10 and r.random() < 0.4:
        attrs["dilations"] = [r.choice([1, 2]) for _ in range(n)]
    if op in ("MaxPool", "AveragePool") and b.opset >= 10 and r.random() < 0.4 and "auto_pad" not in attrs:
        attrs["ceil_mode"] = 1
    if op == "AveragePool" and r.random() < 0.3:
        attrs["count_include_pad"] = 1
    if attrs.get("auto_pad", "").startswith("SAME") and "dilations" in attrs:
        del attrs["dilations"]
    y = b.emit1(op, [x], lambda k, ins: [(tuple(spec.pool(attrs, ins)), None)], attrs=attrs)
    if r.random() < 0.4:  # the pooled dims flow into a shape
        consume_shape_value(b, b.shape_of(y))
    return y


def r_conv(b: Builder):
    r = b.rng
    x = _spatial_input(b)
    c = x.static_dim(1)
    if c is None or c == 0 or c > 4:
        x = b.add_input(rank=r.choice([3, 4]), dtype=TP.FLOAT)
        c = x.static_dim(1)
        if c is None or c == 0 or c > 4:
            raise SkipRecipe()
    n = x.rank() - 2
    transpose = r.random() < 0.3
    m = r.choice([1, 2])
    ks = [r.choice([1, 2, 3]) for _ in range(n)]
    w = b.const(np.ones([c, m] + ks if transpose else [m, c] + ks, dtype=np.float32) * 0.5)
    attrs = {}
    if r.random() < 0.5:
        attrs["strides"] = [r.choice([1, 2]) for _ in range(n)]
    if r.random() < 0.4:
        attrs["pads"] = [r.choice([0, 1]) for _ in range(2 * n)]
    elif r.random() < 0.4:
        attrs["auto_pad"] = r.choice(["SAME_UPPER", "VALID"]) if not transpose else "VALID"
    if r.random() < 0.3:
        attrs["dilations"] = [r.choice([1, 2]) for _ in range(n)]
    if transpose and r.random() < 0.3 and "strides" in attrs:
        attrs["output_padding"] = [r.choice([0, st - 1]) for st in attrs["strides"]]

    def fn(k, ins):
        s = ins[0][0]
        if not transpose:
            return [(tuple(spec.pool(attrs, ins, kernel_from_weight=ks)[:1]) + (m,) + tuple(spec.pool(attrs, ins, ks)[2:]), None)]
        strides = attrs.get("strides", [1] * n)
        dil = attrs.get("dilations", [1] * n)
        pads = attrs.get("pads", [0] * 2 * n)
        op_ = attrs.get("output_padding", [0] * n)
        out = [strides[i] * (s[2 + i] - 1) + op_[i] + (ks[i] - 1) * dil[i] + 1 - pads[i] - pads[n + i] for i in range(n)]
        if any(o < 0 for o in out):
            raise spec.Invalid("negative")
        return [((s[0], m) + tuple(out), None)]
    return b.emit1("ConvTranspose" if transpose else "Conv", [x, w], fn, attrs=attrs)


def r_pad(b: Builder):
    r = b.rng
    if b.opset < 2:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1, max_rank=4, float_only=b.opset < 11))
    rank = x.rank()
    mode = r.choice(["constant", "constant", "edge", "reflect"]) if x.dtype in FLOATS else "constant"
    attrs = {"mode": mode} if mode != "constant" or r.random() < 0.3 else {}
    axes = None
    if b.opset >= 18 and r.random() < 0.4:
        axes = r.sample(range(rank), r.randint(1, rank))
        axes = [a - rank if r.random() < 0.4 else a for a in axes]
    n = len(axes) if axes is not None else rank
    pads = [r.choice([0, 0, 1, 2, -1]) for _ in range(2 * n)]
    if b.opset < 11:
        attrs["pads"] = pads
        return b.emit1("Pad", [x], lambda k, ins: spec.pad_op(attrs, ins, b.opset), attrs=attrs)
    if r.random() < 0.4:
        # computed pads: a dim of the input (or its negation) at some position
        i = r.randrange(2 * n)
        ax = (axes[i % n] if axes is not None else i % n) % rank
        d = b.dim_vec(x, ax)
        if r.random() < 0.5:
            d = b.emit1("Neg", [d], lambda k, ins: spec.unary_int("Neg", {}, ins), tags={"shape"})
        parts = ([b.i64(pads[:i])] if i else []) + [d] + ([b.i64(pads[i + 1:])] if i + 1 < 2 * n else [])
        pv = b.concat(parts)
    else:
        pv = b.i64(pads)
    ins = [x, pv]
    if axes is not None:
        ins += [None, b.i64(axes)]
    elif r.random() < 0.3:
        ins.append(b.const(np.array(r.choice([0.0, -0.0, np.nan]) if x.dtype in FLOATS else 0, dtype=np_of(x.dtype))))
    return b.emit1("Pad", ins, lambda k, ins_: spec.pad_op(attrs, ins_, b.opset), attrs=attrs)


def r_topk(b: Builder):
    r = b.rng
    if b.opset < 10:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1, float_only=True))
    rank = x.rank()
    axis = r.randrange(rank)
    src = b.data(min_rank=1) or x
    kv = b.dim_vec(src, r.randrange(src.rank())) if r.random() < 0.7 else b.i64([r.choice([0, 1, 2])])
    attrs = {"axis": axis - rank if r.random() < 0.4 else axis}

    def fn(k, ins):
        s = ins[0][0]
        kk = int(need_scalar(ins[1][1]))
        if kk < 0 or kk > s[axis]:
            raise spec.Invalid("k")
        out = list(s)
        out[axis] = kk
        return [(tuple(out), None), (tuple(out), None)]
    return b.emit("TopK", [x, kv], fn, attrs=attrs, n_out=2, out_dtypes=[x.dtype, TP.INT64])


def r_resize(b: Builder):
    r = b.rng
    if b.opset < 13:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1, max_rank=4, float_only=True))
    rank = x.rank()
    empty = b.const(np.array([], dtype=np.float32))
    if r.random() < 0.5:
        scales = [r.choice([1.0, 1.0, 2.0, 0.5, 1.5, 3.0]) for _ in range(rank)]
        sc = b.const(np.array(scales, dtype=np.float32))

        def fn(k, ins):
            s = ins[0][0]
            return [(tuple(int(np.floor(d * np.float32(f))) for d, f in zip(s, scales)), None)]
        y = b.emit1("Resize", [x, empty, sc], fn, attrs={"mode": r.choice(["nearest", "linear"])})
    else:
        parts = []
        for i in range(rank):
            u = r.random()
            if u < 0.5:
                parts.append(b.dim_vec(x, i))
            elif u < 0.8:
                parts.append(b.binop("Mul", b.dim_vec(x, i), b.i64([2])))
            else:
                parts.append(b.i64([r.choice([1, 2, 3])]))
        sizes = b.concat(parts)

        def fn(k, ins):
            return [(tuple(int(v) for v in spec.need(ins[3][1]).reshape(-1)), None)]
        y = b.emit1("Resize", [x, None, None, sizes], fn, attrs={"mode": "nearest"})
    return y


def r_onehot(b: Builder):
    r = b.rng
    if b.opset < 11:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1))
    idx = b.const(np.array([r.randint(-2, 3) for _ in range(r.choice([1, 2, 3]))], dtype=np.int64))
    depth = b.dim_scalar(x, r.randrange(x.rank()))
    vals = b.const(np.array([0.0, 1.0], dtype=np.float32))
    axis = r.choice([-1, 0, 1])

    def fn(k, ins):
        s = ins[0][0]
        dd = int(need_scalar(ins[1][1]))
        out = list(s)
        a = axis if axis >= 0 else len(s) + 1 + axis
        out.insert(a, dd)
        return [(tuple(out), None)]
    return b.emit1("OneHot", [idx, depth, vals], fn, attrs={"axis": axis}, out_dtypes=[TP.FLOAT])


def r_matmul(b: Builder):
    r = b.rng
    x = _need(b.data(min_rank=1, max_rank=4, float_only=True))
    rank = x.rank()
    if rank == 1:
        y = x
    else:
        perm = list(range(rank))
        perm[-1], perm[-2] = perm[-2], perm[-1]
        y = b.emit1("Transpose", [x], lambda k, ins: spec.transpose({"perm": perm}, ins), attrs={"perm": perm})
    if b.opset >= 12 and rank == 2 and r.random() < 0.4:
        return b.emit1("Einsum", [x, y], lambda k, ins: [((ins[0][0][0], ins[1][0][1]), None)], attrs={"equation": "ij,jk->ik"})
    return b.emit1("MatMul", [x, y], lambda k, ins: spec.matmul({}, ins))


def r_depth_to_space(b: Builder):
    r = b.rng
    if b.opset < 11:
        raise SkipRecipe()
    x = b.add_input(rank=4, dtype=TP.FLOAT)
    if x.static_dim(1) not in (4,):
        # channel 4: rebuild the input's declared dim
        vi = b.inputs[-1]
        vi.type.tensor_type.shape.dim[1].Clear()
        vi.type.tensor_type.shape.dim[1].dim_value = 4
        x.shapes = [(s[0], 4) + tuple(s[2:]) for s in x.shapes]
    if r.random() < 0.5:
        return b.emit1("DepthToSpace", [x], lambda k, ins: [((ins[0][0][0], 1, ins[0][0][2] * 2, ins[0][0][3] * 2), None)],
                       attrs={"blocksize": 2, "mode": r.choice(["DCR", "CRD"])})

    def fn(k, ins):
        s = ins[0][0]
        if s[2] % 2 or s[3] % 2:
            raise spec.Invalid("not divisible")
        return [((s[0], 16, s[2] // 2, s[3] // 2), None)]
    return b.emit1("SpaceToDepth", [x], fn, attrs={"blocksize": 2})


def r_shape_slice_attrs(b: Builder):
    """Shape with wild start/end (opset 15+): negative, beyond the rank, start after end."""
    r = b.rng
    if b.opset < 15:
        raise SkipRecipe()
    x = _need(b.data())
    rank = x.rank()
    wild = [None, 0, 1, -1, -rank, -rank - 2, rank, rank + 3, 2, -2, INT64_MAX, INT64_MIN]
    v = b.shape_of(x, start=r.choice(wild), end=r.choice(wild))
    consume_shape_value(b, v)


def r_concat_data(b: Builder):
    r = b.rng
    x = _need(b.data(min_rank=1))
    y = b.emit1("Neg", [x], lambda k, ins: spec.same({}, ins)) if x.dtype in FLOATS and r.random() < 0.5 else x
    rank = x.rank()
    axis = r.randrange(rank)
    ax = axis - rank if b.opset >= 11 and r.random() < 0.5 else axis
    return b.emit1("Concat", [x, y], lambda k, ins: spec.concat({"axis": ax}, ins), attrs={"axis": ax})


RECIPES.update({
    "pool": (3, 1, r_pool),
    "conv": (2, 1, r_conv),
    "pad": (3, 2, r_pad),
    "topk": (2, 10, r_topk),
    "resize": (2, 13, r_resize),
    "onehot": (1, 11, r_onehot),
    "matmul": (2, 1, r_matmul),
    "depth_to_space": (1, 11, r_depth_to_space),
    "shape_slice_attrs": (2, 15, r_shape_slice_attrs),
    "concat_data": (2, 4, r_concat_data),
})


# ----------------------------------------------------------------------------------- pass bait


def r_reshape_chain(b: Builder):
    """Reshape/Flatten/Squeeze/Unsqueeze chains with 0 entries and allowzero: what collapse-reshapes,
    remove-noop and constant-shapes rewrite (a 0 must be resolved against the right tensor)."""
    r = b.rng
    if b.opset < 5:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1, max_rank=4))
    y = x
    for _ in range(r.choice([2, 2, 3, 4])):
        rank = y.rank()
        if rank is None:
            break
        u = r.random()
        if u < 0.45:
            az = 1 if b.opset >= 14 and r.random() < 0.25 else 0
            y = emit_reshape(b, y, build_vec(b, y, reshape_target(b, y, az, False)), az, explicit_az=r.random() < 0.3)
        elif u < 0.6 and (b.opset >= 9 or y.dtype in FLOATS):
            axis = r.randint(0, rank)
            y = b.emit1("Flatten", [y], lambda k, ins, a=axis: spec.flatten({"axis": a}, ins), attrs={"axis": axis})
        elif u < 0.75:
            axis = r.randint(0, rank)
            if b.opset < 13:
                y = b.emit1("Unsqueeze", [y], lambda k, ins, a=axis: spec.unsqueeze({"axes": [a]}, ins, b.opset), attrs={"axes": [axis]})
            else:
                y = b.emit1("Unsqueeze", [y, b.i64([axis])], lambda k, ins: spec.unsqueeze({}, ins, b.opset))
        elif u < 0.85:
            ones = [i for i in range(rank) if y.static_dim(i) == 1]
            if not ones:
                continue
            axes = [r.choice(ones)]
            if b.opset < 13:
                y = b.emit1("Squeeze", [y], lambda k, ins, a=axes: spec.squeeze({"axes": a}, ins, b.opset), attrs={"axes": axes})
            else:
                y = b.emit1("Squeeze", [y, b.i64(axes)], lambda k, ins: spec.squeeze({}, ins, b.opset))
        else:
            # back to the shape of an earlier tensor of the chain (or of x)
            y = emit_reshape(b, y, b.shape_of(x))
    return y


def r_expand_binop(b: Builder):
    """Expand (or Tile) feeding a broadcasting op: dropping it is right only when the broadcast
    alone gives the same shape (expand-into-broadcast)."""
    r = b.rng
    if b.opset < 8:
        raise SkipRecipe()
    x = _need(b.data(max_rank=3, float_only=True))
    y = emit_expand(b, x, expand_target(b, x)) if r.random() < 0.7 or x.rank() == 0 else emit_tile(b, x, tile_repeats(b, x))
    u = r.random()
    if u < 0.3:
        other = b.const(special_floats(b, 1, x.dtype).reshape(()))
    elif u < 0.6:
        other = x
    else:
        other = b.data(float_only=True) or x
        if other.dtype != x.dtype:
            other = x
    op = r.choice(["Add", "Mul", "Sub", "Max", "Min", "Div"])
    args = [y, other] if r.random() < 0.6 else [other, y]
    return b.binop(op, *args, tags=())


def r_dedupe_bait(b: Builder):
    """Constants equal as numbers but not as tensors (0.0 and -0.0, [1] and [[1]], int64 and int32,
    NaNs of other payloads) and nodes that differ only in an attribute or a domain: dedupe must
    keep them apart."""
    r = b.rng
    x = _need(b.data(float_only=True))
    pairs = [(0.0, -0.0), (np.nan, NAN_PAYLOAD32), (np.nan, NEG_QNAN32), (1.0, 1.0)]
    a_val, b_val = r.choice(pairs)
    shape_a = r.choice([(), (1,)])
    shape_b = r.choice([(), (1,), (1, 1)])
    ca = b.const(np.full(shape_a, a_val, dtype=np_of(x.dtype)))
    cb = b.const(np.full(shape_b, b_val, dtype=np_of(x.dtype)))
    op = r.choice(["Add", "Sub", "Mul", "Max", "Min"] if b.opset >= 8 else ["Add", "Sub", "Mul"])
    y1 = b.binop(op, x, ca, tags=())
    y2 = b.binop(op, x, cb, tags=())
    if r.random() < 0.5 and b.opset >= 6:
        # two Casts that differ only in 'to'
        c1 = b.cast(x, TP.DOUBLE if x.dtype != TP.DOUBLE else TP.FLOAT, tags=())
        c2 = b.cast(x, TP.FLOAT16, tags=())
        b.binop("Add", b.cast(c1, x.dtype, tags=()), b.cast(c2, x.dtype, tags=()), tags=())
    return b.binop("Sub", y1, y2, tags=())


def r_size_one_bait(b: Builder):
    """Tile over axes of size 1 (tile-to-expand), reductions over size-1 axes (reduce-size-one),
    with the size-1 axis static or a symbol that is 1 only at some bindings."""
    r = b.rng
    if b.opset < 8:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1, max_rank=3))
    rank = x.rank()
    if r.random() < 0.5:
        # make an axis of size 1 by slicing or unsqueezing
        axis = r.randrange(rank)
        x = b.slice(x, [0], [1], axes=[axis], tags=()) if b.opset >= 10 or r.random() < 0.5 else x
    reps = [r.choice([1, 2, 3]) if x.static_dim(i) == 1 or r.random() < 0.3 else 1 for i in range(rank)]
    y = emit_tile(b, x, b.i64(reps)) if b.opset >= 6 else x
    ones = [i for i in range(rank) if x.static_dim(i) == 1] or [r.randrange(rank)]
    op = r.choice(["ReduceMax", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceMean"])
    src = r.choice([x, y])
    return reduce_node(b, op, src, [r.choice(ones)], keepdims=r.choice([None, 0, 1]))


RECIPES.update({
    "reshape_chain": (5, 5, r_reshape_chain),
    "expand_binop": (4, 8, r_expand_binop),
    "dedupe_bait": (3, 7, r_dedupe_bait),
    "size_one_bait": (3, 8, r_size_one_bait),
})


# ----------------------------------------------------------------------------------- odd element types


def _odd_types(opset):
    import ml_dtypes

    out = [(TP.STRING, None, 1), (TP.INT8, np.int8, 1), (TP.UINT16, np.uint16, 1), (TP.UINT64, np.uint64, 1),
           (TP.BOOL, bool, 1), (TP.FLOAT16, np.float16, 1), (TP.DOUBLE, np.float64, 1),
           (TP.BFLOAT16, ml_dtypes.bfloat16, 13), (TP.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn, 19),
           (TP.FLOAT8E4M3FNUZ, ml_dtypes.float8_e4m3fnuz, 19), (TP.FLOAT8E5M2, ml_dtypes.float8_e5m2, 19),
           (TP.FLOAT8E5M2FNUZ, ml_dtypes.float8_e5m2fnuz, 19), (TP.INT4, ml_dtypes.int4, 21),
           (TP.UINT4, ml_dtypes.uint4, 21), (TP.FLOAT4E2M1, ml_dtypes.float4_e2m1fn, 23)]
    return [t for t in out if opset >= t[2]]


def r_odd_dtypes(b: Builder):
    """Data movement of constants of every element type Reshape takes (bfloat16, the float8s,
    int4/uint4, float4e2m1, string...): folding must keep the bits (NaN encodings, -0, packing)."""
    r = b.rng
    if b.opset < 9:
        raise SkipRecipe()
    tp, npt, _ = r.choice(_odd_types(b.opset))
    n = r.choice([2, 4, 6])
    if tp == TP.STRING:
        arr = np.array([r.choice(["", "a", "nan", "-0", "ü", "a b"]) for _ in range(n)], dtype=object)
    elif tp in (TP.INT4, TP.UINT4):
        lo = -8 if tp == TP.INT4 else 0
        arr = np.array([r.randint(lo, lo + 15) for _ in range(n)], dtype=np.int32).astype(npt)
    elif tp == TP.BOOL:
        arr = np.array([r.random() < 0.5 for _ in range(n)])
    elif tp in (TP.INT8, TP.UINT16, TP.UINT64):
        info = np.iinfo(npt)
        arr = np.array([r.choice([0, 1, int(info.max), int(info.min), 7]) for _ in range(n)], dtype=object).astype(npt)
    else:
        arr = np.array([r.choice([0.0, -0.0, 1.5, -2.0, np.nan, np.inf, 448.0, 1e-3]) for _ in range(n)],
                       dtype=np.float32).astype(npt)
    shape = r.choice([(n,), (2, n // 2), (1, n), (n // 2, 1, 2)])
    c = b.const(arr.reshape(shape), dtype=tp, how="init")
    y = c
    for _ in range(r.choice([1, 2, 3])):
        rank = y.rank()
        u = r.random()
        if u < 0.3:
            y = emit_reshape(b, y, b.i64(r.choice([[-1], [1, -1], [-1, 1], [0, -1]])))
        elif u < 0.45 and rank >= 2:
            perm = list(range(rank))
            r.shuffle(perm)
            y = b.emit1("Transpose", [y], lambda k, ins, p=perm: spec.transpose({"perm": p}, ins), attrs={"perm": perm})
        elif u < 0.6 and b.opset >= 8:
            y = emit_expand(b, y, b.i64([2] + [1] * rank))
        elif u < 0.7 and b.opset >= 6 and rank:
            y = emit_tile(b, y, b.i64([r.choice([1, 2])] * rank))
        elif u < 0.8 and rank:
            y = b.emit1("Concat", [y, y], lambda k, ins: spec.concat({"axis": 0}, ins), attrs={"axis": 0})
        elif u < 0.9 and rank:
            y = b.gather(y, b.i64([r.choice([0, -1])] if b.opset >= 11 else [0]), axis=0, tags=())
        else:
            y = b.emit1("Identity", [y], lambda k, ins: spec.identity({}, ins))
    if tp not in (TP.STRING,) and r.random() < 0.6:
        b.cast(y, TP.FLOAT, tags=())
    # the same type from data: Cast of a float input, moved, cast back
    x = b.data(float_only=True)
    if x is not None and tp not in (TP.STRING, TP.BOOL) and r.random() < 0.5 and b.opset >= 13:
        t = b.cast(x, tp, tags=())
        t = emit_reshape(b, t, b.i64([-1]))
        b.cast(t, TP.FLOAT, tags=())


RECIPES.update({"odd_dtypes": (2, 9, r_odd_dtypes)})


def dim_formula(b: Builder, x: V) -> V:
    """A 1-D [1] int64 value computed from dims with arithmetic that can go negative: d - e,
    -d, d / -2 (truncating), d % -3, (d - 5) / 2..."""
    r = b.rng
    src = b.data(min_rank=1) or x
    v = b.dim_vec(src, r.randrange(src.rank()))
    for _ in range(r.choice([1, 2, 3])):
        u = r.random()
        if u < 0.25:
            other = b.data(min_rank=1) or src
            v = b.binop("Sub", v, b.dim_vec(other, r.randrange(other.rank())))
        elif u < 0.4:
            v = b.binop(r.choice(["Add", "Sub"]), v, b.i64([r.choice([1, 2, 3, 5, 7])]))
        elif u < 0.55:
            v = b.emit1("Neg", [v], lambda k, ins: spec.unary_int("Neg", {}, ins), tags={"shape"})
        elif u < 0.75 and b.opset >= 7:
            v = b.binop("Div", v, b.i64([r.choice([2, 3, -2, -3, 4])]))
        elif u < 0.9 and b.opset >= 10:
            v = b.binop("Mod", v, b.i64([r.choice([2, 3, -2, -3])]), attrs={"fmod": r.choice([0, 1])})
        else:
            v = b.binop("Mul", v, b.i64([r.choice([2, -1, 3])]))
    return v


def r_computed_slice(b: Builder):
    """Slice whose bounds are dim formulas that can be negative or past the end: every value is
    valid, and the output size is the spec's clamping of the formula (steps of both signs)."""
    r = b.rng
    if b.opset < 10:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1, max_rank=3))
    rank = x.rank()
    axis = r.randrange(rank)
    start = dim_formula(b, x) if r.random() < 0.7 else b.i64([r.choice([0, -1, 1, INT64_MAX, INT64_MIN])])
    end = dim_formula(b, x) if r.random() < 0.7 else b.i64([r.choice([0, -1, INT64_MAX, INT64_MIN, -INT64_MAX])])
    step = r.choice([1, 1, -1, -1, 2, -2, 3])
    axes = b.i64([axis - rank if r.random() < 0.4 else axis])
    y = b.slice(x, start, end, axes=axes, steps=b.i64([step]) if step != 1 or r.random() < 0.3 else None, tags=())
    if r.random() < 0.4:
        consume_shape_value(b, b.shape_of(y))
    return y


def r_computed_pad(b: Builder):
    """Pad with pads computed from dim formulas (negative pads crop)."""
    r = b.rng
    if b.opset < 11:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1, max_rank=3))
    rank = x.rank()
    parts = [dim_formula(b, x) if r.random() < 0.4 else b.i64([r.choice([0, 1, -1])]) for _ in range(2 * rank)]
    return b.emit1("Pad", [x, b.concat(parts)], lambda k, ins: spec.pad_op({}, ins, b.opset))


RECIPES.update({
    "computed_slice": (5, 10, r_computed_slice),
    "computed_pad": (2, 11, r_computed_pad),
})


def r_huge_empty(b: Builder):
    """Tensors with a 0 dim and huge others ([0, 2**40], [2**62, 0]): zero elements, valid at run
    time, and a trap for element counts and overflow checks."""
    r = b.rng
    if b.opset < 9:
        raise SkipRecipe()
    huge = r.choice([2**31, 2**40, 2**62, INT64_MAX])
    zero_src = b.data(min_rank=1)
    if zero_src is not None and r.random() < 0.5:
        # a dim that is 0 at some bindings, times a huge constant
        z = b.dim_vec(zero_src, r.randrange(zero_src.rank()))
        ok = [v is not None and v.size == 1 and int(v.reshape(-1)[0]) == 0 for v in z.values]
        if not any(ok):
            z = b.i64([0])
    else:
        z = b.i64([0])
    dims = [z, b.i64([huge])] if r.random() < 0.5 else [b.i64([huge]), z]
    shape = b.concat(dims)
    u = r.random()
    if u < 0.4:
        y = const_of_shape(b, shape)
    elif u < 0.8 and b.opset >= 8:
        y = emit_expand(b, b.const(np.array([1.5], np.float32)), shape)
    else:
        y = emit_tile(b, b.const(np.ones((1, 1), np.float32)), shape)
    for k in range(b.nb):  # sizes past any budget where the dim is not 0: those bindings are not run
        if y.shapes[k] is not None and spec.numel(y.shapes[k]) > 0:
            y.tags.add("unbounded")
    if r.random() < 0.5:
        consume_shape_value(b, b.shape_of(y))
    return y


def r_loop_early_exit(b: Builder):
    """Loop whose condition stops it before the trip count: the state grows by Concat per
    iteration actually run (min(M, K+1)), not per M."""
    r = b.rng
    if b.opset < 11:
        raise SkipRecipe()
    x = _need(b.data(min_rank=1, max_rank=3, float_only=True))
    axis = r.randrange(x.rank())
    if any(sh is not None and sh[axis] > MAX_SCAN_TRIPS for sh in x.shapes):
        raise SkipRecipe()  # (see r_loop)
    m = b.dim_scalar(x, axis) if r.random() < 0.6 else b.const(np.array(r.choice([0, 1, 3, 5]), np.int64))
    kk = r.choice([0, 1, 2])
    it, cin, sin, cout, sout = b.fresh("it"), b.fresh("cond_in"), b.fresh("s_in"), b.fresh("cond_out"), b.fresh("s_out")
    kn = b.fresh("k")
    nodes = [helper.make_node("Constant", [], [kn], value=numpy_helper.from_array(np.array(kk, np.int64))),
             helper.make_node("Less", [it, kn], [cout]),
             helper.make_node("Concat", [sin, x.name], [sout], axis=0)]
    body = helper.make_graph(nodes, b.fresh("body"), [_vi(it, TP.INT64, []), _vi(cin, TP.BOOL, []), _vi(sin, x.dtype)],
                             [_vi(cout, TP.BOOL, []), _vi(sout, x.dtype)])
    cond = b.const(np.array(r.random() < 0.85))

    def fn(k, ins):
        (_, mv), (_, cv), (xs, _) = ins
        n = int(need_scalar(mv))
        runs = 0 if not bool(need_scalar(cv)) else max(0, min(n, kk + 1))
        return [((xs[0] * (runs + 1),) + tuple(xs[1:]), None)]
    return b.emit1("Loop", [m, cond, x], fn, attrs={"body": body}, out_dtypes=[x.dtype])


RECIPES.update({
    "huge_empty": (2, 9, r_huge_empty),
    "loop_early_exit": (2, 11, r_loop_early_exit),
})


def r_window_reshape(b: Builder):
    """Swin's pattern, which optimize draws run facts from (infer/run_bounds.py): x ->
    Reshape [d0, c, -1] (fails at d0 = 0) -> a window split [d0, (di+a)//k, ..., -1] whose entry
    copies another dim where it is 0 (then the element count breaks, or not), and a probe
    Reshape [min((di+a)//k, 1), -1] of a constant that a wrong bound would make [1, -1]. The
    shape may pass through a node that keeps its value (onnxruntime removes it and then fuses the
    Concat: no bound may come of that)."""
    r = b.rng
    if b.opset < 8:
        raise SkipRecipe()
    x = _need(b.data(min_rank=2, max_rank=4, float_only=True))
    rank = x.rank()
    d0 = b.dim_vec(x, 0)
    c = r.choice([1, 2, 4])
    y = emit_reshape(b, x, b.concat([d0, b.i64([c, -1])]))
    if r.random() < 0.7:  # another reader than a reshape-like op (which may be merged with it)
        y = b.emit1(r.choice(["Relu", "Neg", "Abs"]), [y], lambda k, ins: spec.same({}, ins))
    i = r.randrange(1, rank)
    di = b.dim_vec(x, i)
    a, k = r.choice([0, 0, 1, 3]), r.choice([2, 4])
    q = b.binop("Div", b.binop("Add", di, b.i64([a])) if a else di, b.i64([k]))
    parts = [d0, q, b.i64([-1])] if r.random() < 0.6 else [b.i64([-1]), q, b.i64([k])]
    if r.random() < 0.3:
        parts = [d0, q]  # no -1: only the count decides
    shape = b.concat(parts)
    if r.random() < 0.3:  # a node that keeps the value, between the Concat and the Reshape
        shape = b.emit1("Identity", [shape], lambda k_, ins: spec.same({}, ins), tags={"shape"})
    y = emit_reshape(b, y, shape)
    if r.random() < 0.7:
        probe = b.concat([b.binop("Min", q, b.i64([1])), b.i64([-1])])
        emit_reshape(b, b.const(np.arange(12, dtype=np.float32).reshape(3, 4)), probe)
    return y


RECIPES.update({"window_reshape": (8, 8, r_window_reshape)})
