"""Random small ONNX graphs, deterministic from a seed, with what the spec says each tensor is.

``generate(seed)`` returns a :class:`Case`: the model, the bindings of its symbols (sizes 0, 1, 2,
3, 7; all-equal and mixed), the feeds for each binding, and the generator's own spec model of
every tensor at every binding (``spec.py``). The recipes mix shape-computing subgraphs (Shape,
Gather, Slice, Concat, Cast, arithmetic...) with the ops shapeinfer is about (Reshape, Expand,
Tile) and the ones its optimiser rewrites (reductions, elementwise ops with special constants,
Transpose, Identity, Cast), plus If/Loop/Scan, model-local functions and initializers that are
also graph inputs. Graph-input dims are symbols whose names may look like expressions ("a*b",
"3", "-1"): to ONNX those are opaque names, so a binding gives each distinct string its own size.

The spec model steers the generator toward graphs that run (a Reshape target whose element
count matches, a divisor that is never 0) while still building some that fail at some sizes.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from . import spec
from .spec import INT32_MAX, INT64_MAX, INT64_MIN, Invalid, Unknown

SIZES = (0, 1, 2, 3, 7)
PLAIN_NAMES = ["N", "S", "batch", "seq", "a", "b", "C", "H"]
# Names that look like expressions (or like shapeinfer's own printed/minted forms). To ONNX each is
# one opaque name.
TRICKY_NAMES = ["3", "a*b", "batch+1", "min(a,b)", "bcast(a,b)", "-1", "2*seq", "N-1", "0", "1",
                "seq//2", "a/2", "max(N,1)", "b%3", "N*N", "seq+0", "(a)", "u_1", "nonzero_1", "a + b",
                "batch_size", "2", "N+N", "-N", "7"]
OPSETS = [(3, 1), (5, 2), (7, 2), (9, 3), (11, 6), (12, 4), (13, 10), (14, 6), (15, 6), (16, 3),
          (17, 8), (18, 10), (19, 5), (20, 4), (21, 6), (22, 2), (23, 4)]
MAX_ELEMENTS = 300_000
# element types the ordinary recipes work on (the odd ones stay in recipes.r_odd_dtypes)
ORDINARY = frozenset({TP.FLOAT, TP.DOUBLE, TP.FLOAT16, TP.INT64, TP.INT32, TP.UINT8})
FLOAT_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, float("inf"), float("-inf"), float("nan"), 1e-45, 3.4e38, -7.25]
SNAN32 = np.array([0x7F800001], dtype=np.uint32).view(np.float32)[0]
NEG_QNAN32 = np.array([0xFFC00000], dtype=np.uint32).view(np.float32)[0]
NAN_PAYLOAD32 = np.array([0x7FC00123], dtype=np.uint32).view(np.float32)[0]


@dataclass(eq=False)
class V:
    """A tensor of the graph being built: its name, element type, and per binding its shape
    (tuple, or None where the spec model does not know it or the node fails) and, for small
    integer/bool tensors, its value."""

    name: str
    dtype: int
    shapes: list
    values: list
    tags: set = field(default_factory=set)

    def rank(self) -> Optional[int]:
        ranks = {len(s) for s in self.shapes if s is not None}
        return ranks.pop() if len(ranks) == 1 else None

    def known(self) -> bool:
        return all(s is not None for s in self.shapes)

    def valid_somewhere(self) -> bool:
        return any(s is not None for s in self.shapes)

    def static_dim(self, i) -> Optional[int]:
        ds = {s[i] for s in self.shapes if s is not None}
        return ds.pop() if len(ds) == 1 and all(s is not None for s in self.shapes) else None

    def ints(self) -> bool:
        return all(v is not None for v in self.values)


@dataclass
class Case:
    seed: int
    model: onnx.ModelProto
    symbols: list  # the dim_param strings of the graph inputs
    bindings: list  # per binding: {dim_param: size} (hidden names for unnamed dims start with '#')
    feeds: list  # per binding: {input name: array}, or None where the binding is not run
    vals: dict  # tensor name -> V (the spec model)
    notes: list  # what the generator built, for the summary
    skipped_bindings: dict = field(default_factory=dict)  # binding index -> why it is not run
    int_pow: bool = False

    def binding(self, b) -> dict:
        return {k: v for k, v in self.bindings[b].items() if not k.startswith("#")}


def np_of(dtype):
    return helper.tensor_dtype_to_np_dtype(dtype)


class Builder:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.seed = seed
        r = self.rng
        self.opset = r.choices([o for o, _ in OPSETS], weights=[w for _, w in OPSETS])[0]
        self.nodes: list = []
        self.inits: list = []
        self.inputs: list = []
        self.init_inputs: dict = {}  # name -> value fed at run time (differs from the stored one)
        self.functions: dict = {}
        self.extra_opsets: dict = {}
        self.pool: list = []
        self.vals: dict = {}
        self.counter = 0
        self.notes: list = []
        self.shape_cache: dict = {}
        self.value_info: list = []
        self.int_pow = False
        self.crash_checks: list = []  # (tensor, axis): a binding where that axis is 0 is not run
        self.bad: set = set()  # bindings where some node fails by the spec
        self.marked = self.rng.random() < 0.1  # marked as written by shapeinfer: dims in printed syntax
        # symbols and bindings
        nsym = r.choice([1, 1, 2, 2, 3])
        names = []
        tricky = 0.0 if "tricky_names" in os.environ.get("SHAPEINFER_ADVERSARIAL_EXCLUDE", "") else 0.35
        for _ in range(nsym):
            pool = TRICKY_NAMES if r.random() < tricky else PLAIN_NAMES
            n = r.choice(pool)
            if n not in names:
                names.append(n)
        self.symbols = names
        self.hidden = []  # unnamed input dims get a hidden symbol of their own
        self.bindings = self._bindings(names)
        self.nb = len(self.bindings)

    # -- bindings ----------------------------------------------------------------------------

    def _bindings(self, names):
        r = self.rng
        out = [{n: s for n in names} for s in (0, 1, 2, 3)]
        if r.random() < 0.5:
            out.append({n: 7 for n in names})
        for _ in range(r.choice([2, 3])):
            out.append({n: r.choice(SIZES) for n in names})
        # distinct bindings only, order kept
        seen, uniq = set(), []
        for b in out:
            k = tuple(sorted(b.items()))
            if k not in seen:
                seen.add(k)
                uniq.append(b)
        return uniq

    def hidden_symbol(self):
        name = f"#u{len(self.hidden)}"
        self.hidden.append(name)
        for b in self.bindings:
            b[name] = self.rng.choice(SIZES[1:])
        return name

    # -- basic emission ------------------------------------------------------------------------

    def fresh(self, base="t"):
        self.counter += 1
        return f"{base}{self.counter}"

    def add_val(self, name, dtype, shapes, values, tags=()) -> V:
        values = [v if v is None or v.size <= 4096 else None for v in values]
        v = V(name, dtype, shapes, values, set(tags))
        self.vals[name] = v
        self.pool.append(v)
        return v

    def const(self, arr, dtype=None, how=None, name=None, fed=None, tags=()) -> V:
        """A constant: an initializer or a Constant node; ``fed`` makes it an initializer that is
        also a graph input, fed that other value at run time."""
        r = self.rng
        arr = np.asarray(arr) if dtype is None else np.asarray(arr, dtype=np_of(dtype))
        dtype = helper.np_dtype_to_tensor_dtype(arr.dtype) if dtype is None else dtype
        name = name or self.fresh("c")
        how = how or r.choice(["init", "init", "node"])
        if self.opset < 9 and arr.dtype.kind not in "f":
            how = "init"  # Constant-1 holds float types only
        if fed is not None and (self.opset < 9 or "fed_initializer" in os.environ.get("SHAPEINFER_ADVERSARIAL_EXCLUDE", "")):
            fed = None  # IR 3: onnxruntime refuses feeds for initializers (deviations.py)
        if fed is not None:
            how = "init"
        if how == "init":
            self.inits.append(numpy_helper.from_array(arr, name))
            if fed is not None:
                fed = np.asarray(fed, dtype=arr.dtype)
                self.init_inputs[name] = fed
                self.inputs.append(helper.make_tensor_value_info(name, dtype, list(arr.shape)))
                arr = fed
        else:
            self.nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name + "_value"),
                                               name=self.fresh("Constant_")))
        val = arr if arr.dtype.kind in "iub" else None
        return self.add_val(name, dtype, [tuple(arr.shape)] * self.nb, [val] * self.nb,
                            tags=set(tags) | ({"const"} if fed is None else {"fed"}))

    def i64(self, xs, how=None, fed=None) -> V:
        return self.const(np.array(xs, dtype=np.int64), how=how, fed=fed)

    def emit(self, op, inputs, fn, attrs=None, n_out=1, out_dtypes=None, domain="", name=None, tags=()) -> list:
        """Add a node; ``fn(b, ins)`` gives the spec's (shape, value) per output at binding b."""
        attrs = attrs or {}
        outs = [self.fresh(op[:3].lower() if op[0].isupper() else op) for _ in range(n_out)]
        in_names = [v.name if v is not None else "" for v in inputs]
        while in_names and in_names[-1] == "":
            in_names.pop()
        node_name = name if name is not None else (self.fresh(f"{op}_") if self.rng.random() < 0.85 else "")
        empty = [k for k, v in attrs.items() if isinstance(v, list) and not v]
        node = helper.make_node(op, in_names, outs, name=node_name, domain=domain,
                                **{k: v for k, v in attrs.items() if k not in empty})
        for k in empty:  # an empty list has no type of its own: say it is INTS
            node.attribute.append(helper.make_attribute(k, [], attr_type=onnx.AttributeProto.INTS))
        self.nodes.append(node)
        if out_dtypes is None:
            out_dtypes = [inputs[0].dtype] * n_out
        per_b = []
        for b in range(self.nb):
            ins = [None if v is None else (v.shapes[b], v.values[b]) for v in inputs]
            if any(x is not None and x[0] is None for x in ins):
                per_b.append([(None, None)] * n_out)
                continue
            try:
                res = fn(b, ins)
                res = [(tuple(int(d) for d in s), val) for s, val in res]
            except Invalid:
                self.bad.add(b)
                res = [(None, None)] * n_out
            except (Unknown, ValueError, IndexError, TypeError, KeyError, OverflowError, ZeroDivisionError):
                res = [(None, None)] * n_out
            per_b.append(res)
        made = []
        for k, o in enumerate(outs):
            shapes = [per_b[b][k][0] for b in range(self.nb)]
            values = [per_b[b][k][1] for b in range(self.nb)]
            made.append(self.add_val(o, out_dtypes[k], shapes, values, tags))
        return made

    def emit1(self, *a, **k) -> V:
        return self.emit(*a, **k)[0]

    def snapshot(self):
        return (len(self.nodes), len(self.inits), len(self.inputs), len(self.pool), dict(self.vals),
                dict(self.init_inputs), dict(self.functions), dict(self.extra_opsets), len(self.value_info),
                dict(self.shape_cache), len(self.crash_checks), self.int_pow, set(self.bad))

    def restore(self, snap):
        n, i, inp, p, vals, ii, fn, eo, vi, sc, cc, ip, bad = snap
        self.bad = bad
        del self.nodes[n:], self.inits[i:], self.inputs[inp:], self.pool[p:], self.value_info[vi:], self.crash_checks[cc:]
        self.vals, self.init_inputs, self.functions, self.extra_opsets, self.shape_cache = vals, ii, fn, eo, sc
        self.int_pow = ip

    # -- picking -------------------------------------------------------------------------------

    def pick(self, pred, recent=True) -> Optional[V]:
        cands = [v for v in self.pool if pred(v)]
        if not cands:
            return None
        if recent and self.rng.random() < 0.6:
            return cands[-1 - min(int(self.rng.expovariate(0.7)), len(cands) - 1)]
        return self.rng.choice(cands)

    def data(self, min_rank=0, max_rank=6, float_only=False) -> Optional[V]:
        def ok(v):
            r = v.rank()
            if r is None or not min_rank <= r <= max_rank or not v.valid_somewhere() or "shape" in v.tags:
                return False
            if float_only and v.dtype not in (TP.FLOAT, TP.DOUBLE, TP.FLOAT16):
                return False
            return v.dtype in ORDINARY
        return self.pick(ok)

    def shape_vec(self, length=None) -> Optional[V]:
        def ok(v):
            return (v.dtype == TP.INT64 and v.rank() == 1 and v.ints()
                    and (length is None or all(s == (length,) for s in v.shapes)))
        return self.pick(ok)

    def int_scalar(self) -> Optional[V]:
        return self.pick(lambda v: v.dtype == TP.INT64 and v.rank() == 0 and v.ints())

    # -- graph inputs ----------------------------------------------------------------------------

    def add_input(self, rank=None, dtype=TP.FLOAT):
        r = self.rng
        rank = r.choice([0, 1, 2, 2, 3, 3, 4]) if rank is None else rank
        dims, sizes_per_b = [], [[] for _ in range(self.nb)]
        for _ in range(rank):
            u = r.random()
            if u < 0.6:
                name = r.choice(self.symbols)
                dims.append(name)
                for b in range(self.nb):
                    sizes_per_b[b].append(self.bindings[b][name])
            elif u < 0.88:
                k = r.choice([1, 1, 2, 3, 4, 0])
                dims.append(k)
                for b in range(self.nb):
                    sizes_per_b[b].append(k)
            else:
                h = self.hidden_symbol()
                # an unnamed dim; now and then written dim_value -1, as some exporters do (onnx's
                # checker and onnxruntime take it for a dynamic dim)
                minus1 = r.random() >= 0.85 and "minus1_dims" not in os.environ.get("SHAPEINFER_ADVERSARIAL_EXCLUDE", "")
                dims.append("#minus1" if minus1 else None)
                for b in range(self.nb):
                    sizes_per_b[b].append(self.bindings[b][h])
        name = self.fresh("x")
        vi = helper.make_tensor_value_info(name, dtype, [None if d == "#minus1" else d for d in dims])
        for d, dp in zip(dims, vi.type.tensor_type.shape.dim):
            if d == "#minus1":
                dp.dim_value = -1
        if r.random() < 0.1:
            vi.doc_string = "an input; its dims are " + ",".join(str(d) for d in dims)
        self.inputs.append(vi)
        return self.add_val(name, dtype, [tuple(s) for s in sizes_per_b], [None] * self.nb, tags={"input"})

    # -- shape values ------------------------------------------------------------------------------

    def shape_of(self, x: V, start=None, end=None) -> V:
        attrs = {}
        if self.opset >= 15:
            if start is not None:
                attrs["start"] = start
            if end is not None:
                attrs["end"] = end
        key = (x.name, tuple(sorted(attrs.items())))
        if key in self.shape_cache and self.rng.random() < 0.7:
            return self.shape_cache[key]
        v = self.emit1("Shape", [x], lambda b, ins: spec.shape_op(attrs, ins), attrs=attrs, out_dtypes=[TP.INT64],
                       tags={"shape"})
        self.shape_cache[key] = v
        return v

    def unsqueeze0(self, s: V, axis=0) -> V:
        if self.opset < 13:
            return self.emit1("Unsqueeze", [s], lambda b, ins: spec.unsqueeze({"axes": [axis]}, ins, self.opset),
                              attrs={"axes": [axis]}, tags={"shape"})
        ax = self.i64([axis])
        return self.emit1("Unsqueeze", [s, ax], lambda b, ins: spec.unsqueeze({}, ins, self.opset), tags={"shape"})

    def squeeze_v(self, s: V, axes) -> V:
        if self.opset < 13:
            attrs = {"axes": axes} if axes is not None else {}
            return self.emit1("Squeeze", [s], lambda b, ins: spec.squeeze(attrs, ins, self.opset), attrs=attrs, tags={"shape"})
        inputs = [s] + ([self.i64(axes)] if axes is not None else [])
        return self.emit1("Squeeze", inputs, lambda b, ins: spec.squeeze({}, ins, self.opset), tags={"shape"})

    def gather(self, data: V, idx: V, axis=0, tags=("shape",)) -> V:
        attrs = {"axis": axis} if axis != 0 or self.rng.random() < 0.3 else {}
        return self.emit1("Gather", [data, idx], lambda b, ins: spec.gather(attrs, ins), attrs=attrs, tags=set(tags))

    def slice(self, data: V, starts, ends, axes=None, steps=None, tags=()) -> V:
        """Slice in the form of the model's opset; starts/ends/axes/steps are lists (or V)."""
        r = self.rng
        if self.opset < 10:
            attrs = {"starts": list(starts), "ends": list(ends)}
            if axes is not None:
                attrs["axes"] = list(axes)
            return self.emit1("Slice", [data], lambda b, ins: spec.slice_op(attrs, ins, self.opset), attrs=attrs, tags=set(tags))
        dt = TP.INT64 if r.random() < 0.85 else TP.INT32
        lists = [x for x in (starts, ends, axes, steps) if x is not None and not isinstance(x, V)]
        if any(isinstance(x, V) for x in (starts, ends, axes, steps)) or any(
                not spec.INT32_MIN <= e <= spec.INT32_MAX for xs in lists for e in xs):
            dt = TP.INT64  # all four inputs share one type

        def as_v(xs):
            if isinstance(xs, V) or xs is None:
                return xs
            return self.const(np.array(xs, dtype=np_of(dt)))
        ins = [data, as_v(starts), as_v(ends)]
        if axes is not None or steps is not None:
            ins.append(as_v(axes) if axes is not None else None)
        if steps is not None:
            ins.append(as_v(steps))
        return self.emit1("Slice", ins, lambda b, ins_: spec.slice_op({}, ins_, self.opset), tags=set(tags))

    def dim_vec(self, x: V, i: int) -> V:
        """A 1-D int64 [1] holding x's dim i, computed in one of the ways exports do it."""
        r = self.rng
        rank = x.rank()
        j = i - rank if r.random() < 0.4 else i
        u = r.random()
        if self.opset >= 15 and u < 0.2:
            end = i + 1 if r.random() < 0.6 or i + 1 < rank else r.choice([INT64_MAX, rank + 5, 2**31 - 1])
            return self.shape_of(x, start=j, end=end if j >= 0 or end != rank else (j + 1 if j + 1 < 0 else rank))
        s = self.shape_of(x)
        if u < 0.45:
            return self.gather(s, self.i64([j]))
        if u < 0.7:
            return self.unsqueeze0(self.gather(s, self.const(np.array(j, np.int64))))
        if u < 0.85:
            end = i + 1
            if i == rank - 1 and r.random() < 0.5:
                end = r.choice([INT64_MAX, INT32_MAX, rank + 3, 1000])
            return self.slice(s, [j], [end], axes=[0] if r.random() < 0.5 else None,
                              steps=[1] if r.random() < 0.3 else None, tags={"shape"})
        # negative step: one element, from i down to i-1 (exclusive)
        end = i - 1 if i >= 1 else r.choice([-rank - 1, -rank - 7, INT64_MIN, -(2**31)])
        return self.slice(s, [j], [end], axes=[0], steps=[-1], tags={"shape"})

    def dim_scalar(self, x: V, i: int) -> V:
        rank = x.rank()
        j = i - rank if self.rng.random() < 0.4 else i
        return self.gather(self.shape_of(x), self.const(np.array(j, np.int64)))

    def concat(self, parts: list, axis=0, tags=("shape",)) -> V:
        if len(parts) == 1 and self.rng.random() < 0.7:
            return parts[0]
        if axis == 0 and self.opset >= 11 and self.rng.random() < 0.3:
            axis = -1
        return self.emit1("Concat", parts, lambda b, ins: spec.concat({"axis": axis}, ins), attrs={"axis": axis}, tags=set(tags))

    def binop(self, op, a: V, b_: V, attrs=None, tags=("shape",)) -> V:
        attrs = attrs or {}
        return self.emit1(op, [a, b_], lambda b, ins: spec.binary(op, attrs, ins), attrs=attrs, tags=set(tags))

    def product(self, parts: list) -> V:
        """The product of 1-D [1] dims, by a Mul chain or by ReduceProd of their Concat."""
        if len(parts) == 1:
            return parts[0]
        if self.rng.random() < 0.5 or self.opset < 11:
            out = parts[0]
            for p in parts[1:]:
                out = self.binop("Mul", out, p)
            return out
        return self.reduce_vec("ReduceProd", self.concat(parts), keepdims=1)

    def reduce_vec(self, op, v: V, keepdims=1) -> V:
        attrs = {"keepdims": keepdims}
        if (op == "ReduceSum" and self.opset >= 13) or self.opset >= 18:
            with_axes = self.rng.random() < 0.5
            if not with_axes and self.rng.random() < 0.3:
                attrs["noop_with_empty_axes"] = 1  # no reduction, but SumSquare still squares
            ins = [v] + ([self.i64([0])] if with_axes else [])
            return self.emit1(op, ins, lambda b, ins_: spec.reduce_op(op, attrs, ins_, True), attrs=attrs, tags={"shape"})
        if self.rng.random() < 0.5:
            attrs["axes"] = [0]
        return self.emit1(op, [v], lambda b, ins_: spec.reduce_op(op, attrs, ins_, False), attrs=attrs, tags={"shape"})

    def cast(self, v: V, to: int, tags=("shape",)) -> V:
        attrs = {"to": to}
        return self.emit1("Cast", [v], lambda b, ins: spec.cast(attrs, ins), attrs=attrs, out_dtypes=[to], tags=set(tags))

    def finalize(self, outputs: list) -> onnx.ModelProto:
        r = self.rng
        outs = []
        for v in outputs:
            shape = None
            if r.random() < 0.25:
                shape = self.declared_shape(v)
            if shape is None and v.rank() is not None:  # the rank, dims unnamed
                shape = [None] * v.rank()  # (an unknown rank is declared with no shape at all)
            outs.append(helper.make_tensor_value_info(v.name, v.dtype, shape))
        try:
            ir = max(3, onnx.helper.find_min_ir_version_for([helper.make_opsetid("", self.opset)]))
        except ValueError:
            ir = 10
        if self.functions:
            ir = max(ir, 8)
        inputs = list(self.inputs)
        if ir < 4:  # IR version 3: every initializer is also a graph input (not fed here)
            listed = {vi.name for vi in inputs}
            for t in self.inits:
                if t.name not in listed:
                    inputs.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        graph = helper.make_graph(self.nodes, f"adv{self.seed}", inputs, outs, self.inits, value_info=self.value_info)
        if r.random() < 0.2:
            graph.doc_string = "generated by tests/adversarial"
        opsets = [helper.make_opsetid("", self.opset)]
        for dom, ver in self.extra_opsets.items():
            opsets.append(helper.make_opsetid(dom, ver))
        if r.random() < 0.15:  # imports nothing uses
            opsets.append(helper.make_opsetid(r.choice(["ai.onnx.ml", "com.microsoft", "ai.onnx.preview.training"]), 1))
        model = helper.make_model(graph, opset_imports=opsets, ir_version=ir, functions=list(self.functions.values()))
        props = {}
        if self.marked:  # the marker of models shapeinfer wrote: declared dims become claims
            props["shapeinfer.dim_syntax"] = "expressions-1"
        if r.random() < 0.3:
            model.producer_name = "shapeinfer-adversarial"
            model.doc_string = "a random graph"
            props["seed"] = str(self.seed)
        if props:
            helper.set_model_props(model, props)
        return model

    def declared_shape(self, v: V):
        """A declared shape built from the inputs' symbols where the spec model sees one symbol's
        size at every binding (else None: no dim_param), or a static size. In a model marked as
        written by shapeinfer, a dim that is a*sym+c at every binding is declared in the printed
        syntax ("2*N+1"), and now and then off by one (a claim check must catch, never believe)."""
        if v.rank() is None or not v.known():
            return None
        out = []
        for i in range(v.rank()):
            sizes = [s[i] for s in v.shapes]
            if any(not 0 <= x <= INT64_MAX for x in sizes):
                out.append(None)  # past int64 (a size the runtime never makes)
                continue
            if len(set(sizes)) == 1:
                out.append(sizes[0])
                continue
            match = [n for n in self.symbols if [bd[n] for bd in self.bindings] == sizes]
            if match and not (self.marked and self.rng.random() < 0.5):
                out.append(match[0])
                continue
            expr = self.linear_claim(sizes) if self.marked else None
            out.append(expr or (f"out_dim_{i}" if self.rng.random() < 0.5 else None))
        return out

    def linear_claim(self, sizes):
        for n in self.symbols:
            if not n.isidentifier():
                continue
            xs = [bd[n] for bd in self.bindings]
            pairs = {(x, y) for x, y in zip(xs, sizes)}
            if len({x for x, _ in pairs}) < 2 or len(pairs) != len({x for x, _ in pairs}):
                continue
            (x0, y0), (x1, y1) = sorted(pairs)[:2]
            if (y1 - y0) % (x1 - x0):
                continue
            a = (y1 - y0) // (x1 - x0)
            c = y0 - a * x0
            if a == 0 or any(y != a * x + c for x, y in pairs):
                continue
            if self.rng.random() < 0.2:
                c += 1  # a wrong claim
            text = n if a == 1 else f"{a}*{n}"
            return text if c == 0 else f"{text}{c:+d}"
        return None


