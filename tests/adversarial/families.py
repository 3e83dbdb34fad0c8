"""Families of models built on purpose, each enumerated in full and judged like a generated
graph (``runner.Judge``: every shape against onnxruntime at bindings with 0 and 1, every
optimised and annotated model loaded with optimisations off and at the default level and its
outputs compared, check's verdict against onnxruntime's session creation both ways, no crash).

The random generator (``gen.py``) draws few of these shapes by chance; a family spans one kind
of model along every axis that matters to it:

``value_forms``       0-d and 1-d values made from sizes (Size, a gathered dim, ReduceProd of a
                      shape) cast to every element type, read by every op with a value rule
                      (If, Where, Not, Cast, arithmetic, comparisons, Unsqueeze, Range, ...)
``function_attrs``    attributes forwarded through model-local functions one to three levels
                      deep, given, referenced or absent at each level, with and without defaults
``unreached_errors``  a node that breaks its op's rule (Squeeze, Reshape, MatMul, Concat, Expand,
                      broadcasting, TopK, DepthToSpace) inside code that may not run -- an If
                      branch under a data or a size condition, a Loop that may make no trip, a
                      Scan over a possibly empty sequence, an If in a Loop, an If in a function
                      -- with static shapes onnxruntime sees at load, or dims only values show
``dim_names``         dims whose opaque names spell expressions (``a*b``, ``N+1``, ``2*N``)
                      beside computed dims that print the same, read by the shape patterns
                      onnxruntime's fusions match

``python -m tests.adversarial.families [FAMILY...]`` judges every case and prints a summary;
tests/test_families.py runs a sample of each family by default and every case with
``SHAPEINFER_FAMILIES=all``.
"""

from __future__ import annotations

import itertools
import os
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper

from .runner import Judge, Outcome

# raise mode (shapeinfer/errors.py): a bug reaches the judge as a crash, never as an exit code
# or an internal-error finding -- run from the shell as in the test run
os.environ.setdefault("SHAPEINFER_RAISE", "1")


@dataclass
class Case:
    family: str
    name: str
    model: onnx.ModelProto
    symbols: list
    bindings: list
    feeds: list
    variants: Optional[list] = field(default=None)

    def judge(self) -> Outcome:
        return Judge(self.model, self.symbols, self.bindings, self.feeds, seed=None, variants=self.variants).run()


FAMILIES: dict = {}  # name -> function returning the family's cases, in a fixed order


def family(name: str):
    def register(fn: Callable[[], list]):
        FAMILIES[name] = fn
        return fn

    return register


# ----------------------------------------------------------------------------------- feeds


_NP = {TP.FLOAT: np.float32, TP.DOUBLE: np.float64, TP.FLOAT16: np.float16, TP.INT64: np.int64, TP.INT32: np.int32,
       TP.INT8: np.int8, TP.UINT8: np.uint8, TP.INT16: np.int16, TP.UINT16: np.uint16, TP.UINT32: np.uint32,
       TP.UINT64: np.uint64, TP.BOOL: np.bool_}


