"""The result of inference: every tensor's facts, the diagnostics and the minted symbols, with
the views the CLI and the checker read (classification, declared dims, a JSON dict)."""

from __future__ import annotations

from typing import Optional

import numpy as np
from onnx import ModelProto, TensorProto

from ..modelio.text import as_text
from ..symbolic import Dim, Expr, free_symbols, plain, to_str, zero_cases
from .contract import derive
from .engine import Engine
from .facts import Fact, dtype_name
from .run_bounds import run_lows

RESHAPE_LIKE = ("Expand", "Reshape", "Tile")
# The --json layout (README, "JSON output"); raised when a key changes meaning or goes away.
JSON_SCHEMA_VERSION = 1


def _json_dim(d):
    """A dim for JSON: an int as a JSON integer, an expression as its printed text."""
    return d if isinstance(d, int) else to_str(d)


class InferenceResult:
    """What inference found: every tensor's facts, the diagnostics and the minted symbols."""

    def __init__(self, model: ModelProto, engine: Engine):
        self.model = model
        self.facts: dict = engine.facts
        self.diagnostics: list = engine.diagnostics
        self.minted: dict = dict(engine.symbols.minted)
        self.saw_if: bool = engine.saw_if  # an If was inferred (in the graph, a body or a function)
        # main-graph nodes holding code that fails if it runs, where onnxruntime does not see it
        # at load (unreached.py): what they read is left as unknown to it as it is
        self.guarded: list = list(engine.guarded)
        self._unknown_dims: dict = {}  # dim -> is_unknown_dim(dim)
        self._contract = None
        self._run_lows: Optional[dict] = None
        self._produced: list = engine.produced
        # inputs whose shapes come from the caller's input_shapes: given, or sharing a given dim
        self.fixed_inputs: set = set(engine.input_shapes) | set(engine.propagated)
        self.assumptions: list = (
            ["no tensor is empty: every dim of every tensor is at least 1 (--assume-nonempty)"] if engine.assume_nonempty else []
        )

    def contract(self):
        """The input contract (infer/contract.py): the conditions on the inputs' named dims under
        which the model runs. Derived when first asked."""
        if self._contract is None:
            self._contract = derive(self)
        return self._contract

    def run_lows(self) -> dict:
        """{symbol: (bound, why)}: the lower bounds on the input dims every run of the model that
        succeeds meets, proven (infer/run_bounds.py): the part of the contract optimize relies on."""
        if self._run_lows is None:
            self._run_lows = run_lows(self.model, self)
        return self._run_lows

    def fact(self, name: str) -> Optional[Fact]:
        return self.facts.get(name)

    def shape(self, name: str) -> Optional[tuple]:
        """The dims of tensor ``name`` (ints and Exprs), or None when its rank is unknown."""
        f = self.facts.get(name)
        return None if f is None else f.shape

    def value_strs(self, name: str, limit: int = 16) -> Optional[list]:
        """The value of a small 1-D integer tensor inference knows (a shape being computed:
        [0, 0, 12, 64], [batch, seq*4]), each element an int or its printed expression; else None."""
        f = self.facts.get(name)
        if f is None or f.value is None or f.shape is None or len(f.shape) != 1:
            return None
        if f.dtype not in (TensorProto.INT64, TensorProto.INT32) or f.shape[0] != len(f.value.reshape(-1)):
            return None
        elems = f.known_elements()
        if elems is None or len(elems) > limit or not all(
                isinstance(e, (int, np.integer, Expr)) and not isinstance(e, bool) for e in elems):
            return None
        return [_json_dim(int(e) if isinstance(e, np.integer) else e) for e in elems]

    def shape_strs(self, name: str) -> Optional[list]:
        s = self.shape(name)
        return None if s is None else [to_str(d) for d in s]

    def classify(self, name: str) -> str:
        """'static' (all ints), 'symbolic' (expressions over known symbols) or 'unknown'."""
        s = self.shape(name)
        if s is None:
            return "unknown"
        if all(isinstance(d, int) for d in s):
            return "static"
        if any(self.is_unknown_dim(d) for d in s):
            return "unknown"
        return "symbolic"

    def is_unknown_dim(self, d: Dim) -> bool:
        """True when d involves a symbol minted for a dim that no rule could express."""
        if type(d) is int or not self.minted:
            return False
        known = self._unknown_dims.get(d)
        if known is None:
            known = self._unknown_dims[d] = any(s in self.minted for s in free_symbols(d))
        return known

    def declared_shapes(self):
        """(value_info, fact) for each graph output and value_info entry of the main graph that
        declares a tensor shape where inference knows the rank: what declarations are compared
        with (here and by the checker)."""
        g = self.model.graph
        for vi in list(g.output) + list(g.value_info):
            fact = self.facts.get(vi.name)
            if fact is None or fact.shape is None or not vi.type.HasField("tensor_type"):
                continue
            if vi.type.tensor_type.HasField("shape"):
                yield vi, fact

    def declared_dims(self) -> list:
        """How the dims declared on graph outputs and value_info compare with inference.

        One entry per declared dim that says something inference also knows: ``same`` (equal),
        ``equal`` (a declared name for a dim inference expresses otherwise: ``seq_plus_1`` is
        ``seq+1``), or ``conflict`` (a declared size inference proves different)."""
        from .protos import declared_size, written_by_shapeinfer
        from .symbols import dim_from_param, parse_dim_param

        read = parse_dim_param if written_by_shapeinfer(self.model) else dim_from_param
        out = []
        for vi, fact in self.declared_shapes():
            dims = vi.type.tensor_type.shape.dim
            if len(dims) != len(fact.shape):
                continue
            for axis, (d, ours) in enumerate(zip(dims, fact.shape)):
                size = declared_size(d)
                if self.is_unknown_dim(ours) or not (d.dim_param or size is not None):
                    continue
                declared = d.dim_param or str(size)
                theirs = size if size is not None else read(d.dim_param)
                if str(theirs) == str(ours):
                    kind = "same"
                elif isinstance(theirs, int) and isinstance(ours, int):
                    kind = "conflict"
                else:
                    kind = "equal"
                out.append({"tensor": vi.name, "axis": axis, "declared": declared, "inferred": to_str(ours), "kind": kind})
        return out

    def input_symbols(self) -> set:
        """The symbols the graph inputs' dims are made of."""
        init = {t.name for t in self.model.graph.initializer}
        out: set = set()
        for i in self.model.graph.input:
            f = self.facts.get(i.name)
            if i.name not in init and f is not None and f.shape is not None:
                for d in f.shape:
                    out |= free_symbols(d)
        return out

    def symbols(self) -> list:
        """The symbols in use in the main graph's shapes (minted ones included), sorted."""
        out: set = set()
        for f in self.facts.values():
            if f is not None and f.shape is not None:
                for d in f.shape:
                    out |= free_symbols(d)
        return sorted(out)

    def reshape_like_nodes(self) -> list:
        """The Expand/Reshape/Tile nodes of the main graph, in graph order."""
        return [n for n in self.model.graph.node if n.op_type in RESHAPE_LIKE and n.domain in ("", "ai.onnx")]

    def to_dict(self, all_tensors: bool = False) -> dict:
        g = self.model.graph

        def tensor(name):
            f = self.facts.get(name)
            shape = self.shape(name)
            out = {
                "name": name,
                "dtype": dtype_name(f.dtype) if f is not None and f.dtype else None,
                "shape": None if shape is None else [_json_dim(d) for d in shape],
                "kind": self.classify(name),
            }
            value = self.value_strs(name)
            if value is not None:
                out["value"] = value
            cases = sorted({to_str(m) for d in shape for m in zero_cases(d)}) if shape is not None else []
            if cases:  # the exact shape above; the plain one holds where no case is 0
                out["plain_shape"] = [_json_dim(plain(d)) for d in shape]
                out["zero_cases"] = [f"{c} = 0" for c in cases]
            return out

        init = {t.name for t in g.initializer}
        out = {
            "schema_version": JSON_SCHEMA_VERSION,
            "inputs": [tensor(i.name) for i in g.input if i.name not in init],
            "outputs": [tensor(o.name) for o in g.output],
            "nodes": [
                {
                    "name": as_text(n.name),
                    "op_type": n.op_type,
                    "inputs": [tensor(i) if i else None for i in n.input],
                    "outputs": [tensor(o) for o in n.output if o],
                }
                for n in self.reshape_like_nodes()
            ],
            "summary": self.summary(),
            "assumptions": list(self.assumptions),
            "declared_dims": [d for d in self.declared_dims() if d["kind"] != "same"],
            "contract": self.contract().as_dict(),
            "diagnostics": [d.as_dict() for d in self.diagnostics],
        }
        if all_tensors:
            out["tensors"] = [tensor(name) for name in self.tensor_names()]
        return out

    def tensor_names(self) -> list:
        """Every tensor of the main graph that a node produces, in the order inferred."""
        return list(self._produced)

    def summary(self) -> dict:
        counts = {"static": 0, "symbolic": 0, "unknown": 0}
        for name in self.tensor_names():
            counts[self.classify(name)] += 1
        symbols = self.symbols()
        return {
            **counts,
            "symbols": [s for s in symbols if s not in self.minted],
            "minted_symbols": [s for s in symbols if s in self.minted],
        }
