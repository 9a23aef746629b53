"""The import graph stays a tree a newcomer can read: no cycles among the harness's modules,
and the report job reaches into the harness only through the record format and the paths of
the shipped files (reports/__init__.py), never the reverse."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: What reports/ may import from conformance/: leaves that describe shipped data, not the harness.
#: conformance.registry (the protocols) is one: spec_links reads it, and it imports nothing itself.
REPORTS_MAY_IMPORT = {"conformance", "conformance.paths", "conformance.record_format", "conformance.spec_links",
                      "conformance.registry"}


def modules(package: str) -> dict[str, Path]:
    found = {}
    for path in (ROOT / package).rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        found[".".join(parts)] = path
    return found


def imported_names(name: str, path: Path) -> set[str]:
    """Every module (or module.attribute) the file imports, lazy imports inside functions included:
    a circle closed by an import inside a function is still a circle."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: len(name.split(".")) - node.level + (path.name == "__init__.py")]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.add(module)
            names |= {f"{module}.{alias.name}" for alias in node.names}
    return names


def graph(package: str) -> dict[str, set[str]]:
    mods = modules(package)
    return {name: {m for m in imported_names(name, path) if m in mods and m != name} for name, path in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted(component + [v]))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_sees_a_lazy_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_among_harness_modules() -> None:
    assert cycles(graph("conformance")) == []


def test_no_import_cycles_among_report_modules() -> None:
    assert cycles(graph("reports")) == []


def _agreed(name: str) -> bool:
    """The agreed module itself or a name imported from it (conformance.paths.docs_dir)."""
    return name in REPORTS_MAY_IMPORT or any(name.startswith(f"{m}.") for m in REPORTS_MAY_IMPORT - {"conformance"})


def test_reports_import_only_the_agreed_harness_modules() -> None:
    offending = {}
    for name, path in modules("reports").items():
        reached = {m for m in imported_names(name, path) if m == "conformance" or m.startswith("conformance.")}
        harness = {m for m in reached if not _agreed(m)}
        if harness:
            offending[name] = sorted(harness)
    assert offending == {}


def test_the_agreed_modules_are_leaves() -> None:
    # A leaf that imported the harness would bring it back into the report job by the back door.
    for module in REPORTS_MAY_IMPORT - {"conformance"}:
        path = modules("conformance")[module]
        project = {m for m in imported_names(module, path) if m.split(".")[0] in ("conformance", "reports", "reference_impl")}
        # an agreed module may read another agreed leaf, never the rest of the harness
        assert {m for m in project if not _agreed(m)} == set(), (module, project)
    # and the registry, which the others read, reads nothing of the project
    registry = modules("conformance")["conformance.registry"]
    assert not {m for m in imported_names("conformance.registry", registry)
                if m.split(".")[0] in ("conformance", "reports", "reference_impl")}


def test_reports_read_no_harness_package_data_behind_the_imports() -> None:
    # importlib.resources.files("conformance") reaches the harness's files without an import line
    reads = []
    for name, path in modules("reports").items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "files"
                    and node.args and isinstance(node.args[0], ast.Constant)
                    and str(node.args[0].value).split(".")[0] == "conformance"):
                reads.append(name)
    assert reads == []