def symbols_of(model) -> list:
    inits = {t.name for t in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param and d.dim_param not in out:
                out.append(d.dim_param)
    return out


def make_case(fam: str, name: str, model, sizes=(0, 1, 2, 3), data: Optional[dict] = None, variants=None) -> Case:
    """A case at each size (every symbol that size) and one mixed binding; ``data``: input name ->
    the values it takes (each binding is run once per value, the value kept under ``#name``)."""
    syms = symbols_of(model)
    base = [{s: n for s in syms} for n in sizes]
    if len(syms) > 1:
        base.append({s: sizes[(i + 1) % len(sizes)] + i for i, s in enumerate(syms)})
    data = data or {}
    combos = list(itertools.product(*[[(k, v) for v in vs] for k, vs in data.items()])) or [()]
    bindings, feeds = [], []
    rng = np.random.default_rng(len(name))
    inits = {t.name for t in model.graph.initializer}
    for b in base:
        for combo in combos:
            binding = dict(b)
            feed = {}
            for k, v in combo:
                binding[f"#{k}"] = v
                feed[k] = np.asarray(v, dtype=_NP[_elem(model, k)])
            for vi in model.graph.input:
                if vi.name in inits or vi.name in feed:
                    continue
                dims = [b[d.dim_param] if d.dim_param else d.dim_value for d in vi.type.tensor_type.shape.dim]
                elem = vi.type.tensor_type.elem_type
                if elem == TP.BOOL:
                    feed[vi.name] = rng.random(dims) < 0.5
                elif elem in (TP.FLOAT, TP.DOUBLE, TP.FLOAT16):
                    feed[vi.name] = rng.normal(size=dims).astype(_NP[elem])
                else:
                    feed[vi.name] = rng.integers(0, 5, size=dims).astype(_NP[elem])
            bindings.append(binding)
            feeds.append(feed)
    return Case(fam, name, model, syms, bindings, feeds, variants)


def _elem(model, name) -> int:
    return next(vi.type.tensor_type.elem_type for vi in model.graph.input if vi.name == name)


def _model(nodes, inputs, outputs, opset=18, inits=(), functions=()):
    """The model; outputs declared with the element type and rank onnx's inference gives them
    (dims left unnamed: a declaration the family does not test)."""
    graph = helper.make_graph(nodes, "family", inputs, outputs, list(inits))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in sorted({f.domain for f in functions})]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=9, functions=list(functions))
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except (onnx.shape_inference.InferenceError, ValueError, RuntimeError):
        return model
    types = {v.name: v.type for v in (*inferred.graph.value_info, *inferred.graph.output)}
    for o in model.graph.output:
        t = types.get(o.name)
        if t is not None and t.HasField("tensor_type") and t.tensor_type.elem_type:
            o.type.tensor_type.elem_type = t.tensor_type.elem_type
            if t.tensor_type.HasField("shape"):
                o.type.tensor_type.shape.SetInParent()
                for _ in t.tensor_type.shape.dim:
                    o.type.tensor_type.shape.dim.add()
    return model


def _out(name):
    return helper.make_empty_tensor_value_info(name)


def _i64(name, values, shape=None):
    arr = np.asarray(values, dtype=np.int64)
    return helper.make_tensor(name, TP.INT64, list(arr.shape) if shape is None else shape, arr.reshape(-1).tolist())


# ----------------------------------------------------------------------------------- value_forms

# What a 0-d or 1-d int64 value is made of (x: float[N,4]).
_PRODUCERS = {
    "size": lambda: [helper.make_node("Size", ["x"], ["v"])],
    "dim0": lambda: [helper.make_node("Shape", ["x"], ["s"]),
                     helper.make_node("Gather", ["s", "i0"], ["v"], axis=0)],
    "dim0_vec": lambda: [helper.make_node("Shape", ["x"], ["s"]),
                         helper.make_node("Gather", ["s", "i0v"], ["v"], axis=0)],
    "prod": lambda: [helper.make_node("Shape", ["x"], ["s"]),
                     helper.make_node("ReduceProd", ["s"], ["v"], keepdims=0)],
    "dim0_plus": lambda: [helper.make_node("Shape", ["x"], ["s"]),
                          helper.make_node("Gather", ["s", "i0"], ["g"], axis=0),
                          helper.make_node("Sub", ["g", "one"], ["v"])],
}
_TYPES = [TP.BOOL, TP.UINT8, TP.INT8, TP.INT16, TP.INT32, TP.INT64, TP.UINT16, TP.UINT32, TP.UINT64, TP.FLOAT,
          TP.DOUBLE, TP.FLOAT16, "uint8>bool"]
_SIGNED = {TP.INT8, TP.INT16, TP.INT32, TP.INT64, TP.FLOAT, TP.DOUBLE, TP.FLOAT16}
_NUMERIC = _SIGNED | {TP.UINT8, TP.UINT16, TP.UINT32, TP.UINT64}


