"""Check that no package imports itself in a circle (issue 68).

Every ``import`` and ``from ... import`` statement in a package's ``src`` is read from the AST,
at module level and inside functions and classes alike (a function-level import closes a cycle
as soon as the function runs), and becomes an edge ``importer -> imported module`` when the
imported module belongs to the same package. ``from pkg.mod import name`` is an edge to
``pkg.mod.name`` when that is a module, else to ``pkg.mod``; relative imports are resolved.
Imports under ``if TYPE_CHECKING:`` never run and are left out, and so is the implicit import
of parent packages (``pkg/__init__.py`` runs before any submodule, which is not a cycle).
Any cycle is reported as its path with the file and line of each import, e.g.::

    toprovar: import cycle toprovar._checks -> toprovar.pruning -> toprovar._checks
      toprovar/_checks.py:12 imports toprovar.pruning
      toprovar/pruning.py:30 imports toprovar._checks

    python .ci/check_imports.py              # shared-core and every packages/*/src
    python .ci/check_imports.py SRC_DIR...   # the given src folders
    python .ci/check_imports.py --self-test  # planted cycles must be found, a clean package pass
"""

from __future__ import annotations

import ast
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Edge:
    """``importer`` imports ``imported`` at ``file:line``."""

    importer: str
    imported: str
    file: Path
    line: int


def modules_of(src: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under the top-level packages of `src`."""
    out: dict[str, Path] = {}
    for top in sorted(p for p in src.iterdir() if (p / "__init__.py").is_file()):
        for path in sorted(top.rglob("*.py")):
            parts = list(path.relative_to(src).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: all nesting levels, minus ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda n: n.lineno)


def _internal(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of dotted `name` that is a module of the package, if any."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in modules:
            return candidate
    return None


def edges_of(modules: dict[str, Path]) -> list[Edge]:
    """The import edges between the given modules (see the module docstring)."""
    edges = []
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _import_nodes(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.append(full if full in modules else base)
            for target in targets:
                hit = _internal(target, modules)
                if hit is not None and hit != name:
                    edges.append(Edge(name, hit, path, node.lineno))
    return edges


def find_cycles(edges: list[Edge]) -> list[list[Edge]]:
    """One cycle (as its edges, in order) per strongly connected component that has one."""
    graph: dict[str, list[Edge]] = {}
    for e in edges:
        graph.setdefault(e.importer, []).append(e)
        graph.setdefault(e.imported, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan's algorithm (graphs here have a few dozen nodes)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for e in graph[v]:
            w = e.imported
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            components.append(comp)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    cycles = []
    for comp in components:
        if len(comp) < 2:
            continue
        members = set(comp)
        start = min(comp)
        # breadth-first from `start` inside the component, back to `start`: a shortest cycle
        parent: dict[str, Edge] = {}
        frontier = [start]
        closing: Edge | None = None
        while frontier and closing is None:
            nxt = []
            for v in frontier:
                for e in graph[v]:
                    if e.imported == start:
                        closing = e
                        break
                    if e.imported in members and e.imported not in parent:
                        parent[e.imported] = e
                        nxt.append(e.imported)
                if closing is not None:
                    break
            frontier = nxt
        assert closing is not None
        path = [closing]
        while path[0].importer != start:
            path.insert(0, parent[path[0].importer])
        cycles.append(path)
    return cycles


def check_src(src: Path) -> list[str]:
    """Problems in one ``src`` folder: each import cycle with its path."""
    problems = []
    for cycle in find_cycles(edges_of(modules_of(src))):
        names = " -> ".join([cycle[0].importer, *(e.imported for e in cycle)])
        where = "".join(
            f"\n  {e.file.relative_to(src)}:{e.line} imports {e.imported}" for e in cycle
        )
        problems.append(f"{src}: import cycle {names}{where}")
    return problems


def all_srcs() -> list[Path]:
    return [ROOT / "shared-core" / "src", *sorted(ROOT.glob("packages/*/src"))]


def self_test() -> None:
    """Planted cycles (function-level, three modules, relative) are found; a package whose
    only circle is under TYPE_CHECKING passes."""
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "bad" / "src" / "cyc"
        (bad / "sub").mkdir(parents=True)
        files = {
            "__init__.py": "",
            "a.py": "def f():\n    from cyc.b import g\n    return g\n",
            "b.py": "import numpy\n\ndef g():\n    from cyc import a\n    return a\n",
            "sub/__init__.py": "",
            "sub/x.py": "from . import y\n",
            "sub/y.py": "from .z import thing\n",
            "sub/z.py": "import cyc.sub.x\nthing = 1\n",
        }
        for rel, text in files.items():
            (bad / rel).write_text(text)
        problems = check_src(bad.parent)
        text = "\n".join(problems)
        assert len(problems) == 2, problems
        assert "cyc.a -> cyc.b -> cyc.a" in text and "b.py:4 imports cyc.a" in text, text
        assert "cyc.sub.x -> cyc.sub.y -> cyc.sub.z -> cyc.sub.x" in text, text
        good = Path(tmp) / "good" / "src" / "ok"
        good.mkdir(parents=True)
        (good / "__init__.py").write_text("from ok.a import f\n")
        (good / "a.py").write_text(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ok.b import T\n"
            "def f():\n    from ok.b import g\n    return g\n"
        )
        (good / "b.py").write_text("import numpy\n\ndef g():\n    return 1\n")
        assert check_src(good.parent) == [], check_src(good.parent)
    print("check_imports self-test: planted cycles found, the clean package passes")


def main(argv: list[str]) -> int:
    if argv == ["--self-test"]:
        self_test()
        return 0
    srcs = [Path(a) for a in argv] or all_srcs()
    problems = [p for src in srcs for p in check_src(src)]
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        print(f"check_imports: no import cycle in {len(srcs)} src folders")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
