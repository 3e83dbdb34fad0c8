"""Greedy shrinking of a failing model: fewer outputs, fewer nodes, fewer everything else, as long
as the same class of failure remains. Each candidate is judged in a forked child, like the run.
"""

from __future__ import annotations

import time

import onnx

from .runner import Failure, Judge

SHAPE_CLASSES = ("wrong-dim", "wrong-rank", "unevaluable-dim", "wrong-value")


def _uses(model) -> dict:
    uses: dict = {}
    for k, n in enumerate(model.graph.node):
        for i in list(n.input) + sorted(_outer(n)):
            uses.setdefault(i, []).append(k)
    return uses


def _outer(node) -> set:
    out = set()
    for a in node.attribute:
        for g in ([a.g] if a.type == a.GRAPH else list(a.graphs)):
            for n in g.node:
                out.update(n.input)
                out |= _outer(n)
    return out


def dce(model) -> onnx.ModelProto:
    """Drop nodes nothing reads, unused initializers, functions and value_info."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    live = {o.name for o in g.output}
    keep = []
    for n in reversed(list(g.node)):
        if any(o in live for o in n.output):
            keep.append(n)
            live.update(n.input)
            live |= _outer(n)
    keep.reverse()
    del g.node[:]
    g.node.extend(keep)
    inits = [t for t in g.initializer if t.name in live]
    del g.initializer[:]
    g.initializer.extend(inits)
    vis = [v for v in g.value_info if v.name in live]
    del g.value_info[:]
    g.value_info.extend(vis)
    used_fns = set()
    stack = list(g.node)
    fns = {(f.domain, f.name): f for f in m.functions}
    while stack:
        n = stack.pop()
        key = (n.domain, n.op_type)
        if key in fns and key not in used_fns:
            used_fns.add(key)
            stack.extend(fns[key].node)
    kept = [f for f in m.functions if (f.domain, f.name) in used_fns]
    del m.functions[:]
    m.functions.extend(kept)
    return m


def _drop_unused_inputs(model, init_names_fed) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    used = set()
    for n in m.graph.node:
        used.update(n.input)
        used |= _outer(n)
    used |= {o.name for o in m.graph.output}
    ins = [i for i in m.graph.input if i.name in used]
    del m.graph.input[:]
    m.graph.input.extend(ins)
    return m


def _types(model, known=None) -> dict:
    """Element types of the main graph's tensors: the generator's (``known``) and the declared
    ones. (Not onnx's shape inference: its C++ aborts the process on some of these models.)"""
    out = dict(known or {})
    for vi in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            out[vi.name] = vi.type.tensor_type.elem_type
    for t in model.graph.initializer:
        out[t.name] = t.data_type
    return out


def _bypass(model, k, types) -> list:
    """Candidates without node k: its first output replaced by one of its inputs of the same type."""
    node = model.graph.node[k]
    if not node.output:
        return []
    outs = [o for o in node.output if o]
    cands = []
    for src in [i for i in node.input if i]:
        if all(types.get(o) and types.get(o) == types.get(src) for o in outs[:1]):
            m = onnx.ModelProto()
            m.CopyFrom(model)
            del m.graph.node[k]
            for n in m.graph.node:
                for j, i in enumerate(n.input):
                    if i == outs[0]:
                        n.input[j] = src
            for o in m.graph.output:
                if o.name == outs[0]:
                    o.name = src
            cands.append(m)
            break
    return cands


def shrink_failure(f: Failure, bindings=None, feeds=None, symbols=None, budget=60.0, judge_fn=None):
    """The smallest model found (bytes) that still fails with f's class, or None."""
    from .gen import generate
    from .harness import isolated

    if f.seed is None:
        return None
    case = generate(f.seed)
    bindings, feeds, symbols = case.bindings, case.feeds, case.symbols
    known_types = {name: v.dtype for name, v in case.vals.items()}
    if f.binding is not None:  # only the binding that failed
        keep = [b for b in range(len(bindings)) if {k: v for k, v in bindings[b].items() if not k.startswith("#")} == f.binding]
        feeds = [fd if b in keep else None for b, fd in enumerate(feeds)]
    variants = [] if f.cls in SHAPE_CLASSES else None  # None: the judge's own choice for the seed
    if f.variant:
        import ast

        kw = {}
        if f.variant.startswith("skip:"):
            kw = {"skip": f.variant[5:].split(",")}
        elif f.variant.startswith("only:"):
            kw = {"passes": f.variant[5:].split(",")}
        elif f.variant == "assume_nonempty":
            kw = {"assume_nonempty": True}
        elif f.variant.startswith("optimize"):
            kw = {}
        del ast
        variants = [(f.variant, kw)]
    t0 = time.monotonic()

    def fails(m) -> bool:
        if time.monotonic() - t0 > budget:
            return False
        fd = [None if x is None else {k: v for k, v in x.items() if k in {i.name for i in m.graph.input}} for x in feeds]
        out = isolated(_judge, (m.SerializeToString(), symbols, bindings, fd, f.seed, variants), seconds=60)
        if f.cls in SHAPE_CLASSES:
            return any(g.cls == f.cls for g in out.failures)
        from .harness import _signature

        return any(g.cls == f.cls and _signature(g) == _signature(f) for g in out.failures)

    model = onnx.ModelProto()
    model.ParseFromString(f.model)
    if not fails(model):
        return None
    # 1. the failing tensor as the only output
    if f.tensor and f.cls in SHAPE_CLASSES + ("optimized-differs",):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        del m.graph.output[:]
        m.graph.output.append(onnx.helper.make_empty_tensor_value_info(f.tensor))
        vi = next((v for v in model.graph.output if v.name == f.tensor), None)
        if vi is not None:
            m.graph.output[0].CopyFrom(vi)
        m = dce(m)
        if fails(m):
            model = m
    # 2. fewer outputs
    k = 0
    while k < len(model.graph.output) and len(model.graph.output) > 1:
        m = onnx.ModelProto()
        m.CopyFrom(model)
        del m.graph.output[k]
        m = dce(m)
        if fails(m):
            model = m
        else:
            k += 1
    # 3. fewer nodes: bypass each node (from the last)
    changed = True
    while changed and time.monotonic() - t0 < budget:
        changed = False
        types = _types(model, known_types)
        for k in reversed(range(len(model.graph.node))):
            if k >= len(model.graph.node):
                continue
            for cand in _bypass(model, k, types):
                cand = dce(cand)
                if fails(cand):
                    model = cand
                    changed = True
                    types = _types(model, known_types)
                    break
    # 4. unused inputs, value_info, metadata
    for simplify in (lambda m: _drop_unused_inputs(m, ()), _strip_meta):
        m = simplify(model)
        if fails(m):
            model = m
    return model.SerializeToString()


def _strip_meta(model):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    m.doc_string = ""
    m.graph.doc_string = ""
    del m.metadata_props[:]
    del m.graph.value_info[:]
    return m


def _judge(blob, symbols, bindings, feeds, seed, variants, progress=None):
    m = onnx.ModelProto()
    m.ParseFromString(blob)
    return Judge(m, symbols, bindings, feeds, seed=seed, variants=variants, progress=progress).run()
