"""Minimal models of the failure classes the generator found (shrunk, then tidied by hand), judged
by the same judge as the generated graphs: the runtime is the oracle, nothing is hard-coded.

Each entry: the model in ONNX text, and the optimize variants to run (the default is enough for
most). ``judge_repro(name)`` returns the Outcome; a class is fixed when it has no failures.
"""

from __future__ import annotations

import numpy as np
import onnx

from .gen import random_array
from .runner import Judge

REPROS = {
    # optimize: onnx-graphsurgeon cannot export an empty list attribute (ValueError escapes)
    "empty_list_attribute": '''
<ir_version: 8, opset_import: ["" : 15]>
g (float[N, 3] x) => (float y) {
    y = ReduceMax <axes: ints = [], keepdims: int = 0> (x)
}''',
    # optimize (cancel-reshapes): drops the node of a graph output; the model no longer loads
    "cancel_reshapes_graph_output": '''
<ir_version: 8, opset_import: ["" : 18]>
g (float[3, C] x) => (float[?] a, float[?, ?] r) {
    s = Constant<value = int64[1] {-1}>()
    f = Reshape(x, s)
    a = Abs(f)
    sh = Shape(x)
    r = Reshape(a, sh)
}''',
    # optimize on IR version 3: a folded constant becomes an initializer that is not a graph input
    # (every initializer must be one before IR 4): onnx.checker refuses the output
    "ir3_initializers_not_inputs": '''
<ir_version: 3, opset_import: ["" : 8]>
g (float[2, 4] x, float[N] z) => (float[?, ?] y) {
    sh = Shape(x)
    y = Expand(z, sh)
}''',
    # infer: "element counts cannot match" (3*b vs 2*b) although they do at b = 0, where it runs
    "reshape_counts_equal_at_zero": '''
<ir_version: 8, opset_import: ["" : 14]>
g (float[3, b] x) => (float[?, ?, ?] y) {
    s = Constant<value = int64[3] {2, 0, 1}>()
    y = Reshape(x, s)
}''',
    # infer: ReduceSumSquare with noop_with_empty_axes=1 taken for an identity; it still squares
    "noop_reduce_sum_square": '''
<ir_version: 9, opset_import: ["" : 18]>
g (float[N, 3] x) => (float[?, ?] y) {
    s = Shape(x)
    q = ReduceSumSquare<keepdims = 0, noop_with_empty_axes = 1>(s)
    c = Constant<value = float {1.0}>()
    y = Expand(c, q)
}''',
    # infer: an input dim written dim_value -1 (a dynamic dim to onnx's checker and onnxruntime)
    # taken for the size -1: wrong dims, and Reshape(x, Shape(x)) refused
    "input_dim_value_minus_one": '''
<ir_version: 8, opset_import: ["" : 14]>
g (float[-1, 2] x) => (float[?, 2] y) {
    s = Shape(x)
    y = Reshape(x, s)
}''',
    # check: onnx's C++ shape inference (called by the checker) aborts the process (SIGABRT) on a
    # Slice of such a dim; run in a child, this is 'process-died'
    "check_aborts_on_minus_one_dim": '''
<ir_version: 8, opset_import: ["" : 16]>
g (float[-1, N] x) => (float[1, N] y) {
    s = Constant<value = int64[1] {0}>()
    e = Constant<value = int64[1] {1}>()
    a = Constant<value = int64[1] {0}>()
    y = Slice(x, s, e, a)
}''',
    # infer/optimize: the Tile rule computes the value with NumPy, whose tile builds the huge
    # intermediate of an empty result (MemoryError; with 2**31 instead, 8 GiB and seconds);
    # check reports an internal error
    "tile_empty_huge_intermediate": '''
<ir_version: 8, opset_import: ["" : 15]>
g (float[N] x) => (float[?, ?] y, float[N] z) {
    c = Constant<value = float[1, 1] {1}>()
    r = Constant<value = int64[2] {1073741824, 0}>()
    y = Tile(c, r)
    z = Relu(x)
}''',
    # infer_shapes: a dim past int64 (0 elements) written into dim_value: protobuf's ValueError escapes
    "dim_past_int64_written": '''
<ir_version: 9, opset_import: ["" : 19]>
g (float[N] x) => (float[?, ?] y, float[N] z) {
    s = Constant<value = int64[2] {9223372036854775807, 0}>()
    c = ConstantOfShape(s)
    sh = Shape(c)
    y = Tile(c, sh)
    z = Relu(x)
}''',
}

# models no runtime can run (a dim past int64): only the commands are judged
NEVER_RUNS = {"dim_past_int64_written"}

SIZES = (0, 1, 2, 3)


def _bindings(model):
    syms = []
    for vi in model.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param and d.dim_param not in syms:
                syms.append(d.dim_param)
    out = [{s: n for s in syms} for n in SIZES]
    if len(syms) > 1:
        out.append({s: SIZES[(k + 1) % len(SIZES)] for k, s in enumerate(syms)})
    return syms, out


def _feeds(model, binding, rng):
    feeds = {}
    inits = {t.name for t in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if d.HasField("dim_value") and d.dim_value >= 0:
                shape.append(d.dim_value)
            elif d.dim_param:
                shape.append(binding[d.dim_param])
            else:
                shape.append(5)  # an unnamed or negative dim: any size
        feeds[vi.name] = random_array(rng, tt.elem_type, shape)
    return feeds


def judge_repro(name, progress=None):
    model = onnx.parser.parse_model(REPROS[name])
    syms, bindings = _bindings(model)
    rng = np.random.default_rng(0)
    feeds = [_feeds(model, b, rng) for b in bindings]
    return Judge(model, syms, bindings, feeds, seed=None, variants=[("default", {})], progress=progress).run()