def _consumers(t) -> dict:
    """consumer name -> nodes reading "c" (of type t) and making "y"."""
    out = {
        "output": [helper.make_node("Identity", ["c"], ["y"])],
        "unsqueeze": [helper.make_node("Unsqueeze", ["c", "a0"], ["y"])],
        "reshape": [helper.make_node("Reshape", ["c", "m1"], ["y"])],
        "expand": [helper.make_node("Expand", ["c", "two"], ["y"])],
        "concat": [helper.make_node("Unsqueeze", ["c", "a0"], ["u"]),
                   helper.make_node("Concat", ["u", "u"], ["y"], axis=-1)],
        "cast_float": [helper.make_node("Cast", ["c"], ["y"], to=TP.FLOAT)],
        "cast_int64": [helper.make_node("Cast", ["c"], ["y"], to=TP.INT64)],
        "cast_bool": [helper.make_node("Cast", ["c"], ["y"], to=TP.BOOL)],
        "shape_of": [helper.make_node("Shape", ["c"], ["y"])],
        "equal": [helper.make_node("Equal", ["c", "c"], ["y"])],
    }
    if t == TP.BOOL:
        out.update({
            "if": [helper.make_node("If", ["c"], ["y"], then_branch=_branch("t", "Neg"), else_branch=_branch("e", "Abs"))],
            "where": [helper.make_node("Where", ["c", "x", "nx"], ["y"])],
            "not": [helper.make_node("Not", ["c"], ["y"])],
            "and_or_xor": [helper.make_node("And", ["c", "c"], ["p"]), helper.make_node("Not", ["c"], ["q"]),
                           helper.make_node("Or", ["p", "q"], ["r"]), helper.make_node("Xor", ["r", "c"], ["y"])],
        })
    if t in _NUMERIC:
        out.update({
            "add_mul": [helper.make_node("Add", ["c", "c"], ["p"]), helper.make_node("Mul", ["p", "c"], ["y"])],
            "less": [helper.make_node("Less", ["c", "c"], ["y"])],
            "max_min": [helper.make_node("Max", ["c", "c"], ["p"]), helper.make_node("Min", ["p", "c"], ["y"])],
        })
    if t in _SIGNED:
        out["neg_abs"] = [helper.make_node("Neg", ["c"], ["p"]), helper.make_node("Abs", ["p"], ["y"])]
    if t == TP.INT64:
        out.update({
            "range": [helper.make_node("Range", ["zero", "c", "one"], ["y"])],
            "const_of_shape": [helper.make_node("Reshape", ["c", "m1"], ["r"]),
                               helper.make_node("ConstantOfShape", ["r"], ["y"])],
            "div_mod": [helper.make_node("Div", ["c", "three"], ["p"]), helper.make_node("Mod", ["c", "three"], ["q"]),
                        helper.make_node("Add", ["p", "q"], ["y"])],
        })
    return out


def _branch(name, op):
    return helper.make_graph([helper.make_node(op, ["x"], ["o"])], name, [], [_out("o")])


def _value_model(producer: str, t, consumer: str):
    nodes = list(_PRODUCERS[producer]())
    if t == "uint8>bool":
        nodes += [helper.make_node("Cast", ["v"], ["w"], to=TP.UINT8), helper.make_node("Cast", ["w"], ["c"], to=TP.BOOL)]
        t = TP.BOOL
    else:
        nodes.append(helper.make_node("Cast", ["v"], ["c"], to=t))
    consumers = _consumers(t)
    if consumer not in consumers:
        return None
    if producer == "dim0_vec" and consumer == "range":
        return None  # (Range takes scalars)
    nodes += consumers[consumer]
    nodes.insert(0, helper.make_node("Neg", ["x"], ["nx"]))
    inits = [_i64("i0", 0, []), _i64("i0v", [0]), _i64("one", 1, []), _i64("zero", 0, []), _i64("three", 3, []),
             _i64("a0", [0]), _i64("m1", [-1]), _i64("two", [2])]
    x = helper.make_tensor_value_info("x", TP.FLOAT, ["N", 4])
    return _model(nodes, [x], [_out("y"), _out("c")], opset=18, inits=inits)


@family("value_forms")
def value_forms() -> list:
    cases = []
    for producer, t in itertools.product(_PRODUCERS, _TYPES):
        for consumer in _consumers(TP.BOOL if t == "uint8>bool" else t):
            m = _value_model(producer, t, consumer)
            if m is not None:
                tname = t if isinstance(t, str) else TP.DataType.Name(t).lower()
                cases.append(make_case("value_forms", f"{producer}-{tname}-{consumer}", m))
    return cases


# ----------------------------------------------------------------------------------- function_attrs


