"""What check knows of onnxruntime without it installed: a table read from one onnxruntime
release (``data/onnxruntime_ops.json``, written by ``bench/runtime_tables.py``) -- the newest
opset of each ONNX domain it loads, the domains it defines ops in, and the schema of every op of
its own domains (com.microsoft and its layout domains): input and output counts, attributes.
Each finding made from the table names the release it describes.

Model-level refusals check reports from it, each an error (onnxruntime refuses the model at
load): an opset newer than onnxruntime runs, an op of a domain neither ONNX, onnxruntime nor the
model's functions define, an op of onnxruntime's own domains that it does not have, or called
with inputs, outputs or attributes its schema does not take, an ONNX op on an element type its
CPU provider has no kernel for (NOT_IMPLEMENTED, found by trying onnx's backend node cases with
every type their schemas allow).
"""

from __future__ import annotations

import functools
import json
import os
from typing import Optional

import onnx
from onnx import AttributeProto, ModelProto, TensorProto

__all__ = ["RuntimeTable", "table"]

_TYPE_CODES = frozenset(TensorProto.DataType.values())
_PATH = os.path.join(os.path.dirname(__file__), "data", "onnxruntime_ops.json")


class RuntimeTable:
    def __init__(self, data: dict):
        self.release = f"onnxruntime {data['onnxruntime']}"
        self.newest = {("" if d == "ai.onnx" else d): v for d, v in data["newest_opsets"].items()}
        self.domains = frozenset("" if d == "ai.onnx" else d for d in data["domains"])
        self.ops = data["ops"]
        self.missing_kernels = data.get("missing_kernels", {})
        self.kernel_versions = data.get("kernel_versions", {})

    def kernel_problem(self, node, version: Optional[int], input_types: list, output_types: list) -> Optional[str]:
        """Why onnxruntime's CPU provider has no kernel for ``node`` of an ONNX domain at opset
        ``version`` with inputs and outputs of these element types (TensorProto codes, 0
        unknown), or None."""
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        if version is None or not self.missing_kernels:
            return None
        try:
            schema = onnx.defs.get_schema(node.op_type, version, domain)
        except onnx.defs.SchemaError:
            return None
        why = self._version_problem(node, schema, domain)
        if why:
            return why
        lacking = self.missing_kernels.get(f"{domain}|{node.op_type}|{schema.since_version}")
        if not lacking:
            return None
        for formal, types, what in ((schema.inputs, input_types, "input"), (schema.outputs, output_types, "output")):
            for k, dtype in enumerate(types):
                if not dtype or not formal:
                    continue
                param = formal[min(k, len(formal) - 1)].type_str
                name = f"tensor({TensorProto.DataType.Name(dtype).lower()})" if dtype in _TYPE_CODES else None
                if name is not None and name in lacking.get(param, ()):
                    return (f"{self.release}'s CPU provider has no kernel for {node.op_type} (opset "
                            f"{schema.since_version}) with {name[7:-1]} as {what} {k}")
        return None

    def _version_problem(self, node, schema, domain: str) -> Optional[str]:
        """An op version the CPU provider registers no kernel for (Relu-1: its kernels start at
        6) and that onnxruntime cannot expand either (no function body; Constant it makes an
        initializer): it refuses the model at load."""
        if not self.kernel_versions or node.op_type == "Constant" or schema.has_function \
                or schema.has_context_dependent_function:
            return None
        spans = self.kernel_versions.get(f"{domain}|{node.op_type}", [])
        if any(lo <= schema.since_version <= hi for lo, hi in spans):
            return None
        where = f"its kernels start at opset {spans[0][0]}" if spans else "it has no kernel for the op"
        return (f"{self.release}'s CPU provider has no kernel for {node.op_type} as opset {schema.since_version} "
                f"defines it ({where})")

    def opset_problems(self, model: ModelProto) -> list:
        """(domain, version, newest) for each opset import newer than onnxruntime runs."""
        out = []
        for o in model.opset_import:
            domain = "" if o.domain == "ai.onnx" else o.domain
            newest = self.newest.get(domain)
            if newest is not None and o.version > newest:
                out.append((o.domain or "ai.onnx", o.version, newest))
        return out

    def node_problem(self, node, version: Optional[int]) -> Optional[str]:
        """Why onnxruntime refuses ``node`` of one of its own domains (at the domain's opset
        ``version``), or None (also for a domain it does not own)."""
        versions = self.ops.get(node.domain)
        if versions is None:
            return None
        entries = versions.get(node.op_type)
        if not entries:
            return f"{self.release} has no op {node.op_type} in domain {node.domain!r}"
        usable = [e for e in entries if version is None or e["since"] <= version]
        if not usable:
            return f"{node.domain}.{node.op_type} exists from opset {entries[0]['since']} of {node.domain!r}, " \
                   f"and the model imports {version}"
        spec = usable[-1]
        lo, hi = spec["inputs"]
        n_in = len(node.input)
        if n_in > hi:
            return f"{n_in} inputs; {node.domain}.{node.op_type} takes at most {hi} ({self.release})"
        if sum(1 for i in node.input if i) < lo and n_in < lo:
            return f"{n_in} inputs; {node.domain}.{node.op_type} needs {lo} ({self.release})"
        lo, hi = spec["outputs"]
        if not lo <= len(node.output) <= hi:
            return f"{len(node.output)} outputs; {node.domain}.{node.op_type} makes {lo} to {hi} ({self.release})"
        attrs = spec["attributes"]
        for a in node.attribute:
            want = attrs.get(a.name)
            if want is None:
                return f"attribute {a.name!r} is not an attribute of {node.domain}.{node.op_type} ({self.release})"
            if a.type != want[0] and not a.ref_attr_name:
                return (f"attribute {a.name!r} is {AttributeProto.AttributeType.Name(a.type)}; {node.op_type} takes "
                        f"{AttributeProto.AttributeType.Name(want[0])} ({self.release})")
        given = {a.name for a in node.attribute}
        missing = [n for n, (_, required) in attrs.items() if required and n not in given]
        if missing:
            return f"required attribute {missing[0]!r} is missing ({self.release})"
        return None


@functools.lru_cache(maxsize=1)
def table() -> RuntimeTable:
    with open(_PATH, encoding="utf-8") as fh:
        return RuntimeTable(json.load(fh))
