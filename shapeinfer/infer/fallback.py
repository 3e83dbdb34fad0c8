"""onnx's own per-node inference, for every op without a rule of ours.

Each symbolic dim goes in as a private ``dim_param`` token (``__si0``, ``__si1``, ...) and a
token that comes back is replaced by the dim it stands for, so symbols (and whole expressions)
survive ops that pass dims through, and no printed expression is ever read back as one. A dim
onnx cannot name becomes a fresh symbol; a name onnx takes from a subgraph's declared types is
the model's own (opaque). Known constant inputs are passed as data so that onnx can use them.
"""

from __future__ import annotations

from onnx import NodeProto, OperatorSetIdProto, checker, defs, shape_inference

from onnx import AttributeProto, TypeProto

from ..errors import ShapeInferenceError
from ..graph.structure import node_label
from ..symbolic import Sym
from .facts import Fact, shape_str
from .protos import fact_from_type, nested_tensor_types, tensor_from_value, type_from_fact

_TOKEN = "__si{}"
# What onnx raises for a node it cannot infer (its C++ errors; a bad attribute or type may
# surface as a Python ValueError/TypeError or a RuntimeError from the binding). Anything else,
# such as an exception a signal handler raises, is not an inference failure and propagates.
ONNX_FAILURES = (shape_inference.InferenceError, checker.ValidationError, defs.SchemaError, ValueError,
                 KeyError, IndexError, RuntimeError)


def _tokenized_type(fact: Fact, tokens: dict) -> TypeProto:
    """The fact's type with every symbolic dim written as a token (recorded in tokens)."""
    def token(d) -> str:
        got = tokens.get(d)
        if got is None:
            got = tokens[d] = _TOKEN.format(len(tokens))
        return got

    return type_from_fact(fact, token)


def _untokenized(tp: TypeProto, dims: dict) -> TypeProto:
    """A copy of a non-tensor type (a sequence's, an optional's elements...) with each token
    written back as its dim: an int as a size, a lone symbol as its name (read back as the same
    symbol), anything else cleared -- unknown, never a name two unrelated dims could share."""
    out = TypeProto()
    out.CopyFrom(tp)
    for tt in nested_tensor_types(out):
        if not tt.HasField("shape"):
            continue
        for dp in tt.shape.dim:
            if dp.HasField("dim_param") and dp.dim_param in dims:
                d = dims[dp.dim_param]
                if isinstance(d, int):
                    dp.dim_value = d
                elif len(d.terms) == 1 and d.terms[0][1] == 1 and len(d.terms[0][0]) == 1 \
                        and d.terms[0][0][0][1] == 1 and isinstance(d.terms[0][0][0][0], Sym):
                    dp.dim_param = d.terms[0][0][0][0].name
                else:
                    dp.Clear()
    return out


def _resolved_node(node, attr_scope):
    """The node with attributes given by reference replaced by the calling node's values."""
    if attr_scope is None or not any(a.ref_attr_name for a in node.attribute):
        return node
    out = NodeProto()
    out.CopyFrom(node)
    del out.attribute[:]
    for a in node.attribute:
        if a.ref_attr_name:
            ref = attr_scope.get(a.ref_attr_name)
            if ref is None:
                continue
            new = out.attribute.add()
            new.CopyFrom(ref)
            new.name = a.name
        else:
            out.attribute.add().CopyFrom(a)
    return out


# The size every token takes in the check of _drop_unproven_dims: one value for all (dims the op
# requires equal stay equal), divisible by every count up to 16 (head counts, groups, blocks).
_PROBE_SIZE = 720720