def _attr_chain(depth: int, modes: tuple, defaults: tuple, op: str):
    """Main calls F1; Fk calls F(k+1); the last calls op. modes[k]: how call k gives the
    attribute ('given' a value, 'ref' to the caller's, 'absent'); defaults[k]: whether function k
    declares a default."""
    attr, values, default_value = {"Flatten": ("axis", (2, 1), 0), "Softmax": ("axis", (0, 1), -1),
                                   "Transpose": ("perm", ([2, 0, 1], [1, 2, 0]), [0, 2, 1])}[op]
    functions = []
    for k in range(depth):  # function k: F{k}
        name, nxt = f"F{k}", f"F{k + 1}"
        callee_op, domain = (op, "") if k == depth - 1 else (nxt, "fam")
        mode = modes[k + 1]
        node = helper.make_node(callee_op, ["x"], ["y"], domain=domain)
        if mode == "given":
            node.attribute.append(helper.make_attribute(attr, values[1]))
        elif mode == "ref":
            ref = onnx.AttributeProto()
            ref.name, ref.ref_attr_name = attr, "a"
            ref.type = onnx.AttributeProto.INTS if isinstance(values[0], list) else onnx.AttributeProto.INT
            node.attribute.append(ref)
        f = helper.make_function("fam", name, ["x"], ["y"], [node],
                                 [helper.make_opsetid("", 18), helper.make_opsetid("fam", 1)], attributes=[] if defaults[k] else ["a"])
        if defaults[k]:
            f.attribute_proto.append(helper.make_attribute("a", default_value))
        functions.append(f)
    call = helper.make_node("F0", ["x"], ["y"], domain="fam")
    if modes[0] == "given":
        call.attribute.append(helper.make_attribute("a", values[0]))
    x = helper.make_tensor_value_info("x", TP.FLOAT, ["A", "B", "C"])
    return _model([call], [x], [_out("y")], opset=18, functions=functions)


@family("function_attrs")
def function_attrs() -> list:
    cases = []
    for op in ("Flatten", "Softmax", "Transpose"):
        for depth in (1, 2, 3):
            for modes in itertools.product(("given", "absent"), *[("given", "ref", "absent")] * depth):
                for defaults in itertools.product((False, True), repeat=depth):
                    m = _attr_chain(depth, modes, defaults, op)
                    name = f"{op}-d{depth}-{'.'.join(modes)}-{''.join('D' if d else '_' for d in defaults)}"
                    cases.append(make_case("function_attrs", name, m, sizes=(0, 1, 2, 3),
                                           variants=[("default", {})]))
    return cases


# ----------------------------------------------------------------------------------- unreached_errors

# A node that breaks its op's rule, reading X (float[R,3] with R=2 static or R from a dim).
_BREAKS = {
    "squeeze": lambda: [helper.make_node("Squeeze", ["X", "ax1"], ["o"])],
    "reshape": lambda: [helper.make_node("Reshape", ["X", "sh45"], ["o"])],
    "matmul": lambda: [helper.make_node("MatMul", ["X", "W45"], ["o"])],
    "concat": lambda: [helper.make_node("Concat", ["X", "W45"], ["o"], axis=0)],
    "expand": lambda: [helper.make_node("Expand", ["X", "sh45"], ["o"])],
    "add": lambda: [helper.make_node("Add", ["X", "W45"], ["o"])],
    "topk": lambda: [helper.make_node("TopK", ["X", "k9"], ["o", "idx"], axis=1)],
    "depth_to_space": lambda: [helper.make_node("Unsqueeze", ["X", "ax01"], ["X4"]),
                               helper.make_node("DepthToSpace", ["X4"], ["o"], blocksize=2)],
}


def _break_consts(prefix=""):
    return [
        helper.make_node("Constant", [], ["ax1"], value=_i64("ax1v", [1])),
        helper.make_node("Constant", [], ["ax01"], value=_i64("ax01v", [0, 1])),
        helper.make_node("Constant", [], ["sh45"], value=_i64("sh45v", [4, 5])),
        helper.make_node("Constant", [], ["k9"], value=_i64("k9v", [9])),
        helper.make_node("Constant", [], ["W45"], value=helper.make_tensor("W45v", TP.FLOAT, [4, 5], [1.0] * 20)),
    ]


def _body_graph(kind: str, name: str, inputs=()):
    nodes = _break_consts() + _BREAKS[kind]() + [helper.make_node("Identity", ["o"], ["out"])]
    return helper.make_graph(nodes, name, list(inputs), [_out("out")])


def _ok_graph(name: str):
    return helper.make_graph([helper.make_node("Identity", ["X"], ["out"])], name, [], [_out("out")])


def _loop_body(graph):
    """A Loop body from a graph making "out": the condition passed through, "out" scanned."""
    graph.input.extend([helper.make_tensor_value_info("i", TP.INT64, []), helper.make_tensor_value_info("cin", TP.BOOL, [])])
    graph.node.append(helper.make_node("Identity", ["cin"], ["cout"]))
    graph.output.insert(0, helper.make_tensor_value_info("cout", TP.BOOL, []))
    return graph


