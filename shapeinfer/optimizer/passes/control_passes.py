"""Rewrites of control flow.

- ``inline-if``: an If whose condition is known -- a constant, or a value inference knows -- is
  replaced by the nodes of the branch it takes; its outputs become the branch's outputs. The If
  computes exactly that branch, so this is bit-exact. It also drops the branch never taken,
  which onnxruntime would still check when it loads the model: once folding has made the
  tensors it reads constants, onnxruntime's inference may refuse that branch (a Squeeze of a dim
  that is not 1 in the 2-D branch of AffineGrid's function, for a 3-D input).

Kept: a branch that makes a name the main graph already uses (names are unique per model, but
not every producer keeps them so), and an If whose output is a graph output that the branch
returns from outside it (an outer tensor or a constant keeps its own name).
"""

from __future__ import annotations

import numpy as np
import onnx_graphsurgeon as gs

from .base import NO_MATCH, Decline, Match, RewritePass, register
from .graph_ops import constant_input, remove_node, replace_uses


def _known_condition(ctx, node):
    """The If's condition as a bool, when it is known (one element), else None."""
    arr = constant_input(node, 0)
    if arr is None:
        fact = ctx.facts.fact(node.inputs[0].name) if node.inputs and node.inputs[0].name else None
        arr = None if fact is None else fact.value
    if arr is None or arr.size != 1:
        return None
    e = arr.reshape(-1)[0]
    if isinstance(e, (bool, np.bool_)) or isinstance(e, (int, np.integer)) and not isinstance(e, bool):
        return bool(e)
    return None


@register
class InlineIfPass(RewritePass):
    name = "inline-if"
    description = "an If whose condition is known becomes the nodes of the branch it takes"
    ops = ("If",)

    def check(self, ctx, node):
        if not node.outputs or not node.inputs:
            return NO_MATCH
        taken = _known_condition(ctx, node)
        if taken is None:
            return NO_MATCH
        branch = node.attrs.get("then_branch" if taken else "else_branch")
        if not isinstance(branch, gs.Graph) or len(branch.outputs) != len(node.outputs) or branch.inputs:
            return Decline("kept: its branch does not match its outputs")
        made = {t.name for n in branch.nodes for t in n.outputs if t.name}
        made.update(t.name for n in branch.nodes for t in n.inputs
                    if isinstance(t, gs.Constant) and t.name and not t.inputs)  # (the branch's initializers)
        made -= {t.name for t in node.inputs}
        outer = {t.name for t in node.outputs}
        if ctx._names is None:
            ctx._names = set(ctx.graph.tensors())
        clash = sorted(n for n in made if n in ctx._names and n not in outer)
        if clash:
            return Decline(f"kept: its branch makes {clash[0]!r}, a name the graph already uses")
        mine = {id(t) for n in branch.nodes for t in n.outputs}
        renamed = set()
        for out, ret in zip(node.outputs, branch.outputs):
            if out.name in ctx.graph_outputs:
                if id(ret) not in mine or id(ret) in renamed or ret.name in ctx.graph_outputs:
                    return Decline("kept: a graph output it makes is a tensor from outside the branch")
                renamed.add(id(ret))
        return Match(branch=branch, taken=taken, made=made)

    def rewrite(self, ctx, node, match) -> str:
        branch = match.branch
        graph = ctx.graph
        nodes = graph.nodes
        at = next(k for k, n in enumerate(nodes) if n is node)
        moved = list(branch.nodes)
        nodes[at:at] = moved  # (in place: the branch's nodes where the If was, in their order)
        ctx._names.update(match.made)
        for out, ret in zip(list(node.outputs), list(branch.outputs)):
            if out.name in ctx.graph_outputs:
                ret.name = out.name  # the graph output keeps its name
                graph.outputs = [ret if t is out else t for t in graph.outputs]
            else:
                replace_uses(graph, out, ret)
        remove_node(node)
        return f"the condition is {match.taken}: replaced by its {'then' if match.taken else 'else'} branch ({len(moved)} node(s))"
