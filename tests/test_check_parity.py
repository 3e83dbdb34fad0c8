"""check says what onnxruntime says, both ways, on families generated from onnx's schemas.

The valid models are onnx's backend node cases (every op of the default domain, run by
onnxruntime with the inputs they ship). Each is mutated against its op's schema -- an
attribute the op does not have, a required attribute dropped, an attribute of another type, an
input past the most the op takes, a required input left out, an output past the most it makes,
an input of an element type its constraints exclude --, against the spec's value rules for the
windowed ops (a kernel, stride or dilation of 0, a negative pad), with each attribute given
other values (a string attribute an unknown word; an int -1, 0, 2 or 7; a float -1, 0 or 2; the
first entry of a list -1 or 0), and with its first input one rank higher or lower (the data
reshaped to match: a leading 1 added, the first row taken). Each model, original or
mutant, is judged by onnxruntime's session creation (graph optimisations off) and a run with
the case's inputs: check must report an error exactly where onnxruntime refuses or fails in the
run. A refusal for want of a CPU kernel for the element types (check's ``no-kernel``, from a table
of onnxruntime's kernels built from these cases: bench/runtime_tables.py) is counted, not
judged both ways: check must never say it of a model onnxruntime runs. A mutant onnxruntime
still loads and runs must get no error.

    python -m pytest tests/test_check_parity.py                   # a sample of every mutation kind
    SHAPEINFER_PARITY=all python -m pytest tests/test_check_parity.py   # every case and mutation
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import onnx
import pytest
from onnx import AttributeProto, TensorProto, helper

import shapeinfer

ort = pytest.importorskip("onnxruntime")

ALL = os.environ.get("SHAPEINFER_PARITY", "") == "all"
SAMPLE = 10  # models per mutation kind in the default run


def _cases() -> list:
    """(name, model, inputs) of the backend node cases of one node in the default domain."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = []
        for c in collect_testcases(None):
            m = c.model
            if len(m.graph.node) != 1 or m.graph.node[0].domain not in ("", "ai.onnx") or m.functions:
                continue
            if not c.data_sets:
                continue
            found.append((c.name, m, c.data_sets[0][0]))
    return sorted(found, key=lambda t: t[0])


def _schema(node, model):
    version = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    try:
        return onnx.defs.get_schema(node.op_type, version, "")
    except onnx.defs.SchemaError:
        return None


def _copy(model):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    return m


def _mutants(name, model):
    """(kind, mutant model) for each schema rule the case's node can be made to break."""
    node = model.graph.node[0]
    schema = _schema(node, model)
    if schema is None:
        return
    m = _copy(model)
    m.graph.node[0].attribute.append(helper.make_attribute("not_an_attribute", 1))
    yield "unknown-attribute", m
    for a in node.attribute:
        spec = schema.attributes.get(a.name)
        if spec is not None and spec.required:
            m = _copy(model)
            del m.graph.node[0].attribute[[x.name for x in node.attribute].index(a.name)]
            yield "required-attribute-dropped", m
            break
    for k, a in enumerate(node.attribute):
        if a.type == AttributeProto.INT:
            m = _copy(model)
            m.graph.node[0].attribute[k].CopyFrom(helper.make_attribute(a.name, float(a.i)))
            yield "attribute-type", m
            break
    if schema.max_input < 2**31 - 1 and len(node.input) >= schema.max_input and model.graph.input:
        m = _copy(model)
        m.graph.node[0].input.append(m.graph.input[0].name)
        yield "too-many-inputs", m
    if schema.max_output < 2**31 - 1:
        m = _copy(model)
        extra = "extra_output"
        while len(m.graph.node[0].output) <= schema.max_output:
            m.graph.node[0].output.append(f"{extra}{len(m.graph.node[0].output)}")
        yield "too-many-outputs", m
    required = [k for k, p in enumerate(schema.inputs) if p.option == onnx.defs.OpSchema.FormalParameterOption.Single]
    if required and required[-1] < len(node.input) and node.input[required[-1]]:
        m = _copy(model)
        m.graph.node[0].input[required[-1]] = ""
        yield "required-input-dropped", m
    if node.op_type in ("Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool"):
        for attr, bad in (("kernel_shape", 0), ("strides", 0), ("dilations", 0), ("pads", -1)):
            k = next((i for i, a in enumerate(node.attribute) if a.name == attr), None)
            if k is not None and node.attribute[k].ints:
                m = _copy(model)
                values = list(node.attribute[k].ints)
                values[0] = bad
                m.graph.node[0].attribute[k].CopyFrom(helper.make_attribute(attr, values))
                yield f"window-{attr}", m


def _value_mutants(model):
    """(kind, mutant) with each attribute given values the schema's type allows and the spec's
    text may not: an unknown word for a string, -1/0/2/7 for an int, -1/0/2 for a float, -1 or 0
    as the first entry of a list of ints."""
    node = model.graph.node[0]
    for k, a in enumerate(node.attribute):
        if a.type == AttributeProto.STRING:
            values = ["not_a_mode"]
        elif a.type == AttributeProto.INT:
            values = [v for v in (-1, 0, 2, 7) if v != a.i]
        elif a.type == AttributeProto.FLOAT:
            values = [v for v in (-1.0, 0.0, 2.0) if v != a.f]
        elif a.type == AttributeProto.INTS and len(a.ints):
            values = [[v] + list(a.ints[1:]) for v in (-1, 0) if v != a.ints[0]]
        else:
            continue
        for v in values:
            m = _copy(model)
            m.graph.node[0].attribute[k].CopyFrom(helper.make_attribute(a.name, v))
            yield f"attribute-value-{AttributeProto.AttributeType.Name(a.type).lower()}", m


def _rank_mutants(model, inputs):
    """(kind, mutant, inputs) with the first input's rank one higher (a leading 1) or lower (its
    first row), declared and fed so."""
    if not model.graph.input or not inputs or not isinstance(inputs[0], np.ndarray):
        return
    vi = model.graph.input[0]
    if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
        return
    x = inputs[0]
    lower = np.asarray(x[0]) if x.ndim >= 1 and x.shape[0] >= 1 else None
    for kind, data in (("rank-up", x[None]), ("rank-down", lower)):
        if data is None:
            continue
        m = _copy(model)
        shape = m.graph.input[0].type.tensor_type.shape
        del shape.dim[:]
        for d in data.shape:
            shape.dim.add().dim_value = d
        yield kind, m, [data] + list(inputs[1:])


