"""Indexing, selection and layout ops whose output dims come from their inputs' dims or values.

GatherElements, GatherND, Scatter*, TopK (k may be a computed dim), ArgMax/ArgMin, OneHot,
DepthToSpace/SpaceToDepth, Einsum (with ``...``), EyeLike, and the data-dependent NonZero,
Compress and Unique, whose counts become fresh symbols named after the op.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ...errors import CannotDecide
from ...symbolic import Bcast, Expr, as_single_atom, mul, provably_le, to_str, truediv
from ..facts import Fact, as_dim
from ..registry import rule
from ._util import broadcast_shapes, int_entries, normalize_axis, value_entries

INT64 = TensorProto.INT64


def check_indices(ctx, indices, sizes, what: str = "axis") -> None:
    """Every run fails where indices whose values are known (each the same in every run) fall
    outside [-n, n-1] of the size n they index: ``sizes`` the size of each position of the
    innermost index dim (one entry: every index addresses that size), None where not static."""
    values = int_entries(indices) if indices is not None else None
    if not values or not sizes or indices.shape is None:
        return
    k = len(sizes)
    need: dict = {}  # position -> the least size its indices need, where that size is symbolic
    for j, i in enumerate(values):
        n = sizes[j % k]
        if type(n) is int and not -n <= i < n:
            where = f"{what} {j % k}" if k > 1 else what
            raise ctx.error(f"index {i} is out of range for {where} of size {n} (the indices are the same in every run)")
        if n is not None and type(n) is not int:
            need[j % k] = max(need.get(j % k, 0), i + 1 if i >= 0 else -i)
    for j, least in need.items():  # (index 2 of a dim S: valid only where S >= 3)
        n = sizes[j]
        where = f"{what} {j}" if k > 1 else what
        ctx.condition(f"valid only when {where} ({to_str(n)}) holds the constant indices: at least {least}",
                      "le", least, n)


def _agree(ctx, a, b, what: str) -> None:
    """Two dims that must be equal: where they may differ, a condition (where they never can, the
    caller's static check said so)."""
    if a != b and not (isinstance(a, int) and isinstance(b, int)):
        ctx.condition(f"valid only when {what} agree ({to_str(a)} == {to_str(b)})", "equal", a, b)


def _same_rank(ctx, data, indices, what: str) -> bool:
    if data.shape is None or indices.shape is None:
        return False
    if len(indices.shape) != len(data.shape):
        raise ctx.error(f"{what} have rank {len(indices.shape)}; the data has rank {len(data.shape)}")
    return True


@rule("GatherElements", since=11)
def gather_elements(ctx):
    data, indices = ctx.input(0), ctx.input(1)
    if data is None or indices is None:
        return None
    if _same_rank(ctx, data, indices, "the indices"):
        axis = normalize_axis(ctx, ctx.attr("axis", 0), len(data.shape))
        check_indices(ctx, indices, [data.shape[axis]], f"axis {axis}")
    return [Fact(dtype=data.dtype, shape=indices.shape)]


@rule("GatherND", since=11)
def gather_nd(ctx):
    data, indices = ctx.input(0), ctx.input(1)
    if data is None or indices is None or data.shape is None or indices.shape is None or not indices.shape:
        return None
    last = indices.shape[-1]
    b = ctx.attr("batch_dims", 0) if ctx.version >= 12 else 0
    if not isinstance(last, int):  # (a symbolic count of index dims: at most the data dims after the batch)
        ctx.condition(f"valid only when the indices' last dim {to_str(last)} is at most the {len(data.shape) - b} "
                      "dims they address", "le", last, len(data.shape) - b)
        return None
    for k in range(min(b, len(data.shape), len(indices.shape))):  # (batch dims: the same in both)
        if data.shape[k] != indices.shape[k]:
            _agree(ctx, data.shape[k], indices.shape[k], f"batch dim {k} of the data and the indices")
    if b + last > len(data.shape):
        raise ctx.error(f"indices address {last} dims after {b} batch dims of a rank-{len(data.shape)} input")
    if b == 0 and last:
        check_indices(ctx, indices, list(data.shape[:last]), "data dim")
    return [Fact(dtype=data.dtype, shape=tuple(indices.shape[:-1]) + tuple(data.shape[b + last:]))]


def _scatter_checks(ctx, data) -> None:
    """ScatterND: indices within the data's dims, updates of shape indices[:-1] + data[k:];
    ScatterElements: indices and updates of the data's rank and of one shape, indices within
    the axis."""
    indices, updates = ctx.input(1), ctx.input(2)
    if data is None or data.shape is None or indices is None or indices.shape is None:
        return
    if ctx.op_type == "ScatterND":
        last = indices.shape[-1] if indices.shape else None
        if type(last) is not int or last > len(data.shape):
            return
        if last:
            check_indices(ctx, indices, list(data.shape[:last]), "data dim")
        want = tuple(indices.shape[:-1]) + tuple(data.shape[last:])
        if updates is not None and updates.shape is not None and all(type(d) is int for d in (*want, *updates.shape)) \
                and tuple(updates.shape) != want:
            raise ctx.error(f"updates have shape {list(updates.shape)}; indices {list(indices.shape)} into data "
                            f"{list(data.shape)} need {list(want)}")
        if updates is not None and updates.shape is not None and len(updates.shape) == len(want):
            for k, (u, w) in enumerate(zip(updates.shape, want)):
                _agree(ctx, u, w, f"dim {k} of the updates and of indices[:-1] + data[{last}:]")
    elif ctx.op_type == "ScatterElements" and _same_rank(ctx, data, indices, "the indices"):
        axis = normalize_axis(ctx, ctx.attr("axis", 0), len(data.shape))
        check_indices(ctx, indices, [data.shape[axis]], f"axis {axis}")
        if updates is not None and updates.shape is not None and all(type(d) is int for d in (*indices.shape, *updates.shape)) \
                and tuple(updates.shape) != tuple(indices.shape):
            raise ctx.error(f"updates have shape {list(updates.shape)}; the indices have {list(indices.shape)}")
        if updates is not None and updates.shape is not None and len(updates.shape) == len(indices.shape):
            for k, (u, i) in enumerate(zip(updates.shape, indices.shape)):
                _agree(ctx, u, i, f"dim {k} of the updates and of the indices")
        for k, (i, d) in enumerate(zip(indices.shape, data.shape)):  # (off the axis, the indices stay inside the data)
            if k != axis and not isinstance(i, int) or k != axis and not isinstance(d, int):
                ctx.condition(f"valid only when dim {k} of the indices ({to_str(i)}) is at most the data's "
                              f"({to_str(d)})", "le", i, d)


@rule("ScatterND", "ScatterElements", "Scatter", "EyeLike", since=1)
def same_as_data(ctx):
    data = ctx.input(0)
    if data is None:
        return None
    _scatter_checks(ctx, data)
    dtype = data.dtype
    if ctx.op_type == "EyeLike":
        dtype = ctx.attr("dtype", data.dtype)
        if data.shape is not None and len(data.shape) != 2:
            raise ctx.error(f"the input has rank {len(data.shape)}; EyeLike takes a 2-D tensor")
    return [Fact(dtype=dtype, shape=data.shape)]


def _topk(ctx, k):
    data = ctx.input(0)
    if data is None or data.shape is None:
        return None
    axis = normalize_axis(ctx, ctx.attr("axis", -1), len(data.shape))
    out = list(data.shape)
    if k is not None:  # k elements of the axis: at most its size (onnx's inference and onnxruntime refuse more
        # -- but onnxruntime runs it over an empty tensor, giving an empty output with k on the axis)
        size = data.shape[axis]
        if isinstance(k, int) and k < 0:
            raise ctx.error(f"k = {k} is negative")
        nonempty = all(isinstance(d, int) and d > 0 for d in data.shape)
        if isinstance(k, int) and isinstance(size, int) and k > size and nonempty:
            raise ctx.error(f"k = {k} is more than the {size} elements along axis {axis}")
        if not provably_le(k, size):
            ctx.condition(f"valid only when k = {to_str(k)} <= {to_str(size)}, the size of axis {axis}", "le", k, size)
    out[axis] = k if k is not None else ctx.fresh("topk")
    return [Fact(dtype=data.dtype, shape=tuple(out)), Fact(dtype=INT64, shape=tuple(out))]


@rule("TopK", since=1)
def topk_v1(ctx):
    return _topk(ctx, ctx.attr("k"))


@rule("TopK", since=10)
def topk_v10(ctx):
    k = value_entries(ctx.input(1))
    return _topk(ctx, k[0] if k and len(k) == 1 else None)


@rule("ArgMax", "ArgMin", since=1)
def arg_reduce(ctx):
    data = ctx.input(0)
    if data is None or data.shape is None:
        return None
    axis = normalize_axis(ctx, ctx.attr("axis", 0), len(data.shape))
    if ctx.attr("keepdims", 1):
        out = tuple(1 if i == axis else d for i, d in enumerate(data.shape))
    else:
        out = tuple(d for i, d in enumerate(data.shape) if i != axis)
    return [Fact(dtype=INT64, shape=out)]


@rule("OneHot", since=9)
def one_hot(ctx):
    indices, depth, values = ctx.input(0), ctx.input(1), ctx.input(2)
    if indices is None or indices.shape is None:
        return None
    if not indices.shape:  # (the spec allows any rank; onnx's inference, run by onnxruntime at load, does not)
        raise ctx.error("the indices are a scalar; onnxruntime takes indices of rank 1 or more")
    d = None
    if depth is not None and depth.value is not None and depth.value.size == 1:
        v = depth.value.reshape(-1)[0]
        d = as_dim(v) if depth.value.dtype == object else (int(v) if float(v).is_integer() else None)
        if isinstance(v, (int, float, np.integer, np.floating)) and float(v) <= 0:
            raise ctx.error(f"depth is {v}; it must be positive")  # (onnxruntime: refused at load, or fails every run)
    r = len(indices.shape) + 1
    axis = normalize_axis(ctx, ctx.attr("axis", -1), r)
    out = list(indices.shape)
    out.insert(axis, d if d is not None else ctx.fresh("onehot"))
    return [Fact(dtype=values.dtype if values is not None else 0, shape=tuple(out))]


@rule("DepthToSpace", since=1)
def depth_to_space(ctx):
    data = ctx.input(0)
    b = ctx.attr("blocksize")
    if b is not None and b < 1:
        raise ctx.error(f"blocksize is {b}; it must be 1 or more")
    if data is None or data.shape is None or len(data.shape) != 4 or not b:
        return None
    n, c, h, w = data.shape
    if isinstance(c, int) and c % (b * b):
        raise ctx.error(f"channels {c} are not a multiple of blocksize^2 = {b * b}")
    if not isinstance(c, int) and b > 1:
        ctx.condition(f"valid only when the channels {to_str(c)} are a multiple of blocksize^2 = {b * b}",
                      "multiple", c, b * b)
    return [Fact(dtype=data.dtype, shape=(n, truediv(c, b * b), mul(h, b), mul(w, b)))]


@rule("SpaceToDepth", since=1)
def space_to_depth(ctx):
    data = ctx.input(0)
    b = ctx.attr("blocksize")
    if b is not None and b < 1:
        raise ctx.error(f"blocksize is {b}; it must be 1 or more")
    if data is None or data.shape is None or len(data.shape) != 4 or not b:
        return None
    n, c, h, w = data.shape
    for d in (h, w):
        if isinstance(d, int) and d % b:
            raise ctx.error(f"spatial dim {d} is not a multiple of blocksize {b}")
        if not isinstance(d, int) and b > 1:
            ctx.condition(f"valid only when the spatial dim {to_str(d)} is a multiple of blocksize {b}", "multiple", d, b)
    return [Fact(dtype=data.dtype, shape=(n, mul(c, b * b), truediv(h, b), truediv(w, b)))]


@rule("NonZero", since=9)
def non_zero(ctx):
    data = ctx.input(0)
    if data is None or data.shape is None:
        return [Fact(dtype=INT64)]
    if not data.shape:
        # the spec's [0, n] for a scalar; onnxruntime reads a scalar as one element: [1, n]
        raise CannotDecide("off-spec-input", "the input is a scalar, whose indices the spec and onnxruntime "
                                             "shape differently")
    return [Fact(dtype=INT64, shape=(len(data.shape), ctx.fresh("nonzero")))]


@rule("Compress", since=9)
def compress(ctx):
    data = ctx.input(0)
    if data is None or data.shape is None:
        return None
    axis = ctx.attr("axis")
    if axis is None:
        return [Fact(dtype=data.dtype, shape=(ctx.fresh("compress"),))]
    axis = normalize_axis(ctx, axis, len(data.shape))
    out = list(data.shape)
    out[axis] = ctx.fresh("compress")
    return [Fact(dtype=data.dtype, shape=tuple(out))]


@rule("Einsum", since=12)
def einsum(ctx):
    eq = ctx.attr("equation")
    facts = [ctx.input(i) for i in range(len(ctx.node.input))]
    if eq is None or any(f is None or f.shape is None for f in facts):
        return None
    eq = (eq.decode(errors="replace") if isinstance(eq, bytes) else eq).replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(facts):
        raise ctx.error(f"equation {eq!r} has {len(terms)} operands, the node {len(facts)}")
    letters: dict = {}
    ellipses = []
    for term, f in zip(terms, facts):
        n_named = len(term.replace("...", ""))
        n_ell = len(f.shape) - n_named
        if n_ell < 0 or (n_ell and "..." not in term):
            raise ctx.error(f"operand {term!r} does not match rank {len(f.shape)}")
        pos = 0
        i = 0
        own: dict = {}  # letter -> its dim in this operand: a letter twice in one operand (a diagonal) is no broadcast
        while i < len(term):
            if term.startswith("...", i):
                ellipses.append(tuple(f.shape[pos:pos + n_ell]))
                pos += n_ell
                i += 3
                continue
            d = f.shape[pos]
            if term[i] in own and own[term[i]] != d:
                if isinstance(own[term[i]], int) and isinstance(d, int):
                    raise ctx.error(f"letter {term[i]!r} of operand {term!r} stands for dims {own[term[i]]} and {d}")
                ctx.condition(f"valid only when the dims of letter {term[i]!r} in operand {term!r} are equal",
                              "equal", own[term[i]], d)
            own.setdefault(term[i], d)
            letters.setdefault(term[i], []).append(d)
            pos += 1
            i += 1
    if len({len(e) for e in ellipses}) > 1:
        # (the spec broadcasts them numpy's way; onnx's inference, which onnxruntime runs at
        # load, asks every ellipsis to stand for as many dims and refuses the model otherwise)
        raise ctx.error(f"the ellipses of {eq!r} stand for {' and '.join(str(len(e)) for e in ellipses)} dims; "
                        "onnxruntime takes an equal number")
    ell = broadcast_shapes(ctx, ellipses) if ellipses else ()
    dims = {}
    for letter, ds in letters.items():
        dims[letter] = broadcast_shapes(ctx, [(d,) for d in ds])[0]
    if not arrow:  # implicit output: the ellipsis, then the letters used once, sorted
        counts: dict = {}
        for term in terms:
            for ch in term.replace("...", ""):
                counts[ch] = counts.get(ch, 0) + 1
        rhs = ("..." if ellipses else "") + "".join(sorted(ch for ch, c in counts.items() if c == 1))
    letters_out = [ch for ch in rhs.replace("...", "") if not ch.isspace()]
    if len(set(letters_out)) != len(letters_out):  # (onnxruntime fails every run: "repeated letters")
        raise ctx.error(f"the output of {eq!r} repeats a letter")
    for letter, d in dims.items():  # (a contracted letter's dims, left out of every output: said here)
        atom = as_single_atom(d) if isinstance(d, Expr) else None
        if letter not in letters_out and isinstance(atom, Bcast) and len(atom.args) == 2:
            ctx.condition(f"valid only when the dims of letter {letter!r} agree (or one of them is 1)", "broadcast",
                          *atom.args)
    out = []
    i = 0
    while i < len(rhs):
        if rhs.startswith("...", i):
            out.extend(ell)
            i += 3
            continue
        if rhs[i] not in dims:
            raise ctx.error(f"output letter {rhs[i]!r} of {eq!r} is not in any operand")
        out.append(dims[rhs[i]])
        i += 1
    return [Fact(dtype=facts[0].dtype, shape=tuple(out))]