class SkipRecipe(Exception):
    """The recipe found nothing to work on."""


from .recipes import RECIPES  # noqa: E402  (the recipes use Builder)


def generate(seed: int, max_recipes: Optional[int] = None) -> Case:
    b = Builder(seed)
    r = b.rng
    n_inputs = r.choice([1, 1, 2, 2, 3])
    for _ in range(n_inputs):
        dt = TP.FLOAT if r.random() < 0.85 else r.choice([TP.INT64, TP.INT32, TP.DOUBLE, TP.FLOAT16, TP.BOOL, TP.UINT8])
        b.add_input(dtype=dt)
    if not any(v.dtype == TP.FLOAT for v in b.pool):
        b.add_input(dtype=TP.FLOAT)
    k = r.choice([2, 3, 4, 5, 6, 8, 10, 12]) if max_recipes is None else max_recipes
    excluded = set(filter(None, os.environ.get("SHAPEINFER_ADVERSARIAL_EXCLUDE", "").split(",")))
    names, weights = zip(*[(n, w) for n, (w, minop, _) in RECIPES.items() if b.opset >= minop and n not in excluded])
    for _ in range(k):
        name = r.choices(names, weights=weights)[0]
        snap = b.snapshot()
        bad_before = set(b.bad)
        try:
            RECIPES[name][2](b)
        except SkipRecipe:
            b.restore(snap)  # nothing half-built stays
            continue
        # a node that fails by the spec at every binding makes the whole graph fail: mostly undo
        # it; one that fails at more bindings than before, sometimes (a few stay, for the errors)
        if (len(b.bad) == b.nb and r.random() < 0.9) or (b.bad - bad_before and r.random() < 0.4):
            b.restore(snap)
            continue
        b.notes.append(name)
    # outputs: the tensors nothing reads, then a few more
    read = {i for n in b.nodes for i in n.input} | {i for n in b.nodes for a in n.attribute if a.g for nn in a.g.node for i in nn.input}
    produced = [o for n in b.nodes for o in n.output if o in b.vals]
    sinks = [b.vals[o] for o in produced if o not in read and b.vals[o].rank() is not None]
    extra = [b.vals[o] for o in produced if o in read and r.random() < 0.15 and b.vals[o].rank() is not None]
    outputs = []
    for v in sinks + extra:
        if v not in outputs:
            outputs.append(v)
    if not outputs:
        outputs = [b.pool[-1]]
    model = b.finalize(outputs)
    feeds, skipped = make_feeds(b, model)
    return Case(seed, model, list(b.symbols), b.bindings, feeds, b.vals, b.notes, skipped, b.int_pow)


