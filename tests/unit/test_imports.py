"""The import graph of provision/, read with `ast`: no cycle (deferred imports, type hints and package __init__
included), the provider registry reached only by the lifecycle and spec/, the node-side package standard library +
NVML only."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import provision

ROOT = Path(provision.__file__).resolve().parent
NODE_PACKAGE = "provision.certify.probe"
NODE_ALLOWED = {"pynvml"}  # nvidia-ml-py: the one third-party module the node-side package may import


def _name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in ROOT.rglob("*.py")}


def _type_checking(node: ast.If) -> bool:
    """`if TYPE_CHECKING:` (or typing.TYPE_CHECKING): imports for type hints only, never executed."""
    test = node.test
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or \
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def imports(module: str, *, type_only: bool = False) -> set[str]:
    """Every module a module imports: at the top, inside functions (deferred) and, if asked, for type hints."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node) and not type_only:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


def _resolve(name: str) -> str | None:
    """The module of ours an imported name lands in (a package, a module, or the module an attribute is in)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def graph(*, type_only: bool = False) -> dict[str, set[str]]:
    """module -> the modules of ours it makes Python execute: each import, and the __init__ of every package on
    the way to it that is not one of the importer's own (those are running already); with type_only, those it
    imports for type hints too."""
    edges = {}
    for module in MODULES:
        own = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 2)}
        targets = set()
        for name in imports(module, type_only=type_only):
            target = _resolve(name) if name.split(".")[0] == "provision" else None
            if target is None:
                continue
            parts = target.split(".")
            targets |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)} - own
        edges[module] = targets - {module}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_has_no_cycle():
    assert cycles(graph()) == []


def test_no_cycle_runs_through_a_type_hint_either():
    """A TYPE_CHECKING import never runs, but a loop through one is still two modules that need each other."""
    assert cycles(graph(type_only=True)) == []


def test_the_cycle_finder_sees_a_deferred_import():
    edges = {"a": {"b"}, "b": set()}
    assert cycles(edges) == []
    edges["b"].add("a")  # e.g. `def f(): from a import x` in b
    assert cycles(edges) == [["a", "b"]]


@pytest.mark.parametrize("layer", ["provision.inventory", "provision.deploy", "provision.certify"])
def test_inventory_deploy_and_certify_never_reach_into_the_providers(layer):
    reaching = {m: sorted(n for n in imports(m, type_only=True) if n.startswith("provision.providers"))
                for m in MODULES if m == layer or m.startswith(layer + ".")}
    assert {m: found for m, found in reaching.items() if found} == {}


def test_only_the_lifecycle_and_the_spec_look_up_a_provider():
    outside = {m for m in MODULES if not m.startswith("provision.providers")}
    users = {m for m in outside if any(n.startswith("provision.providers") for n in imports(m, type_only=True))}
    assert users == {"provision.cluster.lifecycle", "provision.spec.model", "provision.spec.loader",
                     "provision.spec.validators", "provision.spec.example", "provision.spec.locations"}
    for module in users - {"provision.cluster.lifecycle"}:  # spec/ knows the union of sections, through the registry
        assert {n for n in imports(module) if n.startswith("provision.providers")} <= {
            "provision.providers", "provision.providers.registry"}, module


def test_the_node_side_package_imports_only_the_standard_library_and_nvml():
    foreign = {}
    for module in (m for m in MODULES if m == NODE_PACKAGE or m.startswith(NODE_PACKAGE + ".")):
        for name in imports(module, type_only=True):
            top = name.split(".")[0]
            ours = name.startswith(NODE_PACKAGE) or name in ("provision", "provision.certify")
            if not (ours or top in sys.stdlib_module_names or top in NODE_ALLOWED or top == "__future__"):
                foreign.setdefault(module, []).append(name)
    assert foreign == {}
    assert imports("provision") == imports("provision.certify") == set()  # they ship too, as package markers


def test_the_library_never_imports_the_cli():
    users = {m for m in MODULES if not m.startswith("provision.cli")
             and any(n.startswith("provision.cli") for n in imports(m, type_only=True))}
    assert users == {"provision.__main__"}  # `python -m provision` is the CLI
