"""Failures are explicit: no handler in shapeinfer/ or cli/ turns a bug into an unknown dim, a
"not folded" or an exit code -- but the boundaries, each named here with why it may catch
anything:

- check's per-model ``internal-error`` finding (a CI run over many models still reports the
  others) and the CLI's exit 3 (one line, ``--debug`` for the traceback); both re-raise in raise
  mode (SHAPEINFER_RAISE=1, which every test runs in: tests/conftest.py);
- the calls into a runtime -- onnxruntime and onnx.reference for ``--verify``, onnx.reference
  for folding under ``fold_float_math`` -- whose failures are results (their exceptions have no
  common base, and no code of shapeinfer's runs inside them).

Everything else catches exactly what it expects: ``CannotDecide`` (a rule or kernel that does
not decide on purpose, with its reason), a library's documented errors (protobuf's DecodeError,
onnx's SchemaError, a KeyError for a type number onnx does not map), OSError.
"""

from __future__ import annotations

import ast
import os

import onnx
import pytest

import shapeinfer
from shapeinfer_cli.main import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The handlers allowed to catch anything: (file, function) -> why.
BOUNDARIES = {
    ("shapeinfer/checker/run.py", "check"): "one model's bug is that model's internal-error finding",
    ("cli/main.py", "main"): "an internal error is one line and exit 3",
    ("shapeinfer/optimizer/verify.py", "_runtime"): "a runtime refusing or failing a model is a result",
    ("shapeinfer/fold/folder.py", "reference_run"): "onnx.reference failing on a node leaves it unfolded",
}
# What only a bug raises, or that catches what a bug raises.
BROAD = {"Exception", "BaseException", "AttributeError", "TypeError", "NameError", "UnboundLocalError",
         "ODD_INPUT_ERRORS"}


def _names(node) -> set:
    if node is None:
        return {"<bare>"}
    if isinstance(node, ast.Tuple):
        return set().union(*(_names(e) for e in node.elts))
    if isinstance(node, ast.Starred):
        return _names(node.value)
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.Name):
        return {node.id}
    return {ast.dump(node)}


def _reraises(handler: ast.ExceptHandler) -> bool:
    """The handler ends by raising the exception again (a clean-up that swallows nothing)."""
    last = handler.body[-1]
    return isinstance(last, ast.Raise) and last.exc is None


def _swallowing_handlers() -> dict:
    """(file, function) -> [line] of every handler that catches what a bug raises and does not
    raise it again."""
    found: dict = {}
    for top in ("shapeinfer", "cli"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if not f.endswith(".py"):
                    continue
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, ROOT)
                tree = ast.parse(open(path, encoding="utf-8").read())
                for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))] + [tree]:
                    name = getattr(fn, "name", "<module>")
                    for node in ast.walk(fn):
                        if isinstance(node, ast.ExceptHandler) and (_names(node.type) & (BROAD | {"<bare>"})) \
                                and not _reraises(node):
                            found.setdefault((rel, name), set()).add(node.lineno)
    # (a handler is found once per enclosing function: keep the innermost)
    inner: dict = {}
    for key, lines in found.items():
        for line in lines:
            owners = [k for k, ls in found.items() if line in ls and k[0] == key[0]]
            inner.setdefault(min(owners, key=lambda k: (k[1] == "<module>", -len(found[k]))), set()).add(line)
    return inner


def test_no_handler_swallows_a_bug_outside_the_boundaries():
    found = _swallowing_handlers()
    assert set(found) == set(BOUNDARIES), {k: sorted(v) for k, v in found.items() if k not in BOUNDARIES}
    assert all(len(lines) == 1 for lines in found.values()), found


def test_the_default_test_run_is_in_raise_mode():
    from shapeinfer.errors import raise_mode

    assert raise_mode()


def _model():
    return onnx.parser.parse_model('<ir_version: 8, opset_import: ["" : 17]>\n'
                                   'g (float[N,4] x) => (float[N,4] y) { y = Neg(x) }')


def _broken_rule(monkeypatch):
    """Inference of Neg raises a bug's exception."""
    from shapeinfer.infer import engine, registry

    original = registry.lookup
    monkeypatch.setattr(engine, "lookup", lambda d, op, v: (lambda ctx: [][1]) if op == "Neg" else original(d, op, v))


def test_a_bug_in_a_rule_reaches_the_caller(monkeypatch):
    _broken_rule(monkeypatch)
    with pytest.raises(IndexError):
        shapeinfer.infer(_model())


@pytest.mark.parametrize("raising", [True, False])
def test_the_cli_boundary_is_exit_3_and_raises_in_raise_mode_or_with_debug(monkeypatch, tmp_path, capsys, raising):
    path = str(tmp_path / "m.onnx")
    onnx.save(_model(), path)
    _broken_rule(monkeypatch)
    monkeypatch.setenv("SHAPEINFER_RAISE", "1" if raising else "0")
    if raising:
        with pytest.raises(IndexError):
            main([path])
        return
    assert main([path]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (IndexError" in err and "--debug" in err
    with pytest.raises(IndexError):
        main([path, "--debug"])
    assert shapeinfer.check(path).findings[0].code == "internal-error"