def make_feeds(b: Builder, model) -> tuple:
    rng = np.random.default_rng(b.seed)
    init_names = {t.name for t in model.graph.initializer}
    feeds, skipped = [], {}
    for k in range(b.nb):
        too_big = [v.name for v in b.vals.values() if v.shapes[k] is not None and spec.numel(v.shapes[k]) > MAX_ELEMENTS]
        unknown_big = [v.name for v in b.vals.values() if v.shapes[k] is None and "bounded" not in v.tags and "unbounded" in v.tags]
        crash = [v.name for v, axis in b.crash_checks if v.shapes[k] is not None and v.shapes[k][axis] == 0]
        if too_big or unknown_big or crash:
            skipped[k] = ("tensor too large: " + too_big[0]) if too_big else (
                "size not known to the generator: " + unknown_big[0] if unknown_big else "onnxruntime crashes (Scan over an empty axis)")
            feeds.append(None)
            continue
        f = {}
        for vi in model.graph.input:
            if vi.name in init_names:
                if vi.name in b.init_inputs:
                    f[vi.name] = b.init_inputs[vi.name]
                continue
            v = b.vals[vi.name]
            f[vi.name] = random_array(rng, v.dtype, v.shapes[k])
        feeds.append(f)
    return feeds, skipped


def random_array(rng, dtype, shape):
    npd = np_of(dtype)
    if dtype == TP.BOOL:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(npd, np.integer):
        return rng.integers(0, 8, shape).astype(npd)
    a = rng.standard_normal(shape).astype(npd)
    if a.size and rng.random() < 0.5:
        flat = a.reshape(-1)
        for _ in range(rng.integers(1, 4)):
            flat[rng.integers(0, flat.size)] = rng.choice([-0.0, 0.0, np.inf, -np.inf, np.nan, 1.0, -1.0])
        if npd == np.float32 and rng.random() < 0.3:
            flat[rng.integers(0, flat.size)] = SNAN32
    return a
