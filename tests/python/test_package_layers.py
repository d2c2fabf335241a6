"""The torchscan_dispatch package has layers and no import circle.

Every module's imports are read from its source (ast), function-level
imports included: an import inside a function hides a circle from Python's
import order but not from a reader of the code. docs/design.md ("The Python
package's layers") explains the order below; a new module takes its place
in it here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "torchscan_dispatch"
PACKAGE_DIR = Path(__file__).resolve().parents[2] / "python" / PACKAGE

# Bottom to top. A module imports modules of its own layer or of lower ones.
LAYERS = [
    # Loading the library, and process-wide plumbing. _build_info is written
    # into the wheel by tools/build_wheel.py.
    ("base", {"_version", "_build_info", "_library", "_global_hooks", "_imports", "_captured_output"}),
    # The torch.compile integration; _compiler_integration.py is its switch.
    ("compiler", {
        "_compiler_patches", "_compilation_marks", "_graph_spec", "_tally_pass", "_compiled_calls",
        "_compiler_integration",
    }),
    # Native counting sessions and what runs while one is open.
    ("measurement", {"_native", "_module_scopes", "_while_counting", "_recompute", "_flex_attention", "_threads"}),
    # Reports, descriptions of values and graphs, job merges.
    ("reports", {
        "report", "render", "devices", "roofline", "process", "distributed", "_describe", "_recover_from_graph",
        "_pt2_reader", "_crawl_support", "_forward_hooks",
    }),
    # The analyses a user calls.
    ("front ends", {"flops", "mfu", "exported", "crawler", "achieved"}),
    # The package itself and its command line.
    ("entry points", {"cli", "__main__", "__init__"}),
]
LAYER_OF = {module: index for index, (_, modules) in enumerate(LAYERS) for module in modules}


def package_modules() -> set[str]:
    return {path.stem for path in PACKAGE_DIR.glob("*.py")} | {"_build_info"}


def imported_modules(source: str, name: str, modules: set[str]) -> dict[str, int]:
    """The package modules `source` (module `name`) imports, anywhere in it,
    with the line of the first import of each. `from torchscan_dispatch
    import X` names module X when X is one of `modules`, else the package
    (__init__)."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(source)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == PACKAGE:
                    targets.append(parts[1] if len(parts) > 1 else "__init__")
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolved against this package
                parts = [PACKAGE, *(node.module.split(".") if node.module else [])]
            else:
                parts = (node.module or "").split(".")
            if parts[0] != PACKAGE:
                continue
            if len(parts) > 1:
                targets.append(parts[1])
            else:
                targets.extend(alias.name if alias.name in modules else "__init__" for alias in node.names)
        for target in targets:
            if target != name:
                found.setdefault(target, node.lineno)
    return found


def package_graph() -> dict[str, dict[str, int]]:
    modules = package_modules()
    return {
        path.stem: imported_modules(path.read_text(), path.stem, modules) for path in sorted(PACKAGE_DIR.glob("*.py"))
    }


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One import circle of `graph` (its modules in order, the first again
    at the end), or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph.get(module, {})):
            if state.get(target) == "open":
                return [*path[path.index(target):], target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module)
            if cycle:
                return cycle
    return None


def test_every_module_has_a_layer():
    modules = package_modules()
    assert modules - set(LAYER_OF) == set(), "give the new module a layer in LAYERS (docs/design.md)"
    assert set(LAYER_OF) - modules == set(), "a module in LAYERS no longer exists"


def test_the_package_import_graph_has_no_circle():
    graph = package_graph()
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_no_module_imports_a_module_of_a_higher_layer():
    graph = package_graph()
    unplaced = {module for module, targets in graph.items() for module in (module, *targets)} - set(LAYER_OF)
    assert unplaced == set(), "modules without a layer in LAYERS"
    upward = [
        f"{module}.py:{line} imports {target} ({LAYERS[LAYER_OF[target]][0]}) "
        f"from layer {LAYERS[LAYER_OF[module]][0]}"
        for module, targets in graph.items()
        for target, line in targets.items()
        if LAYER_OF[target] > LAYER_OF[module]
    ]
    assert upward == []


def test_function_level_and_relative_imports_are_read():
    source = (
        "import torch\n"
        "from torchscan_dispatch import _native, __version__\n"
        "def later():\n"
        "    from torchscan_dispatch._compiled_calls import patch\n"
        "    import torchscan_dispatch.flops\n"
        "class Inner:\n"
        "    def method(self):\n"
        "        from . import render\n"
        "        from .crawler import crawl_module\n"
    )
    modules = {"_native", "_compiled_calls", "flops", "render", "crawler"}
    assert imported_modules(source, "_example", modules) == {
        "_native": 2,
        "__init__": 2,
        "_compiled_calls": 4,
        "flops": 5,
        "render": 8,
        "crawler": 9,
    }
    # The real package holds one: _recompute marks its frame never compiled
    # from inside a function.
    assert "_compilation_marks" in package_graph()["_recompute"]


@pytest.mark.parametrize(
    ("graph", "cycle"),
    [
        ({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}}, ["a", "b", "c", "a"]),
        ({"a": {"b": 1}, "b": {"c": 1}, "c": {"b": 1}}, ["b", "c", "b"]),
        ({"a": {"b": 1, "c": 1}, "b": {"c": 1}, "c": {}}, None),
    ],
)
def test_the_circle_finder_finds_circles(graph, cycle):
    assert find_cycle(graph) == cycle
