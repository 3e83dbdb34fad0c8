"""Plain-text rendering of an inference result."""

from __future__ import annotations

from shapeinfer.api import dtype_name


def _dtype(result, name) -> str:
    f = result.fact(name)
    if f is None or not f.dtype:
        return "?"
    return dtype_name(f.dtype)


def _shape(result, name) -> str:
    s = result.shape_strs(name)
    return "?" if s is None else "[" + ",".join(s) + "]"


def _table(rows, headers) -> list:
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(len(headers))]
    lines = ["  " + "  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip()]
    for r in rows:
        lines.append("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    return lines


def render_table(result, model_path: str, all_tensors: bool = False) -> str:
    g = result.model.graph
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in result.model.opset_import)
    out = [f"model: {model_path}  ({len(g.node)} nodes; opset {opsets})", ""]
    init = {t.name for t in g.initializer}
    inputs = [(i.name, _dtype(result, i.name), _shape(result, i.name)) for i in g.input if i.name not in init]
    outputs = [(o.name, _dtype(result, o.name), _shape(result, o.name)) for o in g.output]
    out.append("inputs")
    out.extend(_table(inputs, ("name", "dtype", "shape")) if inputs else ["  (none)"])
    out.append("outputs")
    out.extend(_table(outputs, ("name", "dtype", "shape")) if outputs else ["  (none)"])
    out.append("")
    nodes = result.reshape_like_nodes()
    out.append("Expand / Reshape / Tile")
    if nodes:
        rows = []
        for n in nodes:
            ins = ", ".join(_shape(result, i) if i else "-" for i in n.input)
            rows.append((n.name or "<unnamed>", n.op_type, ins, _shape(result, n.output[0])))
        out.extend(_table(rows, ("node", "op", "input shapes", "output shape")))
    else:
        out.append("  (none in this model)")
    if all_tensors:
        out.append("")
        out.append("all tensors")
        rows = [(name, _dtype(result, name), _shape(result, name), result.classify(name)) for name in result.tensor_names()]
        out.extend(_table(rows, ("tensor", "dtype", "shape", "kind")) if rows else ["  (none)"])
    s = result.summary()
    total = s["static"] + s["symbolic"] + s["unknown"]
    out.append("")
    out.append(
        f"summary: {total} tensors: {s['static']} static, {s['symbolic']} symbolic, {s['unknown']} unknown; "
        f"symbols: {', '.join(s['symbols']) or 'none'}"
        + (f"; minted for unknown dims: {', '.join(s['minted_symbols'])}" if s["minted_symbols"] else "")
    )
    notes = [d for d in result.declared_dims() if d["kind"] != "same"]
    for d in notes:
        rel = "is" if d["kind"] == "equal" else "CONFLICTS with inferred"
        out.append(f"declared: {d['tensor']}[{d['axis']}] = {d['declared']} {rel} {d['inferred']}")
    for a in result.assumptions:
        out.append(f"assumption: {a}")
    for d in result.diagnostics:
        out.append(str(d))
    return "\n".join(out)
