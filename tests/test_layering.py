"""The layout is the architecture: each folder of shapeinfer/ imports only from itself and from
the folders below it, and no module imports another module's private (``_``) names.

Bottom to top: errors, semantics, symbolic (the algebra), modelio (model files), graph
(structure), fold (exact kernels), infer (the engine), checker, costs, optimizer, api (the facade).
README's Layout section lists them in this order."""

import ast
import pathlib

import pytest

ORDER = ["errors", "semantics", "symbolic", "modelio", "graph", "fold", "infer", "checker", "costs", "optimizer", "api"]
ROOT = pathlib.Path(__file__).resolve().parent.parent / "shapeinfer"
CLI = pathlib.Path(__file__).resolve().parent.parent / "cli"


def _imports(path: pathlib.Path, package_parts: list):
    """(target module under shapeinfer, imported names) for each `from ... import ...`."""
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
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
