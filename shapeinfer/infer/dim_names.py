"""Identifier-only dim names (``--dim-names identifiers``), for consumers that take a dim_param to
be a C identifier: every dim_param written as an expression (``batch*seq``, ``(height+4)//8``)
becomes a stable identifier (``batch_x_seq``, ``height_plus_4_floordiv_8``), the same expression
the same name everywhere, and the mapping goes into ``metadata_props``.

A model renamed so no longer says its dims use the printed syntax: read back, its dim_params are
opaque names, as any other model's (the mapping is for people and tools that want it)."""

from __future__ import annotations

import hashlib
import json
import re

from ..symbolic.printing import quote_name
from .protos import DIM_SYNTAX_KEY, nested_tensor_types, value_infos

DIM_NAMES_KEY = "shapeinfer.dim_names"  # metadata_props: JSON {identifier: expression}
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_NAME = 40  # longer readable names give way to dim_<hash>
_WORDS = (("//", "floordiv"), ("*", "x"), ("+", "plus"), ("-", "minus"), ("/", "div"), ("%", "mod"), ("^", "pow"))
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|//|[*+\-/%^]")


def _readable(expr: str) -> str:
    words = []
    for tok in _TOKEN.findall(expr):
        words.append(dict(_WORDS).get(tok, tok))
    name = "_".join(words)
    return name if name and not name[0].isdigit() else "d_" + name


def _hashed(expr: str) -> str:
    return "dim_" + hashlib.sha256(expr.encode("utf-8")).hexdigest()[:10]


def _dims(vi):
    for tt in nested_tensor_types(vi.type):
        if tt.HasField("shape"):
            yield from tt.shape.dim


def identifier_dim_names(model) -> dict:
    """Rename, in place, every dim_param of ``model`` that is not an identifier; return the
    mapping {identifier: expression} (also stored in metadata_props under DIM_NAMES_KEY).

    The main graph's inputs name their dims opaquely (``2*seq`` there is one name, which the
    printed syntax elsewhere writes quoted, ``'2*seq'``): such a name is read in its printed
    form, so that the input and every dim made of it get one identifier, and the mapping's
    expressions all read in the printed syntax."""
    dims = []  # (dim proto, the expression it stands for in the printed syntax)
    main_inputs = len(model.graph.input)
    for k, vi in enumerate(value_infos(model.graph)):
        opaque = k < main_inputs  # (value_infos yields the main graph's inputs first)
        for d in _dims(vi):
            if d.HasField("dim_param"):
                dims.append((d, quote_name(d.dim_param) if opaque else d.dim_param))
    taken = {expr for _, expr in dims if IDENTIFIER.match(expr)}
    names: dict = {}  # expression -> identifier
    for expr in sorted({expr for _, expr in dims if not IDENTIFIER.match(expr)}):
        name = _readable(expr)
        if len(name) > MAX_NAME or not IDENTIFIER.match(name) or name in taken:
            name = _hashed(expr)
        taken.add(name)
        names[expr] = name
    for d, expr in dims:
        if expr in names:
            d.dim_param = names[expr]
    mapping = {v: k for k, v in names.items()}
    for key in (DIM_NAMES_KEY, DIM_SYNTAX_KEY):  # the dims no longer use the printed syntax
        for k in reversed(range(len(model.metadata_props))):
            if model.metadata_props[k].key == key:
                del model.metadata_props[k]
    if mapping:
        entry = model.metadata_props.add()
        entry.key, entry.value = DIM_NAMES_KEY, json.dumps(dict(sorted(mapping.items())))
    return mapping
