"""The package structure DESIGN.md section 1 draws, beyond import-linter's layer contracts:
no import cycles inside the project (type-checking imports included: a cycle there is still
two modules that each need the other), and the seams kept narrow."""

from __future__ import annotations

from pathlib import Path

import grimp

PACKAGES = ("runtime", "peerbus", "panels", "sqlitekit")


def _cycles(graph: grimp.ImportGraph, skip: set[str]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative), leaving out
    the modules in `skip` (packages' __init__ modules, which re-export their children)."""

    def imported(module: str) -> list[str]:
        return sorted(graph.find_modules_directly_imported_by(module) - skip)

    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules - skip):
        if root in index:
            continue
        work = [(root, iter(imported(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(imported(child))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False)
    # A package's __init__ that re-exports its modules is not a cycle of concepts.
    packages = {m for m in graph.modules if graph.find_children(m)}
    assert _cycles(graph, packages) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False)
    graph.add_import(importer="panels.host.services", imported="panels.host.turns.panel")
    assert ["panels.host.services", "panels.host.turns.panel"] in _cycles(graph, set())


def test_the_scripted_driver_does_not_need_the_claude_driver() -> None:
    graph = grimp.build_graph("runtime", include_external_packages=False)
    assert not graph.chain_exists("runtime.turn.scripted", "runtime.claude", as_packages=True)


# The faces of the packages with rooms: every other module sits in a room (a subpackage).
FACES = {
    "runtime": {"__init__", "errors"},
    "panels.host": {"__init__", "host", "services", "process", "thread", "solo", "demo", "errors"},
}


ROOT = Path(__file__).resolve().parent.parent


def loose_modules(package: str, root: Path = ROOT) -> set[str]:
    """The modules directly in `package`'s folder under `root`, by name."""
    return {path.stem for path in root.joinpath(*package.split(".")).glob("*.py")}


def test_runtime_and_the_host_keep_their_modules_in_rooms() -> None:
    for package, face in FACES.items():
        assert loose_modules(package) <= face, package


def test_a_module_left_outside_a_room_is_found(tmp_path: Path) -> None:
    (tmp_path / "runtime").mkdir()
    for name in ("__init__", "errors", "stray"):
        (tmp_path / "runtime" / f"{name}.py").write_text("")
    assert loose_modules("runtime", tmp_path) - FACES["runtime"] == {"stray"}
