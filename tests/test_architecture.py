"""The engine's import graph and function sizes, measured with Python's ast over every module of sim/.

Every import between sim modules counts, at module level and inside functions alike: sim/ has no import cycle, and
at most 3 imports between sim modules sit inside functions (a function-local import hides a cycle or a late
dependency from the reader). No function of sim/ is longer than 150 lines or takes more than 30 parameters (the kernels
take their arrays in a few named groups, tuples typed once per layout). The compiled step's layers (sim/step, solver,
kernels, potentials) read no private field of another object.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SIM = Path(__file__).resolve().parent.parent / "sim"
MAX_LINES, MAX_PARAMS, MAX_LOCAL_IMPORTS = 150, 30, 3


def _modules() -> dict[str, Path]:
    mods = {}
    for path in SIM.rglob("*.py"):
        parts = ("sim",) + path.with_suffix("").relative_to(SIM).parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return mods


UNRESOLVED: list = []  # relative imports inside sim/ of a module that does not exist (a stale path after a move)


def _targets(node, mod: str, is_package: bool, mods) -> list[str]:
    """The sim modules an import statement reads (a ``from pkg import name`` of a submodule counts as that module)."""
    if isinstance(node, ast.Import):
        names = [a.name.replace("superdex_gym.", "", 1) for a in node.names]
        return [n for n in names if n in mods]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = mod.split(".") if is_package else mod.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = (node.module or "").replace("superdex_gym.", "", 1)
    if target not in mods:
        if node.level:
            UNRESOLVED.append((mod, target))
        return []
    return [f"{target}.{a.name}" if f"{target}.{a.name}" in mods else target for a in node.names]


def _graph():
    mods = _modules()
    edges, local, sizes = defaultdict(set), [], []
    for mod, path in mods.items():
        tree = ast.parse(path.read_text())
        is_package = path.name == "__init__.py"
        for node in tree.body:
            edges[mod].update(t for t in _targets(node, mod, is_package, mods) if t != mod)
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            a = fn.args
            sizes.append((mod, fn.name, len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs),
                          fn.end_lineno - fn.lineno + 1))
            for node in ast.walk(fn):
                for t in _targets(node, mod, is_package, mods):
                    if t != mod:
                        local.append((mod, fn.name, t))
                        edges[mod].add(t)
    return mods, edges, local, sizes


def _cycles(nodes, edges) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def test_every_relative_import_in_sim_names_a_module_that_exists():
    UNRESOLVED.clear()
    _graph()
    assert UNRESOLVED == []


def test_sim_has_no_import_cycle():
    mods, edges, _, _ = _graph()
    assert len(mods) > 50 and sum(len(e) for e in edges.values()) > 100  # the walk really saw the package
    assert _cycles(mods, edges) == []


def test_cycle_detection_sees_a_cycle():
    edges = defaultdict(set, {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert _cycles(["a", "b", "c", "d"], edges) == [["a", "b", "c"]]


def test_few_function_local_imports_between_sim_modules():
    _, _, local, _ = _graph()
    assert len(local) <= MAX_LOCAL_IMPORTS, local


def test_no_function_over_the_size_limits():
    _, _, _, sizes = _graph()
    assert len(sizes) > 500  # the walk saw every function
    over = [(m, f, params, lines) for m, f, params, lines in sizes if params > MAX_PARAMS or lines > MAX_LINES]
    assert over == []


# The compiled step's layers read other objects only through their public methods (the compiled model is the one
# place their arrays are converted; a private read would be a dependency the owner cannot see).
STEP_LAYERS = ("step", "solver", "kernels", "potentials")


def _private_reads(source: str, label: str) -> list[str]:
    """``x._name`` reads in a module's source where ``x`` is not ``self`` / ``cls`` (single-underscore names)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
            found.append(f"{label}:{node.lineno} .{node.attr}")
    return found


def test_the_step_layers_read_no_private_field_of_another_object():
    found = [hit for layer in STEP_LAYERS for path in sorted((SIM / layer).rglob("*.py"))
             for hit in _private_reads(path.read_text(), str(path.relative_to(SIM.parent)))]
    assert found == []


def test_private_read_detection_sees_them():
    source = "def f(cs, self):\n    return cs._targets, cs.public, self._own, pot.x._sets, cs.__dict__\n"
    assert _private_reads(source, "probe") == ["probe:2 ._targets", "probe:2 ._sets"]
