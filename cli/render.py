"""Plain-text rendering of an inference result, the optimize report and the cost report.

Every line goes through ``one_line`` before it is coloured and printed: a name (node, tensor,
op, model path) holding a newline, a control character, an escape sequence or a byte that is
not UTF-8 shows them as escapes (``\\n``, ``\\x1b``, ``\\xff``) and never starts a line or
reaches the terminal raw."""

from __future__ import annotations

import unicodedata

from shapeinfer.infer.facts import dtype_name
from shapeinfer.modelio.text import as_text, one_line
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


def _cells(text: str) -> int:
    """Terminal cells text takes: East Asian wide and fullwidth characters take two."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else (0 if unicodedata.combining(c) else 1) for c in text)


def _wrap(line: str, width: int) -> list:
    """A prose line wrapped to ``width`` terminal cells (a table line, cut already, stays)."""
    import textwrap

    import click

    cells = _cells(click.unstyle(line))
    if cells <= width:
        return [line]
    line = click.unstyle(line)
    return textwrap.wrap(line, max(20, width - (cells - len(line))), subsequent_indent="    ",
                         break_on_hyphens=False) or [line]


def _table(rows, headers, width=None, first=None) -> list:
    """Rows aligned in columns; with ``width``, columns are cut (cells end in "…") until a line
    fits it: column ``first`` (node names) down to NAME_COLUMN first, then the widest."""
    rows = [[one_line(c) for c in r] for r in rows]
    widths = [max(_cells(str(r[i])) for r in rows + [list(headers)]) for i in range(len(headers))]
    if width:
        floors = [_cells(str(h)) for h in headers]
        if first is not None:
            over = 2 + sum(widths) + 2 * (len(widths) - 1) - width
            widths[first] -= max(0, min(over, widths[first] - max(NAME_COLUMN, floors[first])))
        widths = _fit(widths, floors, width)
    lines = ["  " + "  ".join(_cell(h, w) for h, w in zip(headers, widths)).rstrip()]
    for r in rows:
        lines.append("  " + "  ".join(_cell(c, w) for c, w in zip(r, widths)).rstrip())
    return lines


MIN_COLUMN = 8  # a column is never cut below this many characters (or its header)
NAME_COLUMN = 20  # node names are cut to this first: the shapes are what the table is for


def _fit(widths: list, floors: list, width: int) -> list:
    """Column widths whose line (two leading spaces, two between columns) fits ``width``:
    the widest column loses a character at a time, none below MIN_COLUMN or its header."""
    widths = list(widths)
    over = 2 + sum(widths) + 2 * (len(widths) - 1) - width
    while over > 0:
        k = max(range(len(widths)), key=lambda i: widths[i])
        if widths[k] <= max(MIN_COLUMN, floors[k]):
            break  # as narrow as it goes: the line stays longer
        widths[k] -= 1
        over -= 1
    return widths


def _cell(value, w: int) -> str:
    text = str(value)
    n = _cells(text)
    if n <= w:
        return text + " " * (w - n)
    out, used = [], 0
    for c in text:  # cut at w - 1 cells, then the ellipsis
        k = _cells(c)
        if used + k > w - 1:
            break
        out.append(c)
        used += k
    return "".join(out) + "…" + " " * (w - 1 - used)


def _value(result, name) -> str:
    """A shape input as the table shows it: its value ([0,0,12,64]) or ? when not known."""
    value = result.value_strs(name)
    return "?" if value is None else "[" + ",".join(map(str, value)) + "]"


def _node_rows(result, nodes, shape) -> list:
    """(node, op, inputs, output shape, count) rows: a Reshape/Expand/Tile shows its data
    input's shape and its target's value; identical rows (a block repeated in every layer)
    are one row, counted."""
    rows: dict = {}
    for n in nodes:
        if n.op_type in ("Reshape", "Expand", "Tile") and len(n.input) > 1:
            ins = f"{shape(result, n.input[0])} -> {_value(result, n.input[1])}"
        elif n.op_type == "Reshape" and n.input:  # Reshape-1: the shape is an attribute
            ins = shape(result, n.input[0])
        else:
            ins = ", ".join(shape(result, i) if i else "-" for i in n.input)
        outs = ", ".join(shape(result, o) for o in n.output if o) or "-"
        key = (n.op_type, ins, outs)
        if key in rows:
            rows[key][4] += 1
        else:
            rows[key] = [as_text(n.name) or "<unnamed>", as_text(n.op_type), ins, outs, 1]
    return [(name, f"x{count}" if count > 1 else "", op, ins, outs) for name, op, ins, outs, count in rows.values()]


def render_table(result, model_path: str, all_tensors: bool = False, ops=None, node_glob=None,
                 width=None, color: bool = False) -> str:
    """The inputs, outputs and the nodes of ``ops`` (default Expand/Reshape/Tile) whose name
    matches ``node_glob``, each node row once with how many nodes share it; ``width`` cuts the
    tables to fit; ``color`` styles the headings (a terminal that wants it)."""
    import fnmatch

    import click

    cases: set = set()
    styled: dict = {}  # line index -> how colour styles it (after the line is made safe)

    def _shape(result, name):
        return _shown(result, name, cases)

    def heading(text):
        if color:
            styled[len(out)] = lambda line: click.style(line, bold=True)
        out.append(text)

    g = result.model.graph
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in result.model.opset_import)
    out = [f"model: {model_path}  ({len(g.node)} nodes; opset {opsets})", ""]
    init = {t.name for t in g.initializer}
    inputs = [(i.name, _dtype(result, i.name), _shape(result, i.name)) for i in g.input if i.name not in init]
    outputs = [(o.name, _dtype(result, o.name), _shape(result, o.name)) for o in g.output]
    heading("inputs")
    out.extend(_table(inputs, ("name", "dtype", "shape"), width) if inputs else ["  (none)"])
    heading("outputs")
    out.extend(_table(outputs, ("name", "dtype", "shape"), width) if outputs else ["  (none)"])
    out.append("")
    wanted = set(ops) if ops else {"Expand", "Reshape", "Tile"}
    nodes = [n for n in g.node
             if n.op_type in wanted and (node_glob is None or fnmatch.fnmatchcase(as_text(n.name), node_glob))]
    heading(" / ".join(sorted(wanted)) + (f" (nodes {node_glob})" if node_glob else ""))
    if nodes:
        rows = _node_rows(result, nodes, _shape)
        headers = ("node", "", "op", "input -> target" if wanted <= {"Expand", "Reshape", "Tile"} else "inputs",
                   "output shape")
        out.extend(_table(rows, headers, width, first=0))
        grouped = len(nodes) - len(rows)
        if grouped:
            out.append(f"  ({len(nodes)} nodes; xN: N nodes with the same shapes, the first one named)")
    else:
        out.append("  (none in this model)" if node_glob is None else "  (no such node)")
    if all_tensors:
        out.append("")
        heading("all tensors")
        rows = [(name, _dtype(result, name), _shape(result, name), result.classify(name)) for name in result.tensor_names()]
        out.extend(_table(rows, ("tensor", "dtype", "shape", "kind"), width, first=0) if rows else ["  (none)"])
    if cases:
        out.append("")
        out.append(f"^: another value where {' or '.join(sorted(c + ' = 0' for c in cases))} (a Reshape entry that "
                   "is 0 copies the input dim); the exact form, with iszero(...), is in --json and the annotated model")
    s = result.summary()
    total = s["static"] + s["symbolic"] + s["unknown"]
    out.append("")
    unknown = f"{s['unknown']} unknown"
    if color and s["unknown"]:
        styled[len(out)] = lambda line: line.replace(unknown, click.style(unknown, fg="yellow"), 1)
    out.append(
        f"summary: {total} tensors: {s['static']} static, {s['symbolic']} symbolic, {unknown}; "
        f"symbols: {', '.join(s['symbols']) or 'none'}"
        + (f"; {len(s['minted_symbols'])} minted for unknown dims (--json lists them)" if s["minted_symbols"] else "")
    )
    contract = result.contract()
    if contract.clauses or contract.open:
        out.append(f"runs when: {contract.text()}")
    notes = [d for d in result.declared_dims() if d["kind"] != "same"]
    for d in notes:
        rel = "is" if d["kind"] == "equal" else "CONFLICTS with inferred"
        out.append(f"declared: {d['tensor']}[{d['axis']}] = {d['declared']} {rel} {d['inferred']}")
    for a in result.assumptions:
        out.append(f"assumption: {a}")
    for d in result.diagnostics:
        if d.kind != "condition":  # unconfirmed conditions: `shapeinfer check` tests them
            out.append(str(d))
    return finish_lines(out, width, styled)


def finish_lines(out: list, width=None, styled: dict = None) -> str:
    """A report's lines as printed: each made one safe line (``one_line``: a newline or an
    escape sequence inside a name shows as an escape), then styled (``styled``: line index ->
    a function that colours it), then, with ``width``, prose lines wrapped at it (tables are
    cut to it already)."""
    lines = [one_line(line) for line in out]
    for i, style in (styled or {}).items():
        lines[i] = style(lines[i])
    if width:
        lines = [w for line in lines for w in _wrap(line, width)]
    return "\n".join(lines)


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
    for a in report.run_facts:
        out.append(f"run fact: {a}")
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
    return finish_lines(out)


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


def short_number(n) -> str:
    """385280 -> '385.3 K'; 1.8e9 -> '1.80 G' (K, M, G, T: powers of 1000)."""
    n = float(n)
    if abs(n) >= 1e15:
        return f"{n:.3g}"
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:g}"


def _coefficient(c) -> str:
    c = int(c) if getattr(c, "denominator", 1) == 1 else c
    if isinstance(c, int) and abs(c) >= 1_000_000:
        mantissa, exp = f"{c:.3g}".split("e+") if "e+" in f"{c:.3g}" else (f"{c:.3g}", "")
        return f"{mantissa}e{int(exp)}" if exp else mantissa
    return str(c)


def formula(d, max_args=None, rank=None) -> str:
    """A cost formula as people read it: the plain form (no zero case), terms of highest degree
    first, large coefficients short (1.64e6*batch*seq + 128*batch*seq^2). A max of more than
    ``max_args`` dims shows the largest ones by ``rank`` (a function of a dim) and how many
    there are."""
    from shapeinfer.symbolic import atom_dim, plain

    if d is None:
        return "?"
    if isinstance(d, int):
        return f"{d:,}"
    d = plain(d)
    if isinstance(d, int):
        return f"{d:,}"
    if len(d.terms) == 1 and d.terms[0][1] == 1 and len(d.terms[0][0]) == 1 and d.terms[0][0][0][1] == 1 \
            and type(d.terms[0][0][0][0]).__name__ == "Max":  # max(a, max(b, c)) -> max(a, b, c)
        args, stack = [], list(d.terms[0][0][0][0].args)
        while stack:
            a = stack.pop(0)
            inner = a.terms[0][0][0][0] if not isinstance(a, int) and len(a.terms) == 1 and a.terms[0][1] == 1 \
                and len(a.terms[0][0]) == 1 and a.terms[0][0][0][1] == 1 else None
            if type(inner).__name__ == "Max":
                stack[:0] = list(inner.args)
            else:
                args.append(a)
        if max_args is not None and len(args) > max_args:
            shown = sorted(args, key=lambda a: -(rank(a) if rank else 0))[:max_args]
            return ("max(" + ", ".join(formula(a) for a in shown)
                    + f", ... {len(args) - max_args} more; --json has every one)")
        return "max(" + ", ".join(formula(a) for a in args) + ")"
    terms = sorted(d.terms, key=lambda t: -sum(e for _, e in t[0]))
    pieces = []
    for mono, coef in terms:
        parts = []
        for atom, e in mono:
            s = to_str(atom_dim(atom))
            if atom.infix is not None:
                s = f"({s})"
            parts.append(s if e == 1 else f"{s}^{e}")
        c = abs(coef)
        body = "*".join(parts)
        text = _coefficient(c) if not parts else (body if c == 1 else f"{_coefficient(c)}*{body}")
        pieces.append(("- " if coef < 0 else "+ ") + text)
    out = " ".join(pieces)
    return out[2:] if out.startswith("+ ") else "-" + out[2:]


def render_cost(report, width=None, top: int = 10) -> str:
    """The cost report: a table by op type, the top nodes, and the formulas (or the numbers,
    when every symbol is bound)."""
    from shapeinfer.symbolic import EvaluationError, evaluate, free_symbols

    bound = bool(report.binding) and all(isinstance(n.macs, int) or n.macs is None for n in report.nodes)
    rank_at = dict(report.binding) or {s: 128 for s in report.symbols}
    rank_at.update({s: 128 for s in report.unknown_symbols if s not in rank_at})

    def at(d) -> float:
        if d is None:
            return 0.0
        try:
            return float(evaluate(d, {s: rank_at.get(s, 128) for s in free_symbols(d)} if not isinstance(d, int) else {}))
        except (EvaluationError, ArithmeticError):  # an expression with no value there ranks last
            return 0.0

    def shown(d) -> str:
        if d is None:
            return "?"
        return short_number(d) if isinstance(d, int) else formula(d)

    binding = ", ".join(f"{k}={v}" for k, v in report.binding.items())
    out = [f"cost: {report.model}  ({len(report.nodes)} nodes; "
           + (f"at {binding})" if binding else f"symbols: {', '.join(report.symbols) or 'none'})"), ""]
    by_op = report.by_op()
    total_macs, total_flops = at(report.macs), at(report.flops)
    rows = []
    for op, v in sorted(by_op.items(), key=lambda kv: (-at(kv[1]["macs"]), -at(kv[1]["flops"]), kv[0])):
        if not at(v["macs"]) and not at(v["flops"]):
            continue
        share = at(v["macs"]) / total_macs if total_macs else (at(v["flops"]) / total_flops if total_flops else 0)
        rows.append((op, shown(v["macs"]), shown(v["flops"]), v["count"], f"{100 * share:.1f}%"))
    where = "" if bound else f" (shares with every symbol at {next(iter(rank_at.values()), 128)})" if rank_at else ""
    out.append(f"by op{where}")
    out.extend(_table(rows, ("op", "MACs", "FLOPs", "count", "of MACs"), width) if rows else ["  (nothing counted)"])
    out.append("")
    ranked = sorted((n for n in report.nodes if at(n.macs) or at(n.flops)), key=lambda n: (-at(n.macs), -at(n.flops)))
    out.append(f"top {min(top, len(ranked))} nodes by MACs")
    out.extend(_table([(n.name, n.op, shown(n.macs), shown(n.flops)) for n in ranked[:top]],
                      ("node", "op", "MACs", "FLOPs"), width, first=0) if ranked else ["  (none)"])
    out.append("")
    def count(d) -> str:
        if isinstance(d, int):
            return f"{d:,} ({short_number(d)})"
        return "? (a shape it needs is not known)" if d is None else formula(d)

    def size(d, **kw) -> str:
        if isinstance(d, int):
            return human_bytes(d)
        return "? (a shape it needs is not known)" if d is None else formula(d, **kw) + " bytes"

    out.append("totals" if bound else "formulas (the value where no dim is 0; --json has the exact form)")
    missing = f"  (not counting {_nodes(len(report.not_counted))}: see below)" if report.not_counted else ""
    out.append(f"  MACs   = {count(report.macs)}{missing}")
    out.append(f"  FLOPs  = {count(report.flops)}{missing}")
    out.append(f"  params = {report.params:,} ({human_bytes(report.param_bytes)})")
    out.append(f"  activations: every tensor = {size(report.activation_bytes)}")
    out.append(f"  activation peak{' (upper bound)' if report.peak_is_bound else ''} = "
               f"{size(report.activation_peak_bytes, max_args=3, rank=at)}")
    if report.unknown_symbols:
        out.append("")
        for s, origin in report.unknown_symbols.items():
            out.append(f"unknown: {s} is a size known only at run time ({origin})")
    for why, ops in report.not_counted_groups():
        listed = ", ".join(f"{op} x{k}" for op, k in ops.items())
        out.append(f"not counted: {_nodes(sum(ops.values()))} ({listed}): {why}")
    for note in report.notes:
        out.append(f"note: {note}")
    return finish_lines(out, width)


def _nodes(k: int) -> str:
    return f"{k} node{'s' if k != 1 else ''}"
