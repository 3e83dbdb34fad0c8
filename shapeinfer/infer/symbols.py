"""The symbols of one inference run: the names the model and the user declare, and the fresh
ones minted for dims that nothing can express.

A ``dim_param`` is read as ONNX means it, an opaque name whatever characters it holds -- except
in a model shapeinfer wrote (it marks them, see protos.written_by_shapeinfer), whose declared
dims are expressions in the printed syntax, and in what a user types (``--input-shape``). Minted
names are short and readable (``reshape_7``), deterministic for a model, and never a name the
model uses. The Engine holds one :class:`SymbolTable`; rules reach it through their context.
"""

from __future__ import annotations

import re
from typing import Callable

from ..errors import ModelLoadError
from ..symbolic import Dim, ParseError, free_symbols, parse, sym
from .protos import nested_tensor_types, written_by_shapeinfer

_NON_NAME = re.compile(r"[^A-Za-z0-9_]")


def _text(text) -> str:
    if type(text) is not str:  # protobuf's bytes for invalid UTF-8
        raise ModelLoadError(f"the dim {text!r} is not valid UTF-8; the file is corrupt")
    return text


def dim_from_param(text: str, symbol: Callable[[str], Dim] = sym) -> Dim:
    """A dim_param as ONNX means it: an opaque name, whatever characters it holds ("3",
    "a*b" and "batch+1" are names, not expressions)."""
    return symbol(_text(text))


def parse_dim_param(text: str, symbol: Callable[[str], Dim] = sym) -> Dim:
    """A dim_param read as an expression in the printed syntax (else an opaque name). Only for
    text shapeinfer wrote or a user typed: see protos.written_by_shapeinfer."""
    try:
        return parse(_text(text), symbol)
    except ParseError:
        return symbol(text)


class SymbolTable:
    """Every symbol of one run, one dim object per name, and the symbols minted in it.

    ``minted`` maps each minted name to where it came from (an input's unnamed dim, an op's
    output): a dim over one of them is one that no rule could express."""

    def __init__(self, model):
        self.minted: dict = {}
        self._minted_order: dict = {}  # minted name -> its place in the minting order
        self._counter = 0
        self._taken = _names_in_use(model.graph)  # names a minted one must not take
        self._dims: dict = {}  # name -> its symbol
        self._params: dict = {}  # dim_param text -> its dim
        self._positive: set = set()  # names of symbols that are at least 1
        self._marked = written_by_shapeinfer(model)

    def assume_positive(self, names) -> None:
        """Take the symbols so named to be at least 1 (assume_nonempty: the graph inputs' dims).
        Before any of them is used: a symbol's lower bound is part of its identity."""
        self._positive.update(names)

    def symbol(self, name: str) -> Dim:
        """The model's symbol called ``name`` (one object per name for the whole run)."""
        d = self._dims.get(name)
        if d is None:
            d = sym(name, 1 if name in self._positive else 0)
            self._dims[name] = d
        return d

    def param(self, text: str) -> Dim:
        """A dim_param as a dim, with this model's symbols: an opaque name, as ONNX means it."""
        d = self._params.get(text)
        if d is None:
            name = _text(text)
            if name in self.minted:  # a name declared in a subgraph, equal to one made up before: another dim
                while name in self.minted or name in self._taken or name in self._dims:
                    name += "~"
            d = self.symbol(name)
            self._params[text] = d
        return d

    def claim(self, text: str) -> Dim:
        """A dim declared on an output or value_info, as its writer meant it: an expression in
        the printed syntax if shapeinfer wrote the model (it marks them), else an opaque name.
        Either way a claim to compare with inference, never a fact."""
        return parse_dim_param(text, self.symbol) if self._marked else self.param(text)

    def given(self, text: str) -> Dim:
        """A dim a user typed (--input-shape): an int, a name or an expression."""
        return parse_dim_param(text, self.symbol)

    def mint(self, hint: str = "u", origin: str = "", positive: bool = False) -> Dim:
        """A new symbol for a dim nothing can express; deterministic per model."""
        base = _NON_NAME.sub("_", hint)[:12] or "u"
        if base[0].isdigit():
            base = "u" + base
        while True:
            self._counter += 1
            name = f"{base}_{self._counter}"
            if name not in self._taken and name not in self._dims:  # (a subgraph's declared name read before)
                break
        self._taken.add(name)
        self.minted[name] = origin or hint
        self._minted_order[name] = self._counter
        if positive:
            self._positive.add(name)
        return self.symbol(name)

    def mint_mark(self) -> int:
        """A mark such that symbols minted after it have minted_index() >= mark."""
        return self._counter + 1

    def minted_index(self, name: str) -> int:
        """The order in which a minted symbol was made (-1 for symbols not minted here)."""
        return self._minted_order.get(name, -1)


def _names_in_use(graph) -> set:
    """The dim_params of the main graph's declared types, the tensors inside sequences,
    optionals and maps included (a minted name equal to one would be read as the same dim)."""
    out: set = set()
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        t = vi.type
        if t.HasField("tensor_type"):  # (the common case, first)
            for d in t.tensor_type.shape.dim:
                if d.dim_param:
                    out.add(d.dim_param)
            continue
        for tt in nested_tensor_types(t):
            out.update(d.dim_param for d in tt.shape.dim if d.dim_param)
    return out


def input_symbol_names(graph, init_names: set, input_shapes: dict) -> set:
    """Names of the symbols in the graph inputs' dims (declared or overridden)."""
    names: set = set()
    for vi in graph.input:
        if vi.name in init_names:
            continue
        if vi.name in input_shapes:
            for d in input_shapes[vi.name]:
                if not isinstance(d, int):
                    try:  # typed by a user: may be an expression
                        names.update(free_symbols(parse(str(d))))
                    except ParseError:
                        names.add(str(d))
            continue
        if vi.type.HasField("tensor_type"):
            for d in vi.type.tensor_type.shape.dim:
                if d.dim_param:
                    names.add(d.dim_param)  # an opaque name
    return names
