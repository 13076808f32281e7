"""The package's import graph: no circles at any level, no upward imports, no module over 600
lines.

The graph is read from the source with :mod:`ast` (every ``import`` statement, including the
ones inside functions), so a lazy import that closes a circle is caught too. Imports under
``if TYPE_CHECKING:`` never run, but they still say that one module needs another's types: a
circle through them is a circle of the design (the type belongs below both), so circles count
them; the stage order (upward imports) is checked on the imports that run.

A circle is looked for at every level: between modules, and inside every package between its
direct children (modules and subpackages, a subpackage standing for all its modules), so two
subpackages that import each other through different modules fail as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mast"

# Bottom first. A module may import from its own stage and from the stages below it.
STAGES = ["taxonomy", "traces", "privacy", "judge", "bulk", "agree", "analysis", "label", "cli"]
# Root modules below every stage (imported by all) and above every stage (public facades).
BASE = {"mast.errors", "mast._version", "mast._resources", "mast._lazy"}
MAX_LINES = 600


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(
    tree: ast.AST, name: str, is_package: bool, modules: set[str], *, type_checking: bool = False
) -> set[str]:
    """Modules of the package that ``tree`` imports at run time (and, with ``type_checking``,
    under ``if TYPE_CHECKING:``)."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not type_checking:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "mast")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "mast":
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    found.add(sub if sub in modules else target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in found if m in modules and m != name}


def import_graph(src: Path = SRC, *, type_checking: bool = False) -> dict[str, set[str]]:
    """``{module: modules it imports}`` for every module under ``src`` (``type_checking``:
    count the imports under ``if TYPE_CHECKING:`` too)."""
    files = {module_name(p, src): p for p in src.rglob("*.py")}
    modules = set(files)
    return {
        name: _imports(
            ast.parse(path.read_text(encoding="utf-8")),
            name,
            path.stem == "__init__",
            modules,
            type_checking=type_checking,
        )
        for name, path in files.items()
    }


def package_graphs(graph: dict[str, set[str]]) -> dict[str, dict[str, set[str]]]:
    """For every package, the imports between its direct children.

    ``{package: {child: children it imports}}``, where a child is a module or a subpackage of
    the package and an import of any module inside a subpackage counts as one of the
    subpackage. The package's own ``__init__`` is left out: it is the face that may name its
    children, not one of them.
    """
    packages = {m for m in graph if any(o.startswith(m + ".") for o in graph)}
    out: dict[str, dict[str, set[str]]] = {p: {} for p in packages}
    for package in packages:
        depth = package.count(".") + 1

        def child(module: str, package: str = package, depth: int = depth) -> str | None:
            if not module.startswith(package + "."):
                return None
            return ".".join(module.split(".")[: depth + 1])

        edges = out[package]
        for module, deps in graph.items():
            if (a := child(module)) is None:
                continue
            edges.setdefault(a, set())
            for dep in deps:
                if (b := child(dep)) is not None and b != a:
                    edges[a].add(b)
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """A circle between modules, and one per package between its children (empty: none)."""
    found = [c] if (c := find_cycle(graph)) else []
    for package, edges in sorted(package_graphs(graph).items()):
        if cycle := find_cycle(edges):
            found.append([f"in {package}:", *cycle])
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def layer(module: str) -> int:
    """Rank of a module's stage: base modules lowest, root facades highest."""
    if module in BASE:
        return -1
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in STAGES:
        return STAGES.index(parts[1])
    return len(STAGES)  # mast/__init__.py, __main__ and the public re-export modules


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{m} imports {d}" for m, deps in graph.items() for d in deps if layer(d) > layer(m)
    )


def test_no_import_circles() -> None:
    assert circles(import_graph(type_checking=True)) == []


def test_no_upward_imports() -> None:
    assert upward_imports(import_graph()) == []


def test_every_module_is_in_a_stage_or_named_at_the_root() -> None:
    facades = {"mast", "mast.__main__", "mast.datasets", "mast.stats", "mast.plots"}
    facades |= {"mast.redact", "mast.report", "mast.distributed", "mast.export"}
    loose = {m for m in import_graph() if layer(m) == len(STAGES)} - facades
    assert loose == set(), "put new modules in a stage folder (see ARCHITECTURE.md)"


def test_no_module_over_600_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def _write(root: Path, files: dict[str, str]) -> Path:
    src = root / "mast"
    for rel, text in files.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return src


def test_a_planted_circle_is_found(tmp_path: Path) -> None:
    src = _write(
        tmp_path,
        {
            "__init__.py": "",
            "judge/__init__.py": "",
            "judge/a.py": "from mast.judge import b\n",
            "judge/b.py": "def f():\n    from mast.judge.a import x\n",
        },
    )
    assert find_cycle(import_graph(src)) == ["mast.judge.a", "mast.judge.b", "mast.judge.a"]


def test_a_circle_through_type_checking_imports_is_found(tmp_path: Path) -> None:
    # Two modules of one package: the second names the first's type for a hint only.
    src = _write(
        tmp_path,
        {
            "__init__.py": "",
            "judge/__init__.py": "",
            "judge/a.py": "from mast.judge import b\n",
            "judge/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from mast.judge.a import x\n",
        },
    )
    assert find_cycle(import_graph(src)) is None  # never runs: not an upward import either
    assert circles(import_graph(src, type_checking=True)) == [
        ["mast.judge.a", "mast.judge.b", "mast.judge.a"],
        ["in mast.judge:", "mast.judge.a", "mast.judge.b", "mast.judge.a"],
    ]


def test_a_circle_between_subpackages_is_found(tmp_path: Path) -> None:
    # No two modules import each other, but prompt/ needs reply/ and reply/ needs prompt/.
    files = {"__init__.py": "", "judge/__init__.py": ""}
    files |= {f"judge/{sub}/__init__.py": "" for sub in ("prompt", "reply")}
    files |= {
        "judge/prompt/render.py": "from mast.judge.reply import parse\n",
        "judge/reply/parse.py": "",
        "judge/reply/echo.py": "from mast.judge.prompt import types\n",
        "judge/prompt/types.py": "",
    }
    graph = import_graph(_write(tmp_path, files))
    assert find_cycle(graph) is None
    assert circles(graph) == [
        ["in mast.judge:", "mast.judge.prompt", "mast.judge.reply", "mast.judge.prompt"]
    ]


def test_a_package_face_naming_its_children_is_no_circle(tmp_path: Path) -> None:
    files = {"__init__.py": "", "judge/__init__.py": "from mast.judge import a, b\n"}
    files |= {"judge/a.py": "from mast.judge import b\n", "judge/b.py": ""}
    assert circles(import_graph(_write(tmp_path, files))) == []


@pytest.mark.parametrize(
    ("importer", "imported", "upward"),
    [("traces/x.py", "mast.judge.y", True), ("judge/y.py", "mast.traces.x", False)],
)
def test_a_planted_upward_import_is_found(
    tmp_path: Path, importer: str, imported: str, upward: bool
) -> None:
    files = {"__init__.py": "", "traces/__init__.py": "", "judge/__init__.py": ""}
    files |= {"traces/x.py": "", "judge/y.py": ""}
    files[importer] = f"import {imported}\n"
    found = upward_imports(import_graph(_write(tmp_path, files)))
    assert bool(found) is upward
