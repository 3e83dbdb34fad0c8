"""Rewrites of control flow.

- ``inline-if``: an If whose condition is known -- a constant, or a value inference knows -- is
  replaced by the nodes of the branch it takes; its outputs become the branch's outputs. The If
  computes exactly that branch, so this is bit-exact. It also drops the branch never taken,
  which onnxruntime would still check when it loads the model: once folding has made the
  tensors it reads constants, onnxruntime's inference may refuse that branch (a Squeeze of a dim
  that is not 1 in the 2-D branch of AffineGrid's function, for a 3-D input).

A name the branch makes that the model uses elsewhere (in the main graph or in another
subgraph: onnxruntime wants every name made once) is renamed, and so is a moved node whose name
a node of the graph it joins has (onnxruntime refuses two nodes of one name in a graph; nodes of
different graphs may share one); a graph output that the branch returns from outside it (an
outer tensor, a constant) or that another output returns too is made by an Identity, so that it
keeps its name.

An If whose outputs a branch onnxruntime checks at load reads (directly or further on) is left
as it is (graph_ops.branch_guard): inlined, it would show onnxruntime the taken branch's shapes.
"""

from __future__ import annotations

from ..adapter import Constant, Graph, Node, Variable, own_proto, replace_uses
from .base import NO_MATCH, Decline, Match, PassResult, RewritePass, register
from .graph_ops import claim_node_names, known_condition, remove_node


def _rename(t, name: str) -> None:
    """Give tensor t another name (a constant reading the caller's TensorProto, in a copy)."""
    own_proto(t)
    t.name = name


def _outer_tensors(scopes: list, node) -> dict:
    """name -> tensor for the tensors node's branches may read from the graphs around them
    (``scopes``), and those its branches' nodes read without making them (onnx-graphsurgeon
    shares those)."""
    found: dict = {}
    for g in scopes:
        found.update(g.tensors())
    for v in node.attrs.values():
        if isinstance(v, Graph):
            mine = {t.name for n in v.nodes for t in n.outputs}
            for n in v.nodes:
                for t in n.inputs:
                    if t.name and t.name not in mine:
                        found.setdefault(t.name, t)
    return found


def _plan(ctx, node, scopes: list):
    """The Match for inlining If ``node`` of the graph scopes[-1], or why it is kept."""
    if not node.outputs or not node.inputs:
        return NO_MATCH
    taken = known_condition(ctx, node, main=len(scopes) == 1)
    if taken is None:
        return NO_MATCH
    branch = node.attrs.get("then_branch" if taken else "else_branch")
    if not isinstance(branch, Graph) or len(branch.outputs) != len(node.outputs) or branch.inputs:
        return Decline("kept: its branch does not match its outputs")
    # A branch output that the branch does not make is a tensor of the graph around it, which
    # onnx-graphsurgeon imports as a tensor of its own: the graph's tensor of that name.
    made = {id(t) for n in branch.nodes for t in n.outputs}
    outer = None
    returns = []
    for ret in branch.outputs:
        if id(ret) not in made and not isinstance(ret, Constant):
            if outer is None:
                outer = _outer_tensors(scopes, node)
            ret = outer.get(ret.name)
            if ret is None:
                return Decline("kept: its branch returns a tensor the graph does not make")
        returns.append(ret)
    return Match(branch=branch, taken=taken, returns=returns, scopes=scopes)


def _inline(ctx, node, match, keep: set) -> str:
    """Replace If ``node`` of the graph match.scopes[-1] by the nodes of its taken branch;
    ``keep``: the names of that graph's outputs (they keep their names)."""
    branch, scopes = match.branch, match.scopes
    graph = scopes[-1]
    outer = {id(t) for g in scopes for t in g.tensors().values()}  # (what the branch may read)
    local = {}  # id -> tensor the branch makes: its nodes' outputs and its own constants
    for n in branch.nodes:
        for t in n.outputs:
            local[id(t)] = t
        for t in n.inputs:
            if isinstance(t, Constant) and id(t) not in outer:
                local[id(t)] = t
    for t in branch.outputs:
        if isinstance(t, Constant) and id(t) not in outer:
            local[id(t)] = t
    for t in local.values():  # (now names of the graph around: each once in the model -- unique_name
        if t.name:             # knows every name of every graph, the branch's own among them)
            _rename(t, ctx.unique_name(t.name))
    moved = list(branch.nodes)
    named = set()  # branch tensors that took an output's name
    for out, ret in zip(list(node.outputs), match.returns):
        target = ret
        if out.name in keep:
            if id(ret) in local and id(ret) not in named and ret.name not in keep:
                named.add(id(ret))
                _rename(ret, out.name)  # the graph output keeps its name
            else:  # returned from outside the branch, or under a second name: an Identity makes it
                target = Variable(out.name, dtype=out.dtype, shape=out.shape)
                moved.append(Node("Identity", inputs=[ret], outputs=[target]))
            graph.outputs = [target if t is out else t for t in graph.outputs]
        replace_uses(graph, out, target)
    remove_node(node)
    claim_node_names(ctx, graph, moved)  # (node names are per graph: the branch's may be taken here)
    nodes = graph.nodes
    at = next(k for k, n in enumerate(nodes) if n is node)
    # (in place: the branch's nodes where the If was, in their order; the If stays behind them in
    # the main graph, without outputs, until dead nodes go -- a body drops it here)
    nodes[at:at + (0 if graph is ctx.graph else 1)] = moved
    return f"the condition is {match.taken}: replaced by its {'then' if match.taken else 'else'} branch ({len(moved)} node(s))"


@register
class InlineIfPass(RewritePass):
    name = "inline-if"
    description = "an If whose condition is known becomes the nodes of the branch it takes"
    ops = ("If",)

    def run(self, ctx) -> PassResult:
        result = PassResult()
        self.rewrite_each(ctx, self.ops, self.check, self.rewrite, result)
        # then the Ifs nested in bodies whose condition is known (a constant, or a main-graph
        # tensor inference knows): onnxruntime checks their branches at load just the same
        stack = [(v, [ctx.graph]) for n in ctx.graph.nodes if n.outputs for v in n.attrs.values()
                 if isinstance(v, Graph)] if ctx.has_subgraphs else []
        while stack:
            body, scopes = stack.pop()
            scopes = scopes + [body]
            for n in list(body.nodes):
                if ctx.op(n) == "If" and id(n) not in ctx.guarded:
                    found = _plan(ctx, n, scopes)
                    if found:
                        result.change(n, _inline(ctx, n, found, {t.name for t in body.outputs}))
                    elif found.reason:
                        result.decline(n, found.reason)
            stack.extend((v, scopes) for n in body.nodes for v in n.attrs.values() if isinstance(v, Graph))
        return result

    def check(self, ctx, node):
        return _plan(ctx, node, [ctx.graph])

    def rewrite(self, ctx, node, match) -> str:
        return _inline(ctx, node, match, ctx.graph_outputs)
