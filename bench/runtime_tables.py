"""Write shapeinfer/checker/data/onnxruntime_ops.json from the installed onnxruntime: what check
knows of onnxruntime without it installed -- the newest opset of each domain it runs, and the
schema of every op of its own domains (com.microsoft and the internal layout domains): input and
output counts, attributes (type, required), type constraints.

    python bench/runtime_tables.py        # in an environment with the onnxruntime to describe

The table names the onnxruntime version it was read from; check says so in the findings it
makes from it."""

from __future__ import annotations

import json
import os

import onnx
import onnxruntime as ort
from onnxruntime.capi import onnxruntime_pybind11_state as state

OUT = os.path.join(os.path.dirname(__file__), "..", "shapeinfer", "checker", "data", "onnxruntime_ops.json")
OWN_DOMAINS = ("com.microsoft", "com.microsoft.nchwc", "com.ms.internal.nhwc")


def _newest_opsets() -> dict:
    """The newest opset of each ONNX domain onnxruntime loads a model at (tried one by one)."""
    from onnx import TensorProto, helper

    so = ort.SessionOptions()
    so.log_severity_level = 4
    newest = {}
    for domain, start in (("", 1), ("ai.onnx.ml", 1)):
        v = start
        while v < 100:
            imports = [helper.make_opsetid("", v if not domain else 17)] + ([helper.make_opsetid(domain, v)] if domain else [])
            g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
            try:
                ort.InferenceSession(helper.make_model(g, opset_imports=imports, ir_version=10).SerializeToString(), so)
            except Exception:  # noqa: BLE001 - onnxruntime refusing that opset: the one before is the newest
                break
            v += 1
        newest[domain] = v - 1
    return newest


def main() -> None:
    ops: dict = {}
    for s in state.get_all_operator_schema():
        if s.domain not in OWN_DOMAINS:
            continue
        entry = {
            "since": s.since_version,
            "inputs": [s.min_input, s.max_input],
            "outputs": [s.min_output, s.max_output],
            "attributes": {name: [int(a.type), bool(a.required)] for name, a in sorted(s.attributes.items())},
        }
        ops.setdefault(s.domain, {}).setdefault(s.name, []).append(entry)
    for domain in ops.values():
        for versions in domain.values():
            versions.sort(key=lambda e: e["since"])
    table = {"onnxruntime": ort.__version__, "onnx": onnx.__version__, "newest_opsets": _newest_opsets(),
             "domains": sorted(set(OWN_DOMAINS) | {"", "ai.onnx", "ai.onnx.ml"}), "ops": ops}
    with open(OUT, "w") as fh:
        json.dump(table, fh, indent=0, sort_keys=True)
        fh.write("\n")
    print(f"{OUT}: {sum(len(d) for d in ops.values())} ops, newest opsets {table['newest_opsets']}")


if __name__ == "__main__":
    main()
