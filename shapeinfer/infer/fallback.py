"""onnx's own per-node inference, for every op without a rule of ours.

Our dims go in as ``dim_param`` strings in the printed syntax and come back parsed, so symbols
(and whole expressions) survive ops that pass dims through. A dim onnx cannot name becomes a
fresh symbol. Known constant inputs are passed as data so that onnx can use their values.
"""

from __future__ import annotations

from onnx import NodeProto, OperatorSetIdProto, defs, shape_inference

from .facts import Fact
from .protos import fact_from_type, tensor_from_value, type_from_fact


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


def infer_with_onnx(engine, node, inputs: list, opsets: dict, attr_scope) -> list:
    """Output facts from onnx's inference for ``node`` (None entries where it gives nothing)."""
    n_out = len(node.output)
    domain = node.domain if node.domain != "ai.onnx" else ""
    version = opsets.get(domain)
    try:
        schema = defs.get_schema(node.op_type, version, domain)
    except Exception:
        engine.warn(node, "op unknown to the installed onnx; outputs unknown", kind="unknown-op")
        return [None] * n_out
    input_types = {}
    input_data = {}
    for name, fact in zip(node.input, inputs):
        if not name:
            continue
        if fact is None or (fact.dtype == 0 and fact.type_proto is None):
            return [None] * n_out
        input_types[name] = type_from_fact(fact)
        tensor = tensor_from_value(fact, name)
        if tensor is not None:
            input_data[name] = tensor
    opset_imports = [OperatorSetIdProto(domain=d, version=v) for d, v in opsets.items()]
    try:
        result = shape_inference.infer_node_outputs(
            schema,
            _resolved_node(node, attr_scope),
            input_types,
            input_data,
            opset_imports=opset_imports,
            ir_version=engine.ir_version,
        )
    except Exception as e:
        engine.warn(node, f"onnx inference failed: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}")
        return [None] * n_out
    outs = []
    for name in node.output:
        tp = result.get(name)
        if tp is None:
            outs.append(None)
            continue
        fact = fact_from_type(
            tp, lambda: engine.mint(node.op_type.lower(), origin=f"{node.op_type} {node.name}"), engine.param
        )
        outs.append(fact if (fact.dtype or fact.type_proto is not None) else None)
    return [o if o is not None else Fact() for o in outs]