# (op, mutation kind) where check still misses what onnxruntime refuses -- each a known gap, left
# open on purpose and listed here so that nothing else may join it silently:
KNOWN_GAPS = {
    # a function op onnxruntime expands at load whose body's inference refuses the mutant where
    # onnx's own inference of the expanded body (checker/run.py) does not see it
    ("SoftmaxCrossEntropyLoss", "rank-up"), ("SoftmaxCrossEntropyLoss", "rank-down"),
    # Range of 1-element tensors: onnxruntime refuses them where its inference sees every input's
    # shape, and runs them where one is a constant -- not decided here
    ("Range", "rank-up"),
}


_POOL: list = []  # one worker process, made again when onnxruntime kills it


@pytest.fixture(scope="module", autouse=True)
def _worker_stopped_after_the_module():
    yield
    while _POOL:
        _POOL.pop().shutdown(wait=True)


def _verdict_in_child(model, inputs, at_creation=None):
    """_ort_verdict in a worker process (started by a forkserver: never a fork of this process,
    whose threads a fork could leave holding a lock): onnxruntime aborts the process on some
    mutants (a Split whose num_outputs differs from its outputs trips an assertion); that, and
    no verdict within a minute, is "refused"."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures import TimeoutError as FutureTimeout
    from concurrent.futures.process import BrokenProcessPool

    if not _POOL:
        _POOL.append(ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("forkserver")))
    try:
        return _POOL[0].submit(_ort_verdict, model, inputs, at_creation).result(timeout=60)
    except (BrokenProcessPool, FutureTimeout):
        _POOL.pop().shutdown(wait=False, cancel_futures=True)
        return "refused"


def _ort_verdict(model, inputs, at_creation=None):
    """'refused' (at load or in the run), 'runs', 'no-kernel' (no CPU kernel for its types), or
    None (not judged). ``at_creation``: the verdict where a kernel refuses to be created (None:
    not judged -- a valid model the runtime lacks a kernel for; "refused" where the case tests a
    rule onnxruntime's kernels enforce)."""
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - onnxruntime's refusal
        text = str(e)
        if "Could not find an implementation" in text:
            return "no-kernel"
        if "NOT_IMPLEMENTED" in text or "Exception during initialization" in text:
            # (a kernel that refuses a valid configuration when it is created -- batchwise RNNs,
            # a locale the machine lacks: the model is valid, the runtime incomplete here)
            return at_creation
        return "refused"
    feeds = {i.name: v for i, v in zip(model.graph.input, inputs) if isinstance(v, np.ndarray)}
    if len(feeds) != len(model.graph.input):
        return None  # (sequence or optional inputs: not fed here)
    try:
        sess.run(None, feeds)
    except Exception:  # noqa: BLE001 - the run fails
        return "fails"
    return "runs"


def _judged():
    out = []
    for name, model, inputs in _cases():
        out.append(("original", name, model, inputs))
        for kind, m in _mutants(name, model):
            out.append((kind, name, m, inputs))
        for kind, m in _value_mutants(model):
            out.append((kind, name, m, inputs))
        for kind, m, given in _rank_mutants(model, inputs):
            out.append((kind, name, m, given))
    return out


def _sample(items):
    if ALL:
        return items
    by_kind: dict = {}
    for it in items:
        by_kind.setdefault(it[0], []).append(it)
    picked = []
    for kind, group in sorted(by_kind.items()):
        stride = max(1, len(group) // SAMPLE)
        picked.extend(group[::stride][:SAMPLE])
    return picked


def test_check_says_what_onnxruntime_says_on_schema_mutants():
    disagree = []
    judged = 0
    no_kernel = {True: 0, False: 0}
    for kind, name, model, inputs in _sample(_judged()):
        verdict = _verdict_in_child(model, inputs)
        if verdict is None or verdict == "fails":
            continue  # (a run that fails is a run-time matter, judged elsewhere)
        report = shapeinfer.check(model)
        errors = [f for f in report.findings if f.severity == "error"]
        if any(f.code == "no-kernel" for f in errors) and verdict == "runs":
            disagree.append(f"{kind} {name}: check says no-kernel, onnxruntime {verdict} ({errors[0].message[:120]})")
        if verdict == "no-kernel":
            # (the table of kernels covers the types tried on the backend cases: a miss here is
            # counted, not a failure; a no-kernel error where a kernel exists is)
            no_kernel[bool(errors)] += 1
            continue
        judged += 1
        if verdict == "refused" and not errors and (model.graph.node[0].op_type, kind) not in KNOWN_GAPS:
            disagree.append(f"{kind} {name}: onnxruntime refuses it, check reports no error")
        if verdict == "runs" and errors:
            disagree.append(f"{kind} {name}: onnxruntime runs it, check says {errors[0].code}: {errors[0].message[:160]}")
    assert judged > 50
    assert not disagree, "\n".join(disagree[:30])


def test_a_refused_mutant_names_the_node():
    name, model, inputs = next(c for c in _cases() if c[0] == "test_relu")
    m = _copy(model)
    m.graph.node[0].name = "the_relu"
    m.graph.node[0].attribute.append(helper.make_attribute("not_an_attribute", 1))
    errors = [f for f in shapeinfer.check(m).findings if f.severity == "error"]
    assert errors and errors[0].node == "the_relu" and "not_an_attribute" in errors[0].message
    with pytest.raises(shapeinfer.ShapeInferenceError, match="not_an_attribute"):
        shapeinfer.infer(m)


def _grid_models():
    """(name, model, feeds) over grids of the rules onnxruntime's load enforces beyond the
    schema, each on both sides of the rule: Einsum ellipses of equal and unequal ranks,
    Upsample scales around 1, a model-local function called with fewer, as many and more
    outputs and inputs than it has, OneHot indices of rank 0 and 1, Split's num_outputs against
    its outputs, DepthToSpace's blocksize, ConvTranspose's group and output_padding, Resize's
    axes and keep_aspect_ratio_policy, Trilu and EyeLike ranks, a constant or fed shape of
    another rank for Expand and ConstantOfShape; ReduceMin, Max, CumSum and Cast on element
    types onnxruntime's CPU provider has kernels for and lacks."""
    from onnx import parser

    head = '<ir_version: 8, opset_import: ["" : 18, "local" : 1]>\n'
    grid = []
    for ra, rb in ((2, 2), (3, 3), (4, 3), (3, 2), (2, 3), (4, 4)):
        grid.append((f"einsum-{ra}-{rb}", f"g (float[{','.join(['2'] * ra)}] a, float[{','.join(['2'] * rb)}] b) => (float[] y) "
                     "{ y = Einsum<equation: string = \"...ij,...jk->...ik\">(a, b) }"))
    for sc in ("1, 1, 2, 2", "1, 1, 0.5, 2", "1, 1, 1, 1", "1, 1, 0.999, 1"):
        grid.append((f"upsample-{sc}", "g (float[1,1,2,2] x) => (float[] y) { sc = Constant<value: tensor = float[4] {"
                     + sc + "}>() y = Upsample<mode: string = \"nearest\">(x, sc) }"))
    fn = '\n<domain: "local", opset_import: ["" : 18]>\nH (a, b) => (c, d) { c = Neg(a) d = Add(a, b) }'
    for ins, outs in (("x, x", "y, z"), ("x, x", "y"), ("x, x", "y, z, w"), ("x", "y, z"), ("x, x, x", "y, z")):
        decl = ", ".join(f"float[] {o.strip()}" for o in outs.split(","))
        grid.append((f"function-{ins}-{outs}", f"g (float[2] x) => ({decl}) {{ {outs} = local.H({ins}) }}" + fn))
    for shape in ("", "3"):
        typed = f"int64[{shape}]" if shape else "int64"
        grid.append((f"onehot-[{shape}]", f"g ({typed} i) => (float[] y) {{ d = Constant<value: tensor = int64 {{4}}>() "
                     "v = Constant<value: tensor = float[2] {0, 1}>() y = OneHot(i, d, v) }"))
    for n in (0, 1, 2, 3):
        grid.append((f"split-{n}", f"g (float[6] x) => (float[] y, float[] z) {{ y, z = Split<num_outputs: int = {n}>(x) }}"))
    for opset in (13, 18):  # neither sizes nor a count: equal parts before 18, invalid from 18
        grid.append((f"split{opset}-bare", "g (float[6] x) => (float[] y, float[] z) { y, z = Split(x) }", opset))
    for shape in ("7, 7", "1, 2, 7, 7", "7"):
        grid.append((f"convtranspose-output-shape-[{shape}]",
                     "g (float[1,2,3,3] x) => (float[] y) { w = Constant<value: tensor = float[2,1,2,2] {1,1,1,1,1,1,1,1}>() "
                     f"y = ConvTranspose<strides: ints = [2, 2], output_shape: ints = [{shape}]>(x, w) }}"))
    for b in (-1, 0, 1, 2):
        grid.append((f"depthtospace-{b}", f"g (float[1,4,2,2] x) => (float[] y) {{ y = DepthToSpace<blocksize: int = {b}>(x) }}"))
    for group, opad in ((1, "0, 0"), (2, "0, 0"), (0, "0, 0"), (3, "0, 0"), (1, "-1, 0"), (1, "1, 0")):
        grid.append((f"convtranspose-{group}-{opad}",
                     "g (float[1,2,3,3] x) => (float[] y) { w = Constant<value: tensor = float[2,1,2,2] {1,1,1,1,1,1,1,1}>() "
                     f"y = ConvTranspose<group: int = {group}, strides: ints = [2, 2], output_padding: ints = [{opad}]>(x, w) }}"))
    for axes, policy in (("2, 3", "stretch"), ("2, -2", "stretch"), ("2, 3", "not_larger"), ("2, 3", "bogus"), ("3, -1", "stretch")):
        grid.append((f"resize-{axes}-{policy}", "g (float[1,1,2,2] x) => (float[] y) { sz = Constant<value: tensor = int64[2] {4, 4}>() "
                     f"y = Resize<axes: ints = [{axes}], keep_aspect_ratio_policy: string = \"{policy}\">(x, , , sz) }}"))
    for shape in ("3", "2,3", "1,2,3"):
        grid.append((f"trilu-[{shape}]", f"g (float[{shape}] x) => (float[] y) {{ y = Trilu(x) }}"))
        grid.append((f"eyelike-[{shape}]", f"g (float[{shape}] x) => (float[] y) {{ y = EyeLike(x) }}"))
    for op in ("Expand", "ConstantOfShape"):
        args = "x, s" if op == "Expand" else "s"
        for dims, values in (("2", "3, 1"), ("1,2", "3, 1"), ("", "3")):
            typed = f"int64[{dims}]" if dims else "int64"
            grid.append((f"{op}-const-[{dims}]", f"g (float[3,1] x) => (float[] y) {{ s = Constant<value: tensor = {typed} "
                         f"{{{values}}}>() y = {op}({args}) }}"))
            grid.append((f"{op}-fed-[{dims}]", f"g (float[3,1] x, {typed} s) => (float[] y) {{ y = {op}({args}) }}"))
    for t in ("uint32", "int32", "uint64", "int16", "float"):
        grid.append((f"reducemin-{t}", f"g ({t}[2,3] x) => ({t}[] y) {{ y = ReduceMin<keepdims: int = 0>(x) }}"))
        grid.append((f"max-{t}", f"g ({t}[2,3] x, {t}[2,3] z) => ({t}[] y) {{ y = Max(x, z) }}"))
        grid.append((f"cumsum-{t}", f"g ({t}[2,3] x) => ({t}[] y) {{ a = Constant<value: tensor = int64 {{1}}>() y = CumSum(x, a) }}"))
    for to in (1, 10, 16, 17, 23):
        grid.append((f"cast-to-{to}", f"g (float[3] x) => (float[] y) {{ q = Cast<to: int = {to}>(x) y = Cast<to: int = 1>(q) }}"))
    for size in (2, 3, 4, 5):
        grid.append((f"lrn-{size}", f"g (float[1,3,2,2] x) => (float[] y) {{ y = LRN<size: int = {size}>(x) }}"))
    for b, t in ((1, 0), (0, 1), (1, 1), (0, 0)):
        grid.append((f"reversesequence-{b}-{t}", f"g (float[2,2] x) => (float[] y) {{ l = Constant<value: tensor = int64[2] "
                     f"{{1, 2}}>() y = ReverseSequence<batch_axis: int = {b}, time_axis: int = {t}>(x, l) }}"))
    for op, dtype, zero in (("Div", "int64", "0, 1"), ("Div", "int32", "1, 1"), ("Mod", "int64", "2, 0"),
                            ("Div", "float", "0, 1"), ("Mod", "int32", "1, 3")):
        grid.append((f"{op.lower()}-{dtype}-{zero}", f"g ({dtype}[2] x) => ({dtype}[] y) {{ z = Constant<value: tensor = "
                     f"{dtype}[2] {{{zero}}}>() y = {op}(x, z) }}"))
    for opset in (16, 20):
        for mode in ("bilinear", "linear", "nearest", "cubic", "bicubic", "bogus"):
            grid.append((f"gridsample{opset}-{mode}", "g (float[1,1,2,2] x, float[1,2,2,2] g) => (float[] y) "
                         f"{{ y = GridSample<mode: string = \"{mode}\">(x, g) }}", opset))
    for op, dtype in (("Div", "int64"), ("Mod", "int32")):  # (a 0-d constant divisor)
        grid.append((f"{op.lower()}-{dtype}-scalar-0", f"g ({dtype}[2,4] x) => ({dtype}[] y) {{ z = Constant<value: tensor = "
                     f"{dtype} {{0}}>() y = {op}(x, z) }}"))
    for dims, c in (("1", 1), ("2", 2), ("2", 1), ("2,3", 3), ("1,1", 1)):  # BatchNormalization of rank 1 and 2
        grid.append((f"batchnorm-[{dims}]", f"g (float[{dims}] x) => (float[] y) {{ s = Constant<value: tensor = float[{c}] "
                     f"{{{', '.join(['1.0'] * c)}}}>() b = Constant<value: tensor = float[{c}] {{{', '.join(['0.0'] * c)}}}>() "
                     "y = BatchNormalization(x, s, b, b, s) }"))
    for direction in ("LEFT", "RIGHT", "UP"):
        grid.append((f"bitshift-{direction}", "g (uint8[2] x, uint8[2] s) => (uint8[] y) "
                     f"{{ y = BitShift<direction: string = \"{direction}\">(x, s) }}"))
    out = []
    for name, text, *opset in grid:
        version = opset[0] if opset else 23 if name.startswith("cast-to") else 18
        model = parser.parse_model(head.replace('"" : 18', f'"" : {version}') + text)
        feeds = {}
        for vi in model.graph.input:
            dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            elem = vi.type.tensor_type.elem_type
            if elem == TensorProto.INT64:
                feeds[vi.name] = np.full(dims, 3 if vi.name == "s" else 1, np.int64)
            else:
                feeds[vi.name] = np.ones(dims, helper.tensor_dtype_to_np_dtype(elem))
        out.append((name, model, feeds))
    return out


@pytest.mark.parametrize("case", _grid_models(), ids=lambda c: c[0])
def test_check_says_what_onnxruntime_says_on_rule_grids(case):
    """Both ways: an error exactly where onnxruntime refuses the model at load or fails in every
    run; an error names the node (never a crash), and infer refuses what check calls invalid."""
    name, model, feeds = case
    verdict = _verdict_in_child(model, [feeds[vi.name] for vi in model.graph.input])
    errors = shapeinfer.check(model).errors
    if verdict in ("refused", "fails", "no-kernel"):
        assert errors, f"{name}: onnxruntime {verdict} it, check reports no error"
    elif verdict == "runs":
        assert not errors, f"{name}: onnxruntime runs it, check says {errors[0].code}: {errors[0].message}"


def _stored_length_models():
    """An initializer whose typed field holds fewer, as many or more entries than its dims need,
    for types stored one per entry and packed (int4), read by an Identity. (A complex tensor,
    two entries per element, onnxruntime loads in no graph: "not currently registered".)"""
    out = []
    for dtype, field, per_entry, value in ((TensorProto.FLOAT, "float_data", 1, 1.0),
                                           (TensorProto.INT64, "int64_data", 1, 1),
                                           (TensorProto.FLOAT16, "int32_data", 1, 15360),
                                           (TensorProto.BOOL, "int32_data", 1, 1),
                                           (TensorProto.INT4, "int32_data", 2, 17)):
        for extra in (-1, 0, 1):
            entries = int(-(-4 // per_entry)) + extra
            t = TensorProto(name="w", data_type=dtype, dims=[4])
            getattr(t, field).extend([value] * entries)
            g = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                                  [helper.make_tensor_value_info("y", dtype, [4])], [t])
            model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
            out.append((f"{TensorProto.DataType.Name(dtype)}-{extra:+d}", model))
    return out


@pytest.mark.parametrize("case", _stored_length_models(), ids=lambda c: c[0])
def test_check_says_what_onnxruntime_says_on_stored_lengths(case):
    name, model = case
    verdict = _verdict_in_child(model, [])
    errors = shapeinfer.check(model).errors
    if verdict in ("refused", "fails"):
        assert errors, f"{name}: onnxruntime {verdict} it, check reports no error"
    elif verdict == "runs":
        assert not errors, f"{name}: onnxruntime runs it, check says {errors[0].code}: {errors[0].message}"


def _load_rule_models():
    """(name, model, feeds) for the load-time rules found by running onnx's own shape-inference
    tests (bench/onnx_suite.py), each on both sides: a node whose inference rejects what the
    model *declares* of its input (value_info rank 0 before a Softmax; a Conv weight declared of
    another spatial rank; a declared dim that only contradicts the producer, which onnxruntime
    merges leniently); a node with no outputs (still inferred at load); Pad-2 pads whose sum
    passes int64; Scan with fewer outputs than state variables or axes lists of other lengths;
    a Scan state of another rank than its body declares; Attention-25 windows and caches; an initializer against the graph input of its name; a
    function called with fewer inputs than it takes, and one whose output no node makes; pooling
    pads against the kernel; RNN, GRU and LSTM direction words and activation counts; a tensor
    declared of element type 0; a graph without outputs."""
    from onnx import parser

    def model(text, opset=18):
        return parser.parse_model(f'<ir_version: 8, opset_import: ["" : {opset}, "local" : 1]>\n' + text)

    one = np.ones
    out = []
    for op in ("Softmax", "Hardmax", "LogSoftmax"):
        for rank in (0, 1, 2):
            dims = ",".join(["1"] * rank)
            out.append((f"declared-{op}-rank{rank}",
                        model(f"g (float[1] x, int64[{rank}] s) => (float[] y) <float[{dims}] t> "
                              f"{{ t = Reshape(x, s) y = {op}(t) }}"),
                        {"x": one([1], np.float32), "s": one([rank], np.int64)}))
    for wdims in ("1,1,2,2", "1,1,2", "1,1,2,2,2"):
        n = int(np.prod([int(d) for d in wdims.split(",")]))
        out.append((f"declared-conv-weight-[{wdims}]",
                    model(f"g (float[1,1,4,4] x, float[{n}] wf, int64[{wdims.count(',') + 1}] ws) => (float[] y) "
                          f"<float[{wdims}] w> {{ w = Reshape(wf, ws) y = Conv(x, w) }}"),
                    {"x": one([1, 1, 4, 4], np.float32), "wf": one([n], np.float32),
                     "ws": np.array([int(d) for d in wdims.split(",")], np.int64)}))
    out.append(("branch-name-shadows-declared-output",  # (onnx's inference matches them; onnxruntime does not)
                model("g (float[3] x) => (float[] y, float[3] z) { c = Constant<value: tensor = bool {1}>() "
                      "y = If(c) <then_branch: graph = tb () => (float[] t2) { z = Constant<value: tensor = float {3}>() "
                      "t2 = Mul(x, z) }, else_branch: graph = eb () => (float[] o2) { o2 = Abs(x) }> z = Relu(x) }", 13),
                {"x": one([3], np.float32)}))
    out.append(("declared-intermediate-contradicted",  # (onnxruntime merges it leniently, and warns)
                model("g (float[2,3] x) => (float[] y) <float[5,5] t> { t = Transpose(x) y = Relu(t) }"),
                {"x": one([2, 3], np.float32)}))
    for rank in (2, 3):
        xd = "4,1,5" if rank == 3 else "4,5"
        out.append((f"no-output-rnn-rank{rank}",
                    model(f"g (float[{xd}] x, float[1,4,5] w, float[1,4,4] r) => (float[] y) "
                          "{ = RNN<hidden_size: int = 4>(x, w, r) y = Identity(x) }", 14),
                    {"x": one([int(d) for d in xd.split(",")], np.float32), "w": one([1, 4, 5], np.float32),
                     "r": one([1, 4, 4], np.float32)}))
    for pads in ("9223372036854775807, 1", "1, 1"):
        out.append((f"pad2-[{pads}]", model(f"g (float[2] x) => (float[] y) {{ y = Pad<pads: ints = [{pads}]>(x) }}", 2),
                    {"x": one([2], np.float32)}))
    body = "body: graph = b (float s0, float s1, float a) => (float o0, float o1, float c) " \
           "{ o0 = Identity(s0) o1 = Identity(s1) c = Identity(a) }"
    for outs, extra in (("y0", ""), ("y0, y1", ""), ("y0, y1, y2", ""), ("y0, y1, y2", ", scan_input_axes: ints = [0, 0]"),
                        ("y0, y1, y2", ", scan_output_axes: ints = [0, 0]")):
        decl = ", ".join(f"float[] {o.strip()}" for o in outs.split(","))
        out.append((f"scan-{outs}{extra}", model(f"g (float s0, float s1, float[3] a) => ({decl}) "
                                                  f"{{ {outs} = Scan<num_scan_inputs: int = 1{extra}, {body}>(s0, s1, a) }}", 16),
                    {"s0": one([], np.float32), "s1": one([], np.float32), "a": one([3], np.float32)}))
    for s0 in ("", "2", "1,2"):  # a state of rank 0, 1, 2 against a body that declares rank 0
        out.append((f"scan-state-rank-[{s0}]", model(f"g (float[{s0}] s0, float s1, float[3] a) => (float[] y0, float[] y1, "
                                                      f"float[] y2) {{ y0, y1, y2 = Scan<num_scan_inputs: int = 1, {body}>"
                                                      "(s0, s1, a) }", 16),
                    {"s0": one([int(d) for d in s0.split(",") if d], np.float32), "s1": one([], np.float32),
                     "a": one([3], np.float32)}))
    qkv = {"q": one([1, 2, 3, 4], np.float32), "k": one([1, 2, 3, 4], np.float32), "v": one([1, 2, 3, 4], np.float32)}
    sig = "float[1,2,3,4] q, float[1,2,3,4] k, float[1,2,3,4] v"
    for name, attrs, call, outs in (("window-2", "left_window_size: int = -2", "q, k, v", "y"),
                                    ("window-1", "left_window_size: int = -1", "q, k, v", "y"),
                                    ("right-window-2", "right_window_size: int = -2", "q, k, v", "y"),
                                    ("half-past", "is_causal: int = 0", "q, k, v, , , k", "y"),
                                    ("half-present", "is_causal: int = 0", "q, k, v", "y, pk"),
                                    ("heads-4d", "q_num_heads: int = 2, kv_num_heads: int = 2", "q, k, v", "y")):
        decl = ", ".join(f"float[] {o.strip()}" for o in outs.split(","))
        out.append((f"attention25-{name}", model(f"g ({sig}) => ({decl}) {{ {outs} = Attention<{attrs}>({call}) }}", 25),
                    dict(qkv)))
    for decl, init, elem in (("4,3", [8, 7], "float"), ("N,7", [8, 7], "float"), ("?,7", [8, 7, 9], "float"),
                             ("8,7", [8, 7], "int64"), ("", [1], "float"), ("1", [], "float"), ("8,7", [8, 7], "float")):
        g = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g",
                              [helper.make_tensor_value_info("w", getattr(TensorProto, elem.upper()),
                                                             [None if d == "?" else d if d == "N" else int(d)
                                                              for d in decl.split(",") if d])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [helper.make_tensor("w", TensorProto.FLOAT, init, np.zeros(init, np.float32).ravel())])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
        out.append((f"initializer-{elem}[{decl}]-vs-{init}", m, {"w": np.zeros(init, np.float32)}))
    fn = '\n<domain: "local", opset_import: ["" : 18]>\n'
    for name, call, body_text in (("fewer-inputs-unused", "y = local.F(a)", "F (x, z) => (o) { o = Identity(x) }"),
                                  ("fewer-inputs-optional", "y = local.F(a)", "F (x, z) => (o) { o = Clip(x, z) }"),
                                  ("fewer-inputs-required", "y = local.F(a)", "F (x, z) => (o) { o = Add(x, z) }"),
                                  ("output-is-input", "y = local.F(a, a)", "F (x, z) => (z) { o = Identity(x) }"),
                                  ("output-unmade", "y = local.F(a, a)", "F (x, z) => (w) { o = Identity(x) }"),
                                  ("as-many", "y = local.F(a, a)", "F (x, z) => (o) { o = Add(x, z) }")):
        out.append((f"function-{name}", model(f"g (float[2] a) => (float[] y) {{ {call} }}" + fn + body_text),
                    {"a": one([2], np.float32)}))
    for op in ("MaxPool", "AveragePool", "LpPool", "Conv"):
        for pads in ("1, 1, 2, 2", "1, 1, 1, 1", "2, 0, 0, 0", "0, 0, 0, 0"):
            args = "x, w" if op == "Conv" else "x"
            out.append((f"{op.lower()}-pads-[{pads}]",
                        model(f"g (float[1,1,6,6] x) => (float[] y) {{ w = Constant<value: tensor = float[1,1,2,2] "
                              f"{{1,1,1,1}}>() y = {op}<kernel_shape: ints = [2, 2], pads: ints = [{pads}]>({args}) }}"),
                        {"x": one([1, 1, 6, 6], np.float32)}))
    for op, gates in (("RNN", 1), ("GRU", 3), ("LSTM", 4)):
        for direction, acts in (("forward", ""), ("Forward", ""), ("bogus", ""), ("reverse", ""),
                                ("forward", '"Sigmoid", "Tanh"'), ("forward", '"Sigmoid", "Tanh", "Tanh"'),
                                ("bidirectional", '"Sigmoid", "Tanh", "Tanh"')):
            dirs = 2 if direction == "bidirectional" else 1
            extra = f", activations: strings = [{acts}]" if acts else ""
            out.append((f"{op.lower()}-{direction}-[{acts}]",
                        model(f"g (float[4,1,5] x, float[{dirs},{4 * gates},5] w, float[{dirs},{4 * gates},4] r) => (float[] y) "
                              f"{{ y = {op}<hidden_size: int = 4, direction: string = \"{direction}\"{extra}>(x, w, r) }}", 14),
                        {"x": one([4, 1, 5], np.float32), "w": one([dirs, 4 * gates, 5], np.float32),
                         "r": one([dirs, 4 * gates, 4], np.float32)}))
    for op in ("Expand", "ConstantOfShape"):  # a shape of rank 2 whose values the load knows, or not
        args = "x, r" if op == "Expand" else "r"
        for dims, make in (("2,3", "s2 = Constant<value: tensor = int64[2] {1, 2}>() r = Reshape(s, s2)"),
                           ("a,b", "s2 = Constant<value: tensor = int64[2] {1, 2}>() r = Reshape(s, s2)"),
                           ("2,3", "ax = Constant<value: tensor = int64[1] {0}>() r = Unsqueeze(s, ax)"),
                           ("a,3", "ax = Constant<value: tensor = int64[1] {0}>() r = Unsqueeze(s, ax)"),
                           ("2,3", "r = Constant<value: tensor = int64[1,2] {2, 3}>()")):
            m = model(f"g (float[{dims}] x) => (float[] y) {{ s = Shape(x) {make} y = {op}({args}) }}")
            out.append((f"{op.lower()}-rank2-{make.split('=')[-2].split()[-1] if '(' in make else 'const'}-[{dims}]", m,
                        {"x": one([2, 3], np.float32)}))
    for dims in ("2,4", "a,b"):  # an empty split: refused where the load knows the dim, else equal parts
        for outs in ("y", "y, z"):
            decl = ", ".join(f"float[?,?] {o.strip()}" for o in outs.split(","))
            out.append((f"split-empty-[{dims}]-{outs}", model(f"g (float[{dims}] x) => ({decl}) {{ sp = Constant<value: "
                                                              f"tensor = int64[0] {{}}>() {outs} = Split<axis: int = 1>(x, sp) }}", 13),
                        {"x": one([2, 4], np.float32)}))
    for pad in ("SAME_UPPER", "SAME_LOWER", "NOTSET"):  # onnxruntime's Conv fails every run of SAME_* dilated
        for d in (1, 2):
            out.append((f"conv-{pad}-dilation{d}",
                        model(f"g (float[1,1,5] x) => (float[] y) {{ w = Constant<value: tensor = float[1,1,2] {{1, 1}}>() "
                              f"y = Conv<kernel_shape: ints = [2], dilations: ints = [{d}], auto_pad: string = \"{pad}\">(x, w) }}"),
                        {"x": one([1, 1, 5], np.float32)}))
    for opset in (1, 3, 5, 6, 7, 8):  # op versions onnxruntime's CPU provider has kernels for, and the older ones
        for op, arity in (("Relu", 1), ("Abs", 1), ("Sigmoid", 1), ("Tanh", 1), ("Floor", 1), ("Add", 2), ("Mul", 2),
                          ("Div", 2), ("Max", 2), ("Sum", 2), ("Concat", 2), ("Gemm", 3)):
            args = ", ".join(["x"] * arity)
            attrs = "<axis: int = 0>" if op == "Concat" else ""
            out.append((f"opset{opset}-{op.lower()}", model(f"g (float[2,2] x) => (float[] y) {{ y = {op}{attrs}({args}) }}",
                                                            opset), {"x": one([2, 2], np.float32)}))
    out.extend(_run_rule_models(model))
    for to in ("float", "int64", "bool"):  # a constant string cast to a number: strtod/strtol must read one
        for text in ("1.5", "abc", "1abc", " 2", "inf", "", "true", ".5"):
            t = helper.make_tensor("c", TensorProto.STRING, [1], [text.encode()])
            g = helper.make_graph([helper.make_node("Cast", ["c"], ["y"], to=getattr(TensorProto, to.upper()))], "g", [],
                                  [helper.make_tensor_value_info("y", getattr(TensorProto, to.upper()), [1])], [t])
            out.append((f"cast-string-{text!r}-to-{to}", helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)],
                                                                          ir_version=9), {}))
    out.extend(_tolerated_models(model))
    for op, gates in (("RNN", 1), ("GRU", 3), ("LSTM", 4)):  # layout 1: the spec's; onnxruntime's CPU kernels lack it
        for layout in (0, 1):
            out.append((f"{op.lower()}-layout{layout}",
                        model(f"g (float[1,4,5] x, float[1,{4 * gates},5] w, float[1,{4 * gates},4] r) => (float[] y) "
                              f"{{ y = {op}<hidden_size: int = 4, layout: int = {layout}>(x, w, r) }}", 14),
                        {"x": one([1, 4, 5], np.float32), "w": one([1, 4 * gates, 5], np.float32),
                         "r": one([1, 4 * gates, 4], np.float32)}))
    for where in ("value_info", "output", "none"):
        m = model("g (float[2] a) => (float[2] y) { t = Relu(a) y = Relu(t) }")
        undefined = helper.make_tensor_value_info("t" if where == "value_info" else "y", TensorProto.UNDEFINED, [2])
        if where == "value_info":
            m.graph.value_info.append(undefined)
        elif where == "output":
            m.graph.output[0].CopyFrom(undefined)
        out.append((f"elem-type-0-in-{where}", m, {"a": one([2], np.float32)}))
    for name, text in (("nothing", "g () => () { }"), ("constant-only", "g () => () { c = Constant<value_int: int = 3>() }"),
                       ("input-only", "g (float[2] a) => () { }"), ("relu-no-output", "g (float[2] a) => () { b = Relu(a) }"),
                       ("constant-output", "g () => (int64 c) { c = Constant<value_int: int = 3>() }")):
        m = model(text)
        out.append((f"graph-{name}", m, {vi.name: one([2], np.float32) for vi in m.graph.input}))
    return out