def _unreached_model(kind: str, visible: str, where: str, failing: str):
    """X, what the code reads: x: float[2,3] itself ("static": onnxruntime's load-time inference
    sees the static dims); x: float[N,3] read through Reshape(x, Shape(x)) ("values": dims only
    values tell, which onnxruntime's load does not follow while one is symbolic); or a constant
    [2,3] read through Reshape(c, Shape(c)) beside x: float[N,3] ("propagated": values fully
    known, which onnxruntime's load follows)."""
    x = helper.make_tensor_value_info("x", TP.FLOAT, [2, 3] if visible == "static" else ["N", 3])
    pre = {"static": [helper.make_node("Identity", ["x"], ["X"])],
           "values": [helper.make_node("Shape", ["x"], ["sx"]), helper.make_node("Reshape", ["x", "sx"], ["X"])],
           "propagated": [helper.make_node("Constant", [], ["cst"], value=helper.make_tensor(
                              "cstv", TP.FLOAT, [2, 3], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])),
                          helper.make_node("Shape", ["cst"], ["sx"]),
                          helper.make_node("Reshape", ["cst", "sx"], ["X"])]}[visible]
    inputs = [x]
    data = {}
    bad = lambda n: _body_graph(kind, n)  # noqa: E731
    good = _ok_graph
    functions = []
    if where in ("if_data", "if_size"):
        if where == "if_data":
            inputs.append(helper.make_tensor_value_info("c", TP.BOOL, []))
            data["c"] = [True, False]
        else:
            pre += [helper.make_node("Size", ["x"], ["n"]), helper.make_node("Cast", ["n"], ["c"], to=TP.BOOL)]
        then_g = bad("then") if failing in ("then", "both") else good("then")
        else_g = bad("else") if failing in ("else", "both") else good("else")
        node = helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)
    elif where in ("loop_data", "loop_size"):
        if where == "loop_data":
            inputs.append(helper.make_tensor_value_info("m", TP.INT64, []))
            data["m"] = [0, 1]
        else:  # as many trips as x has rows
            pre += [helper.make_node("Constant", [], ["z"], value=_i64("zv", 0, [])),
                    helper.make_node("Shape", ["x"], ["s0"]), helper.make_node("Gather", ["s0", "z"], ["m"], axis=0)]
        body = _loop_body(_body_graph(kind, "body"))
        pre.append(helper.make_node("Constant", [], ["t"], value=helper.make_tensor("tv", TP.BOOL, [], [True])))
        node = helper.make_node("Loop", ["m", "t"], ["y"], body=body)
    elif where == "scan":
        body = _body_graph(kind, "body", inputs=[helper.make_tensor_value_info("row", TP.FLOAT, [3])])
        node = helper.make_node("Scan", ["x"], ["y"], body=body, num_scan_inputs=1)
    elif where == "if_in_loop":
        inputs.append(helper.make_tensor_value_info("c", TP.BOOL, []))
        data["c"] = [True, False]
        inner = helper.make_node("If", ["c"], ["o2"], then_branch=bad("then"), else_branch=good("else"))
        body = _loop_body(helper.make_graph([inner, helper.make_node("Identity", ["o2"], ["out"])], "body", [],
                                            [_out("out")]))
        pre.append(helper.make_node("Constant", [], ["m"], value=_i64("mv", 2, [])))
        pre.append(helper.make_node("Constant", [], ["t"], value=helper.make_tensor("tv", TP.BOOL, [], [True])))
        node = helper.make_node("Loop", ["m", "t"], ["y"], body=body)
    else:  # if_in_function: the If sits in a model-local function, called from the main graph
        inputs.append(helper.make_tensor_value_info("c", TP.BOOL, []))
        data["c"] = [True, False]
        fnodes = [helper.make_node("If", ["fc"], ["fy"], then_branch=_rebind(bad("then"), "X", "fX"),
                                   else_branch=_rebind(good("else"), "X", "fX"))]
        functions.append(helper.make_function("fam", "Guarded", ["fX", "fc"], ["fy"], fnodes,
                                              [helper.make_opsetid("", 18)]))
        node = helper.make_node("Guarded", ["X", "c"], ["y"], domain="fam")
    m = _model(pre + [node], inputs, [_out("y")], opset=18, functions=functions)
    return m, data


def _rebind(graph, old: str, new: str):
    for n in graph.node:
        for i, name in enumerate(n.input):
            if name == old:
                n.input[i] = new
    return graph


