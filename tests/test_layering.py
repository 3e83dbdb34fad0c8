"""The layout is the architecture: each folder of shapeinfer/ imports only from itself and from
the folders below it, and no module imports another module's private (``_``) names.

Bottom to top: errors, semantics, symbolic (the algebra), modelio (model files), graph
(structure), fold (exact kernels), infer (the engine), checker, costs, optimizer, api (the facade).
README's Layout section lists them in this order.

onnx-graphsurgeon is contained: one module, optimizer/adapter.py, imports it (in either form,
at any depth) and touches its internals; the others use the classes it re-exports."""

import ast
import pathlib

import pytest

ORDER = ["errors", "semantics", "symbolic", "modelio", "graph", "fold", "infer", "checker", "costs", "optimizer", "api"]
ROOT = pathlib.Path(__file__).resolve().parent.parent / "shapeinfer"
CLI = pathlib.Path(__file__).resolve().parent.parent / "cli"


def _imports(path: pathlib.Path, package_parts: list):
    """(target module under shapeinfer, imported names) for each `from ... import ...` and each
    `import shapeinfer.x` (no names), wherever it stands (a function's imports too)."""
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("shapeinfer."):
                    yield alias.name[len("shapeinfer."):], []
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package_parts if is_pkg else package_parts[:-1]
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        elif node.module and node.module.startswith("shapeinfer."):
            target = node.module[len("shapeinfer."):]
        else:
            continue
        yield target, [a.name for a in node.names]


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] in ("__init__", "__main__"):  # the package's face (python -m shapeinfer: the CLI)
            parts = parts[:-1]
        yield path, parts


def test_the_top_level_folders_are_all_in_the_order():
    tops = {parts[0] for _, parts in _modules() if parts}
    assert tops <= set(ORDER), tops - set(ORDER)


@pytest.mark.parametrize("path,parts", list(_modules()), ids=lambda p: "/".join(p) if isinstance(p, list) else "")
def test_a_module_imports_only_from_its_folder_and_below(path, parts):
    if not parts:  # shapeinfer/__init__.py: the package's face, above everything
        return
    mine = ORDER.index(parts[0])
    for target, names in _imports(path, parts):
        top = target.split(".")[0]
        if top in ORDER:
            assert ORDER.index(top) <= mine or top == parts[0], f"{'.'.join(parts)} imports {target} (a layer above)"
        for name in names:
            assert not (name.startswith("_") and not name.startswith("__")), \
                f"{'.'.join(parts)} imports the private name {name} of {target}"


def test_the_cli_uses_only_public_names():
    for path in sorted(CLI.rglob("*.py")):
        for target, names in _imports(path, ["cli", path.stem]):
            for name in names:
                assert not name.startswith("_"), f"cli/{path.name} imports the private name {name} of {target}"


def test_every_package_is_installed():
    """pyproject lists the packages by hand: a folder missing there works in a checkout and
    is absent from an installed wheel (the CLI then fails to import)."""
    import re

    text = (ROOT.parent / "pyproject.toml").read_text()
    listed = set(re.findall(r'"(shapeinfer(?:\.[a-z_]+)*)"', text.split("packages = [", 1)[1].split("]", 1)[0]))
    folders = {".".join(("shapeinfer",) + p.parent.relative_to(ROOT).parts) for p in ROOT.rglob("__init__.py")}
    assert folders <= listed, sorted(folders - listed)


ADAPTER = ROOT / "optimizer" / "adapter.py"
GS = "onnx_graphsurgeon"
# What only the adapter may touch: onnx-graphsurgeon's private fields and internal classes.
GS_INTERNALS = {"_values", "LazyValues", "SparseValues", "OnnxExporter", "OnnxImporter", "SynchronizedList",
                "G_LOGGER"}


def _library_imports(tree) -> list:
    """(line, module) for each import of a module outside shapeinfer, in either form."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.lineno, node.module))
    return found


def _internals(tree) -> list:
    """(line, what) for each use of an onnx-graphsurgeon internal: a name or attribute among
    GS_INTERNALS, and list's own methods called on an object (``list.append(t.outputs, n)``:
    the synchronised lists' links written without their syncing)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in GS_INTERNALS:
            found.append((node.lineno, "." + node.attr))
        elif isinstance(node, ast.Name) and node.id in GS_INTERNALS:
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.alias) and node.name.split(".")[-1] in GS_INTERNALS:
            found.append((getattr(node, "lineno", 0), node.name))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "list":
            found.append((node.lineno, f"list.{node.func.attr}(...)"))
    return found


def _source_files():
    yield from sorted(ROOT.rglob("*.py"))
    yield from sorted(CLI.rglob("*.py"))


@pytest.mark.parametrize("path", list(_source_files()), ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_only_the_adapter_imports_onnx_graphsurgeon(path):
    if path == ADAPTER:
        return
    tree = ast.parse(path.read_text())
    imports = [(line, m) for line, m in _library_imports(tree) if m == GS or m.startswith(GS + ".")]
    assert not imports, f"{path.relative_to(ROOT.parent)} imports {imports}: import what it needs from optimizer/adapter.py"
    # (importlib.import_module("onnx_graphsurgeon") and the like: the module's name nowhere)
    assert GS not in path.read_text(), f"{path.relative_to(ROOT.parent)} names {GS}"


@pytest.mark.parametrize("path", list(_source_files()), ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_only_the_adapter_touches_onnx_graphsurgeon_internals(path):
    if path == ADAPTER:
        return
    found = _internals(ast.parse(path.read_text()))
    assert not found, f"{path.relative_to(ROOT.parent)} touches onnx-graphsurgeon's internals: {found}"


def test_the_adapter_is_where_onnx_graphsurgeon_is():
    """The rules above hold of something: the adapter imports the library and re-exports the
    classes the passes use; the checks find an import in either form, inside a function too,
    and each internal."""
    import shapeinfer.optimizer.adapter as adapter
    import onnx_graphsurgeon as gs

    assert (adapter.Graph, adapter.Node, adapter.Constant, adapter.Variable) == (gs.Graph, gs.Node, gs.Constant,
                                                                                gs.Variable)
    assert any(m.startswith(GS) for _, m in _library_imports(ast.parse(ADAPTER.read_text())))
    sample = ast.parse("def f(t):\n    import onnx_graphsurgeon as gs\n    from onnx_graphsurgeon.ir.tensor import "
                       "LazyValues\n    list.append(t.outputs, t)\n    return t._values, OnnxExporter\n")
    assert [m for _, m in _library_imports(sample)] == ["onnx_graphsurgeon", "onnx_graphsurgeon.ir.tensor"]
    assert {w for _, w in _internals(sample)} == {"LazyValues", "list.append(...)", "._values", "OnnxExporter"}