def _run_rule_models(model):
    """Constant indices, axes and parameters against static shapes, on both sides of the rule
    (onnxruntime fails every run on the wrong side; found by an attack): Gather, GatherElements,
    GatherND, ScatterND and ScatterElements indices in and out of range (and updates or indices
    of another shape), LayerNormalization/RMSNormalization scales that do or do not broadcast,
    Range's delta, CumSum's axis, an Einsum output repeating a letter, OneHot's depth,
    QuantizeLinear scales per axis and per block."""
    x = {"x": np.ones([2, 4], np.float32)}
    cases = []
    for i in ("1", "-2", "5", "-3"):
        cases.append((f"gather-index{i}", 13, f"i = Constant<value: tensor = int64[1] {{{i}}}>() y = Gather(x, i)"))
        cases.append((f"gatherelements-index{i}", 13, f"i = Constant<value: tensor = int64[1,1] {{{i}}}>() "
                      "y = GatherElements<axis: int = 0>(x, i)"))
        cases.append((f"gathernd-index{i}", 13, f"i = Constant<value: tensor = int64[1,1] {{{i}}}>() y = GatherND(x, i)"))
        cases.append((f"scatternd-index{i}", 13, f"i = Constant<value: tensor = int64[1,1] {{{i}}}>() u = Constant<value: "
                      "tensor = float[1,4] {1, 2, 3, 4}>() y = ScatterND(x, i, u)"))
        cases.append((f"scatterelements-index{i}", 13, f"i = Constant<value: tensor = int64[1,1] {{{i}}}>() u = Constant<"
                      "value: tensor = float[1,1] {1}>() y = ScatterElements(x, i, u)"))
    cases.append(("gatherelements-rank1", 13, "i = Constant<value: tensor = int64[2] {0, 1}>() y = GatherElements(x, i)"))
    cases.append(("scatternd-updates-short", 13, "i = Constant<value: tensor = int64[1,1] {0}>() u = Constant<value: tensor "
                  "= float[1,3] {1, 2, 3}>() y = ScatterND(x, i, u)"))
    for op, opset in (("LayerNormalization", 17), ("RMSNormalization", 23)):
        for dims in ("4", "3", "1", "1,4", "2,4", "8"):
            n = int(np.prod([int(d) for d in dims.split(",")]))
            cases.append((f"{op.lower()}-scale-[{dims}]", opset, f"w = Constant<value: tensor = float[{dims}] "
                          f"{{{', '.join(['1'] * n)}}}>() y = {op}(x, w)"))
    for t, delta in (("float", "0"), ("float", "1"), ("int64", "0"), ("int64", "2")):
        cases.append((f"range-{t}-delta{delta}", 13, f"a = Constant<value: tensor = {t} {{0}}>() b = Constant<value: tensor = "
                      f"{t} {{5}}>() d = Constant<value: tensor = {t} {{{delta}}}>() r = Range(a, b, d) y = Identity(x)"))
    for axis in ("1", "-2", "2", "-3"):
        cases.append((f"cumsum-axis{axis}", 13, f"a = Constant<value: tensor = int64 {{{axis}}}>() y = CumSum(x, a)"))
    for eq in ("ij->ji", "ij->ii", "ij->i"):
        cases.append((f"einsum-{eq}", 13, f"y = Einsum<equation: string = \"{eq}\">(x)"))
    for depth in ("float {-2.5}", "int64 {0}", "int64 {3}"):
        cases.append((f"onehot-depth-{depth.split()[1]}", 13, f"i = Constant<value: tensor = int64[2] {{0, 1}}>() d = Constant<"
                      f"value: tensor = {depth}>() v = Constant<value: tensor = float[2] {{0, 1}}>() o = OneHot(i, d, v) "
                      "y = Identity(x)"))
    for dims, block in (("4", 0), ("2", 0), ("1", 0), ("2,2", 2), ("2,1", 3), ("2,3", 2)):
        n = int(np.prod([int(d) for d in dims.split(",")]))
        attrs = "axis: int = 1" + (f", block_size: int = {block}" if block else "")
        cases.append((f"quantize-scale-[{dims}]-block{block}", 21 if block else 13,
                      f"s = Constant<value: tensor = float[{dims}] {{{', '.join(['0.5'] * n)}}}>() "
                      f"q = QuantizeLinear<{attrs}>(x, s) y = DequantizeLinear<{attrs}>(q, s)"))
    out = [(name, model(f"g (float[2,4] x) => (float[] y) {{ {body} }}", opset), dict(x)) for name, opset, body in cases]
    for op, attr, words in (("Conv", "auto_pad", ("VALID", "SAME_UPPER", "valid", "bogus\\xff")),
                            ("MaxPool", "auto_pad", ("NOTSET", "SAME_LOWER", "same")),
                            ("Pad", "mode", ("reflect", "edge", "wrap", "bogus")),
                            ("Resize", "mode", ("cubic", "linear", "bilinear"))):
        for word in words:
            args = {"Conv": "x, w", "MaxPool": "x", "Pad": "x, p", "Resize": "x, , s"}[op]
            extra = ", kernel_shape: ints = [1, 1]" if op == "MaxPool" else ""
            m = model(f"g (float[1,1,2,2] x) => (float[] y) {{ w = Constant<value: tensor = float[1,1,1,1] {{1}}>() "
                      "p = Constant<value: tensor = int64[8] {0, 0, 1, 1, 0, 0, 1, 1}>() "
                      "s = Constant<value: tensor = float[4] {1, 1, 2, 2}>() "
                      f"y = {op}<{attr}: string = \"placeholder\"{extra}>({args}) }}", 19)
            node = next(n for n in m.graph.node if n.op_type == op)
            next(a for a in node.attribute if a.name == attr).s = word.encode("utf-8").replace(b"\\xff", b"\xff")
            out.append((f"{op.lower()}-{attr}-{word}", m, {"x": np.ones([1, 1, 2, 2], np.float32)}))
    for dims in ("1,1,0", "0,1,3", "1,1,3", "1,1,0,3", "1,0,3"):  # an empty channel or window input fails every run
        # (ConvTranspose over an empty window input: onnxruntime runs some, fails others -- not judged)
        for op, padded in (("Conv", False), ("Conv", True), ("MaxPool", False), ("GlobalAveragePool", False)):
            if padded and dims == "1,0,3":
                continue  # (no channel against a weight of one: another rule)
            r = dims.count(",") + 1
            args = "x, w" if op.startswith("Conv") else "x"
            pads = f", pads: ints = [{', '.join(['1'] * (2 * r - 4))}]" if padded else ""
            attrs = f"<kernel_shape: ints = [{', '.join(['1'] * (r - 2))}]{pads}>" if not op.startswith("Global") else ""
            out.append((f"{op.lower()}-input-[{dims}]-padded{padded}",
                        model(f"g (float[{dims}] x) => (float[] y) {{ w = Constant<value: tensor = float[{','.join(['1'] * r)}] "
                              f"{{1}}>() y = {op}{attrs}({args}) }}", 18),
                        {"x": np.ones([int(d) for d in dims.split(",")], np.float32)}))
    for mode in ("linear", "cubic", "nearest"):  # the layouts onnxruntime's interpolation takes (known scales)
        for sc in ("2", "2,2", "1,2,2", "2,2,2", "1,1,2,2", "1,2,2,1", "2,1,2,2", "1,2,1,2", "1,1,2,2,2", "1,2,2,2,1"):
            r = sc.count(",") + 1
            out.append((f"resize-{mode}-[{sc}]", model(f"g (float[{','.join(['2'] * r)}] x) => (float[] y) {{ s = Constant<"
                                                        f"value: tensor = float[{r}] {{{sc}}}>() y = Resize<mode: string = "
                                                        f"\"{mode}\">(x, , s) }}", 18),
                        {"x": np.ones([2] * r, np.float32)}))
    return out