def _drop_unproven_dims(result: dict, schema, node, attr_scope, input_types: dict, input_data: dict,
                        opset_imports, engine, tokens: set) -> None:
    """Clear each static output dim onnx gave for inputs with symbolic dims that it does not give
    again when every symbolic dim is _PROBE_SIZE: a static dim computed from a symbolic one.

    onnx's C++ inference reads an unknown dim's ``dim_value()`` as 0 in places (Attention-23
    gives a 3-D output's last dim as 0 for a symbolic hidden size; the real size is
    q_num_heads * v_head_size), which would be a wrong static dim. A dim onnx really knows does
    not depend on the sizes of the symbolic ones. Where the probe itself fails (a size the op
    refuses), nothing is cleared: no dim is refuted."""
    probe = {}
    for name, tp in input_types.items():
        c = TypeProto()
        c.CopyFrom(tp)
        for tt in nested_tensor_types(c):
            for dp in tt.shape.dim if tt.HasField("shape") else ():
                if dp.HasField("dim_param") and dp.dim_param in tokens:
                    dp.dim_value = _PROBE_SIZE
        probe[name] = c
    resolved = _resolved_node(node, attr_scope)
    try:
        again = shape_inference.infer_node_outputs(schema, resolved, probe, input_data,
                                                   opset_imports=opset_imports, ir_version=engine.ir_version)
    except ONNX_FAILURES:
        return
    for name, tp in result.items():
        other = again.get(name)
        for tt, ot in zip(nested_tensor_types(tp), nested_tensor_types(other) if other is not None else ()):
            if not tt.HasField("shape"):
                continue
            theirs = list(ot.shape.dim) if ot.HasField("shape") else []
            for k, dp in enumerate(tt.shape.dim):
                if dp.HasField("dim_value") and (len(theirs) != len(tt.shape.dim) or not theirs[k].HasField("dim_value")
                                                 or theirs[k].dim_value != dp.dim_value):
                    dp.Clear()  # (unknown: a fresh symbol)
        if other is None:
            for tt in nested_tensor_types(tp):
                for dp in tt.shape.dim if tt.HasField("shape") else ():
                    if dp.HasField("dim_value"):
                        dp.Clear()


def infer_with_onnx(engine, node, inputs: list, opsets: dict, attr_scope, have_rule: bool = False,
                    refuse: bool = False) -> list:
    """Output facts from onnx's inference for ``node`` (None entries where it gives nothing).
    ``have_rule``: a rule of ours answered for some outputs (an op onnx does not know is then
    not reported as unknown). ``refuse``: where onnx's inference rejects a node of the default
    or ai.onnx.ml domain -- the inference onnxruntime runs at load, on facts that hold for every
    run -- raise a ShapeInferenceError (the node is invalid); else warn and go on."""
    n_out = len(node.output)
    if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute):
        engine.saw_if = True  # (bodies onnx's inference answers for are not walked here: one may hold an If)
    domain = node.domain if node.domain != "ai.onnx" else ""
    version = opsets.get(domain)
    try:
        schema = defs.get_schema(node.op_type, version, domain)
    except ONNX_FAILURES:
        if have_rule:
            return [None] * n_out
        where = f"{domain or 'ai.onnx'} opset {version}"
        engine.warn(node, f"op {node.op_type} of domain {domain or 'ai.onnx'!r} is unknown to shapeinfer and to the "
                          f"installed onnx ({where}); outputs unknown", kind="unknown-op")
        return [None] * n_out
    input_types = {}
    input_data = {}
    tokens: dict = {}  # dim -> token
    for name, fact in zip(node.input, inputs):
        if not name:
            continue
        if fact is None or (fact.dtype == 0 and fact.type_proto is None):
            return [None] * n_out
        input_types[name] = _tokenized_type(fact, tokens)
        tensor = tensor_from_value(fact, name)
        if tensor is not None:
            input_data[name] = tensor
    opset_imports = [OperatorSetIdProto(domain=d, version=v) for d, v in opsets.items()]
    resolved = _resolved_node(node, attr_scope)
    try:
        result = shape_inference.infer_node_outputs(
            schema,
            resolved,
            input_types,
            input_data,
            opset_imports=opset_imports,
            ir_version=engine.ir_version,
        )
    except ONNX_FAILURES as e:
        why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if refuse and domain in ("", "ai.onnx.ml") and isinstance(e, shape_inference.InferenceError):
            raise ShapeInferenceError(f"onnx's inference, which onnxruntime runs at load, rejects it: {why}",
                                      node_name=node_label(node), op_type=node.op_type,
                                      input_shapes=[shape_str(f.shape) if f is not None else "?" for f in inputs])
        engine.warn(node, f"onnx inference failed: {why}")
        return [None] * n_out
    dims = {token: d for d, token in tokens.items()}
    if tokens:
        _drop_unproven_dims(result, schema, node, attr_scope, input_types, input_data, opset_imports, engine, set(dims))

    symbols = engine.symbols

    def param(text):
        d = dims.get(text)
        return d if d is not None else symbols.param(text)

    outs = []
    for name in node.output:
        tp = result.get(name)
        if tp is None:
            outs.append(None)
            continue
        if not tp.HasField("tensor_type"):  # kept as a type (sequence, optional, ...): no token may stay in it
            tp = _untokenized(tp, dims)
        fact = fact_from_type(tp, lambda: symbols.mint(node.op_type.lower(), origin=f"{node.op_type} {node.name}"), param)
        outs.append(fact if (fact.dtype or fact.type_proto is not None) else None)
    return [o if o is not None else Fact() for o in outs]