@family("unreached_errors")
def unreached_errors() -> list:
    cases = []
    for kind in _BREAKS:
        for visible in ("static", "values", "propagated"):
            for where in ("if_data", "if_size", "loop_data", "loop_size", "scan", "if_in_loop", "if_in_function"):
                for failing in (("then", "else", "both") if where.startswith("if_") and where in ("if_data", "if_size")
                                else ("body",)):
                    m, data = _unreached_model(kind, visible, where, failing)
                    name = f"{kind}-{visible}-{where}-{failing}"
                    # (onnxruntime concatenates an empty input whatever its other dims: a
                    # deviation inside a branch the judge cannot taint -- no empty X there)
                    sizes = (1, 2, 3) if kind == "concat" else (0, 1, 2)
                    cases.append(make_case("unreached_errors", name, m, sizes=sizes, data=data))
    return cases


# ----------------------------------------------------------------------------------- dim_names

_NAMES = ["a*b", "N+1", "2*N", "a*b+1", "(a*b)", "N-1", "'a'"]


def _dim_name_model(name: str, pattern: str):
    """y: float[a,b] or float[N] whose computed dims print like ``name``; x: float[name] an
    opaque dim of its own size; a Reshape whose shape is gathered from x (ReshapeFusion's
    pattern) or an Expand/Add that broadcasts them."""
    if name.startswith("N") or name.startswith("2*N"):
        y = helper.make_tensor_value_info("y", TP.FLOAT, ["N"])
        grow = {"N+1": [helper.make_node("Concat", ["y", "one_f"], ["flat"], axis=0)],
                "2*N": [helper.make_node("Concat", ["y", "y"], ["flat"], axis=0)],
                "N-1": [helper.make_node("Slice", ["y", "s1", "big"], ["flat"])]}[name]
    else:
        y = helper.make_tensor_value_info("y", TP.FLOAT, ["a", "b"])
        grow = [helper.make_node("Reshape", ["y", "m1"], ["flat0"])]
        if name == "a*b+1":
            grow.append(helper.make_node("Concat", ["flat0", "one_f"], ["flat"], axis=0))
        else:
            grow.append(helper.make_node("Identity", ["flat0"], ["flat"]))
    x = helper.make_tensor_value_info("x", TP.FLOAT, [name])
    nodes = list(grow)
    if pattern == "reshape_fusion":
        nodes += [helper.make_node("Shape", ["x"], ["sx"]), helper.make_node("Gather", ["sx", "z"], ["g"], axis=0),
                  helper.make_node("Unsqueeze", ["g", "a0"], ["d0"]),
                  helper.make_node("Concat", ["d0", "m1"], ["shp"], axis=0),
                  helper.make_node("Reshape", ["flat", "shp"], ["out"])]
    elif pattern == "add":
        nodes += [helper.make_node("Add", ["flat", "x"], ["out"])]
    else:  # expand to x's shape
        nodes += [helper.make_node("Shape", ["x"], ["sx"]), helper.make_node("Expand", ["flat", "sx"], ["out"])]
    inits = [_i64("z", 0, []), _i64("a0", [0]), _i64("m1", [-1]), _i64("s1", [1]), _i64("big", [2**62]),
             helper.make_tensor("one_f", TP.FLOAT, [1], [1.0])]
    return _model(nodes, [x, y], [_out("out")], opset=18, inits=inits)


@family("dim_names")
def dim_names() -> list:
    cases = []
    for name in _NAMES:
        for pattern in ("reshape_fusion", "add", "expand"):
            m = _dim_name_model(name, pattern)
            # the opaque dim its own sizes: equal to the computed one, and not
            cases.append(make_case("dim_names", f"{name}-{pattern}", m, sizes=(0, 1, 2, 3)))
    return cases


# ----------------------------------------------------------------------------------- running


def all_cases(names=None) -> list:
    out = []
    for name, fn in FAMILIES.items():
        if names and name not in names:
            continue
        out.extend(fn())
    return out


def main(argv) -> int:
    from . import harness

    cases = all_cases(argv or None)
    total = Outcome()
    per_family: dict = {}
    for case in cases:
        out = case.judge()
        for f in out.failures:
            f.message = f"[{case.family}/{case.name}] {f.message}"
        total.merge(out)
        per_family.setdefault(case.family, [0, 0])
        per_family[case.family][0] += 1
        per_family[case.family][1] += bool(out.failures)
    print(harness.summary(total))
    for fam, (n, bad) in per_family.items():
        print(f"  {fam}: {n} models, {bad} with failures")
    return 1 if total.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