def _tolerated_models(model):
    """What onnx.checker refuses and onnxruntime loads, or not: an unset ir_version, a graph
    without a name, a metadata key twice, an initializer holding raw_data and a typed field (read
    or not), one too short for its dims (read or not), an unknown op in a function nothing calls
    (or one called), a function importing an older default opset, GroupNormalization-18 and
    Upsample-10 (deprecated), a complex or an unknown element type, a function domain without an
    opset import."""
    from onnx import numpy_helper

    x2 = {"x": np.ones([2], np.float32)}

    def relu_model(reads_w=False, inits=(), ops=(("", 13),), funcs=(), node_domain="", op="Relu"):
        node = helper.make_node("Add", ["x", "w"], ["z"]) if reads_w else helper.make_node(op, ["x"], ["z"], domain=node_domain)
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])], initializer=list(inits))
        return helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in ops], functions=list(funcs),
                                 ir_version=8)

    out = []
    m = relu_model()
    m.ir_version = 0
    out.append(("tolerated-ir-version-0", m, x2))
    m = relu_model()
    m.graph.name = ""
    out.append(("tolerated-graph-without-name", m, x2))
    m = relu_model()
    m.metadata_props.add(key="k", value="1")
    m.metadata_props.add(key="k", value="2")
    out.append(("tolerated-metadata-key-twice", m, x2))
    for reads in (False, True):
        both = numpy_helper.from_array(np.array([1.0, 1.0], np.float32), "w")
        both.float_data.extend([5.0, 5.0])
        out.append((f"tolerated-two-value-fields-read{reads}", relu_model(reads, [both]), x2))
        short = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "w")
        short.raw_data = short.raw_data[:5]
        out.append((f"initializer-too-short-read{reads}", relu_model(reads, [short]), x2))
    unknown = helper.make_function("loc", "Bad", ["X"], ["Y"], [helper.make_node("NoSuchOp", ["X"], ["Y"])],
                                   [helper.make_opsetid("", 13)])
    out.append(("function-unknown-op-uncalled", relu_model(ops=(("", 13), ("loc", 1)), funcs=[unknown]), x2))
    out.append(("function-unknown-op-called", relu_model(ops=(("", 13), ("loc", 1)), funcs=[unknown], node_domain="loc",
                                                         op="Bad"), x2))
    older = helper.make_function("loc", "F", ["X"], ["Y"], [helper.make_node("Relu", ["X"], ["Y"])], [helper.make_opsetid("", 6)])
    out.append(("function-older-opset", relu_model(ops=(("", 13), ("loc", 1)), funcs=[older], node_domain="loc", op="F"), x2))
    out.append(("function-domain-not-imported", relu_model(funcs=[older], node_domain="loc", op="F"), x2))
    out.append(("groupnormalization-18", model("g (float[2,4,3] x) => (float[] y) { s = Constant<value: tensor = float[2] "
                                               "{1, 1}>() b = Constant<value: tensor = float[2] {0, 0}>() "
                                               "y = GroupNormalization<num_groups: int = 2>(x, s, b) }"),
                {"x": np.ones([2, 4, 3], np.float32)}))
    out.append(("upsample-10", model("g (float[1,1,2,2] x) => (float[] y) { s = Constant<value: tensor = float[4] "
                                     "{1, 1, 2, 2}>() y = Upsample<mode: string = \"nearest\">(x, s) }", 10),
                {"x": np.ones([1, 1, 2, 2], np.float32)}))
    for typed in (True, False):  # a SequenceMap body output without a type: onnxruntime refuses it
        by = helper.make_tensor_value_info("by", TensorProto.FLOAT, None) if typed else onnx.ValueInfoProto(name="by")
        body = helper.make_graph([helper.make_node("Relu", ["bx"], ["by"])], "b",
                                 [helper.make_tensor_value_info("bx", TensorProto.FLOAT, None)], [by])
        g = helper.make_graph([helper.make_node("SequenceConstruct", ["x", "x"], ["s"]),
                               helper.make_node("SequenceMap", ["s"], ["t"], body=body),
                               helper.make_node("ConcatFromSequence", ["t"], ["z"], axis=0)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
        out.append((f"sequencemap-body-typed-{typed}", helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)],
                                                                        ir_version=8), x2))
    for elem in (TensorProto.COMPLEX64, TensorProto.COMPLEX128, 999):
        g = helper.make_graph([helper.make_node("Identity", ["x"], ["z"])], "g", [helper.make_tensor_value_info("x", elem, [2])],
                              [helper.make_tensor_value_info("z", elem, [2])])
        out.append((f"element-type-{elem}", helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8),
                    {"x": np.ones([2], np.complex64)}))
    return out


@pytest.mark.parametrize("case", _load_rule_models(), ids=lambda c: c[0])
def test_check_says_what_onnxruntime_says_on_load_rules(case):
    """Both ways, as for the rule grids: an error exactly where onnxruntime refuses the model at
    load or fails in the run; the error names the node where there is one."""
    name, model, feeds = case
    # (here a kernel that refuses to be created refuses the model: the pooling pads, a graph of
    # Constants only are rules onnxruntime enforces there)
    verdict = _verdict_in_child(model, [feeds.get(vi.name) for vi in model.graph.input], at_creation="refused")
    errors = shapeinfer.check(model).errors
    assert verdict is not None, f"{name}: not judged"
    if verdict == "no-kernel":
        assert any(e.code == "no-kernel" for e in errors), f"{name}: onnxruntime has no kernel for it, check says nothing"
    if verdict in ("refused", "fails"):
        assert errors, f"{name}: onnxruntime {verdict} it, check reports no error"
    elif verdict == "runs":
        assert not errors, f"{name}: onnxruntime runs it, check says {errors[0].code}: {errors[0].message}"
