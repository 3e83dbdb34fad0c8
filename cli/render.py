"""Plain-text rendering of an inference result."""

from __future__ import annotations

from shapeinfer.infer.facts import dtype_name
from shapeinfer.symbolic import plain, to_str, zero_cases


def _dtype(result, name) -> str:
    f = result.fact(name)
    if f is None or not f.dtype:
        return "?"
    return dtype_name(f.dtype)


def _shown(result, name, cases: set = None) -> str:
    """The shape as the table shows it: each dim in its plain form (no zero case holds), marked
    ``^`` where a zero case gives it another value; the cases are added to ``cases``."""
    shape = result.shape(name)
    if shape is None:
        return "?"
    parts = []
    for d in shape:
        zeros = zero_cases(d)
        if zeros and cases is not None:
            cases.update(to_str(m) for m in zeros)
            parts.append(to_str(plain(d)) + "^")
        else:
            parts.append(to_str(d))
    return "[" + ",".join(parts) + "]"


def _table(rows, headers) -> list:
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(len(headers))]
    lines = ["  " + "  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip()]
    for r in rows:
        lines.append("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    return lines


def render_table(result, model_path: str, all_tensors: bool = False) -> str:
    cases: set = set()

    def _shape(result, name):
        return _shown(result, name, cases)

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
    if cases:
        out.append("")
        out.append(f"^: another value where {' or '.join(sorted(c + ' = 0' for c in cases))} (a Reshape entry that "
                   "is 0 copies the input dim); the exact form, with iszero(...), is in --json and the annotated model")
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
        if d.kind != "condition":  # unconfirmed conditions: `shapeinfer check` tests them
            out.append(str(d))
    return "\n".join(out)


def human_bytes(n: int) -> str:
    """1536 -> '1.5 KiB' (B, KiB, MiB, GiB)."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _stats_rows(before: dict, after: dict) -> list:
    """Rows of the before/after table: nodes, every op type (most frequent first), computed
    Reshape/Expand shapes, the model's size."""
    rows = [("nodes", before.get("nodes", ""), after.get("nodes", ""))]
    ops_b, ops_a = before.get("ops", {}), after.get("ops", {})
    for op in list(ops_b) + [op for op in ops_a if op not in ops_b]:
        rows.append((f"  {op}", ops_b.get(op, 0), ops_a.get(op, 0)))
    rows.append(("computed reshape shapes", before.get("computed_reshape_shapes", ""),
                 after.get("computed_reshape_shapes", "")))
    if "bytes" in before:
        rows.append(("size", human_bytes(before["bytes"]), human_bytes(after["bytes"]) if "bytes" in after else ""))
    return rows


def render_optimize(report, model_path: str, output: str, explain: bool, verdict=None, written=None) -> str:
    rounds = f"{report.rounds} round{'s' if report.rounds != 1 else ''}"
    out = [f"optimize: {model_path} -> {output}  ({rounds}, {report.seconds:.2f} s)", ""]
    out.extend(_table(_stats_rows(report.before, report.after), ("", "before", "after")))
    out.append("")
    for name, changes in report.changes.items():
        if not changes and not explain:
            continue  # (--explain lists every pass)
        out.append(f"{name}: {len(changes)} change{'s' if len(changes) != 1 else ''}")
        for c in changes[:20]:
            out.append(f"  {c}")
        if len(changes) > 20:
            out.append(f"  ... and {len(changes) - 20} more")
    if explain:
        out.append("")
        out.append("kept Reshape/Expand/Tile")
        out.extend(f"  {n} ({op}): {why}" for n, op, why in report.kept) if report.kept else out.append("  (none left)")
        if report.not_folded:
            out.append("")
            out.append("nodes not folded")
            out.extend(f"  {n} ({op}): {why.removeprefix('not folded: ')}" for n, op, why in report.not_folded)
    for a in report.assumptions:
        out.append(f"assumption: {a}")
    if verdict is not None:
        out.append("")
        out.append(f"verify ({verdict.engine}): {_verdict_line(verdict)}")
        if verdict.fallback and verdict.fallback != "asked for":
            out.append(f"  (run in onnx.reference, not onnxruntime: {verdict.fallback})")
        for binding, outcome in verdict.runs:
            out.append(f"  {_binding(binding)}: {outcome}")
    if written is not None and written.describe():
        out.append(written.describe())
    return "\n".join(out)


def _binding(binding: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in binding.items()) if binding else "(static)"


def _verdict_line(verdict) -> str:
    from shapeinfer.optimizer.verify import DIFFERENT, IDENTICAL

    n = len(verdict.runs)
    if verdict.outcome == IDENTICAL:
        skipped = f" ({verdict.skipped} skipped: the original model does not run there)" if verdict.skipped else ""
        return f"outputs identical, {verdict.comparison}, at {verdict.compared} of {n} bindings{skipped}"
    if verdict.outcome == DIFFERENT:
        return f"DIFFERENCES FOUND ({verdict.comparison})"
    return f"NOTHING COMPARED: the original model ran at none of the {n} bindings"


def verify_failure(verdict, model) -> tuple:
    """(one-line message, exit code) for a verification that did not pass."""
    from shapeinfer.optimizer.verify import DIFFERENT, input_symbols

    if verdict.outcome == DIFFERENT:
        return "--verify found differences between the original and the optimised model; nothing written", 1
    symbols = input_symbols(model)
    if not all("the original model does not run" in r for _, r in verdict.runs):
        why = next(r for _, r in verdict.runs if "the original model does not run" not in r)
        return f"--verify compared nothing: {why.removeprefix('skipped: ')}; nothing written", 2
    tried = "; ".join(_binding(b) for b, _ in verdict.runs)
    hint = (f"pass --bind SYMBOL=V1,V2 with sizes the model accepts (symbols: {', '.join(symbols)})" if symbols
            else "the model has no symbolic input dims to bind")
    return (f"--verify compared nothing: the original model does not run at any binding tried ({tried}); "
            f"{hint}; nothing written"), 2
