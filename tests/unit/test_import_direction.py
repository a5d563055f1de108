"""DESIGN.md section 1: ferrex -> projections -> journal, and library imports kept in place."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = {"journal": 0, "projections": 1, "ferrex": 2}


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def modules() -> list[tuple[str, Path]]:
    return [(pkg, p) for pkg in LAYERS for p in sorted((ROOT / pkg).rglob("*.py"))]


def test_packages_import_only_downwards() -> None:
    wrong = []
    for package, path in modules():
        for name in imports_of(path):
            if name in LAYERS and LAYERS[name] > LAYERS[package]:
                wrong.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not wrong, wrong
    assert len(modules()) > 5


def test_adapters_own_their_libraries() -> None:
    """Only ferrex/cli imports click; only ferrex/server/mcp* imports mcp."""
    wrong = []
    for _, path in modules():
        rel = path.relative_to(ROOT).as_posix()
        names = imports_of(path)
        if "click" in names and not rel.startswith("ferrex/cli"):
            wrong.append(f"{rel} imports click")
        if "mcp" in names and not rel.startswith("ferrex/server/mcp"):
            wrong.append(f"{rel} imports mcp")
    assert not wrong, wrong


def test_the_checker_sees_a_wrong_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from ferrex.app import App\nimport projections.x\n")
    assert imports_of(bad) == {"ferrex", "projections"}


#: The adapters that own a storage library: nothing else may import it.
OWNERS = {
    "apsw": ("projections/readmodel/", "ferrex/models/"),  # the read model; the embedding cache
    "qdrant_edge": ("projections/qdrant_edge.py",),
    "qdrant_client": ("projections/qdrant_server.py",),
    "psycopg": ("journal/postgres.py", "journal/pg_connect.py"),  # the journal on PostgreSQL
}
#: Where SQL may be written inside ferrex/: the embedding cache (its own small SQLite file).
SQL_ALLOWED = ("ferrex/models/",)
_SQL_START = ("select ", "insert ", "update ", "delete ", "create ", "replace ", "pragma ")


def _owned(rel: str, owners: tuple[str, ...]) -> bool:
    return any(rel == o or (o.endswith("/") and rel.startswith(o)) for o in owners)


def storage_faults(path: Path, rel: str) -> list[str]:
    """What ``path`` does that only the storage adapters may: import apsw or a Qdrant
    library, write SQL, or touch the read model's connection (``.db``)."""
    found = []
    for name in imports_of(path):
        if name in OWNERS and not _owned(rel, OWNERS[name]):
            found.append(f"{rel} imports {name}")
    if not rel.startswith("ferrex/") or _owned(rel, SQL_ALLOWED):
        return found
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Attribute) and node.attr == "db":
            found.append(f"{rel}:{node.lineno} touches a connection (.db)")
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.lstrip().casefold().startswith(_SQL_START)
            and " " in node.value.strip()
            and node.value.strip().split()[0].isupper()
        ):
            found.append(f"{rel}:{node.lineno} holds SQL")
    return found


def test_storage_libraries_and_sql_stay_in_their_adapters() -> None:
    """No SQL in ferrex/ outside the embedding cache; the read model's connection is the
    projections' own; apsw and Qdrant are imported only by the adapters that own them."""
    wrong = []
    for _, path in modules():
        wrong += storage_faults(path, path.relative_to(ROOT).as_posix())
    assert not wrong, wrong


def test_the_storage_checker_sees_sql_and_connections(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import apsw\ndef f(rm):\n    return rm.db.execute('SELECT count(*) FROM memories')\n"
    )
    assert sorted(storage_faults(bad, "ferrex/read/bad.py")) == [
        "ferrex/read/bad.py imports apsw",
        "ferrex/read/bad.py:3 holds SQL",
        "ferrex/read/bad.py:3 touches a connection (.db)",
    ]
    assert storage_faults(bad, "ferrex/models/cache.py") == []


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def every_import(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, ``if TYPE_CHECKING:`` blocks included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def run_time_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: at module level, in a class or a function
    (a lazy import is still an edge), but not under ``if TYPE_CHECKING:``, which never runs
    and so cannot take part in an import-order cycle."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for other in node.orelse:
                yield from run_time_imports(ast.Module(body=[other], type_ignores=[]))
        else:
            yield from run_time_imports(node)


def package_imports(
    *packages: str, base: Path = ROOT, typing_too: bool = False
) -> dict[str, set[str]]:
    """Each module of ``packages`` (dotted names) -> the modules of them it imports, wherever
    the import statement is (a function-level import is still an edge; ``TYPE_CHECKING``
    blocks are not). ``from pkg import sub`` is an edge to ``pkg.sub`` when that is a module,
    else to ``pkg``; the parent packages Python runs first are not edges (every submodule
    would otherwise form a cycle with a package ``__init__`` that imports it)."""
    paths: dict[str, Path] = {}
    for package in packages:
        root = base / package
        for path in sorted(root.rglob("*.py")):
            parts = (package, *path.relative_to(root).with_suffix("").parts)
            paths[".".join(parts).removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        edges: set[str] = set()
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in every_import(tree) if typing_too else run_time_imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    targets.append(sub if sub in paths else node.module)
            edges.update(t for t in targets if t in paths and t != module)
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a path that ends where it starts, or None."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        path.append(node)
        for target in sorted(graph.get(node, ())):
            cycle = visit(target)
            if cycle is not None:
                return cycle
        path.pop()
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start)
        if cycle is not None:
            return cycle
    return None


def test_no_import_cycle_anywhere_in_the_three_packages() -> None:
    """Module-level and function-level imports alike: a lazy import that closes a loop is
    a cycle too (it only hides it until the function runs)."""
    graph = package_imports(*LAYERS)
    assert "journal.verify" in graph["journal.repairs"]
    assert "projections.replay" in graph["projections.reconcile"]
    assert "ferrex.server.dashboard.web" in graph["ferrex.server.dashboard"]
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_finder_sees_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None
    # The shape journal.repairs <-> journal.verify had: one side imported inside a function.
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "repairs.py").write_text("def plan():\n    from pkg.verify import verify\n")
    (package / "verify.py").write_text("from pkg import repairs\n")
    graph = package_imports("pkg", base=tmp_path)
    assert graph["pkg.verify"] == {"pkg.repairs"}
    assert find_cycle(graph) == ["pkg.repairs", "pkg.verify", "pkg.repairs"]


def test_the_cycle_finder_skips_type_checking_and_sees_names_from_a_package(
    tmp_path: Path,
) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("def mount():\n    from pkg.web import Web\n")
    (package / "pages.py").write_text("")
    (package / "web.py").write_text(
        "from typing import TYPE_CHECKING\nfrom pkg import pages\n"
        "if TYPE_CHECKING:\n    from pkg.api import Api\nelse:\n    import pkg.shared\n"
    )
    (package / "api.py").write_text("from pkg.web import Web\n")
    (package / "shared.py").write_text("from pkg import mount\n")
    graph = package_imports("pkg", base=tmp_path)
    assert graph["pkg.web"] == {"pkg.pages", "pkg.shared"}
    assert graph["pkg.shared"] == {"pkg"}
    assert find_cycle(graph) == ["pkg", "pkg.web", "pkg.shared", "pkg"]


def _declared() -> dict[str, set[str]]:
    """Distribution names (normalised) of pyproject's dependencies: ``project`` and each extra."""
    import re
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(requirements: list[str]) -> set[str]:
        return {
            re.sub(r"[-_.]+", "-", re.split(r"[\s<>=!~\[;]", r, maxsplit=1)[0]).lower()
            for r in requirements
        }

    groups = {"project": names(project["dependencies"])}
    groups.update({extra: names(reqs) for extra, reqs in project["optional-dependencies"].items()})
    return groups


def test_every_imported_library_is_declared() -> None:
    """A library ferrex's own code imports is a dependency of the project (or of the extra
    that enables the code importing it), never something that happens to arrive with another
    package."""
    import importlib.metadata
    import re
    import sys

    distributions = importlib.metadata.packages_distributions()
    declared = _declared()
    runtime = declared["project"] | declared["qdrant-server"] | declared["postgres"]
    missing = []
    for _, path in modules():
        for name in imports_of(path):
            if name in LAYERS or name in sys.stdlib_module_names:
                continue
            owners = {re.sub(r"[-_.]+", "-", d).lower() for d in distributions.get(name, [name])}
            if not owners & runtime:
                missing.append(f"{path.relative_to(ROOT)} imports {name} ({', '.join(owners)})")
    assert not missing, missing


def test_no_cycle_hidden_behind_type_checking() -> None:
    """Two modules that name each other only for the type checker still depend on each other
    by design: a protocol in the lower one (``dashboard/edge.Gate``, ``compact.Compactable``)
    says what it needs instead."""
    cycle = find_cycle(package_imports(*LAYERS, typing_too=True))
    assert cycle is None, " -> ".join(cycle or [])


#: The edges of ``ferrex/`` (ARCHITECTURE.md, "The layers"): the adapters to the outside world,
#: which may import everything below them and nothing below may import.
EDGES = ("ferrex.server", "ferrex.cli", "ferrex.hooks", "ferrex.entry")

#: Imports of an edge from below it left in the code, each with why it is not moved yet.
UPWARD_LEFT: dict[tuple[str, str], str] = {}


def _is_edge(module: str) -> bool:
    return any(module == edge or module.startswith(f"{edge}.") for edge in EDGES)


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(module, edge module) for each module below the edges that imports an edge."""
    return {(m, t) for m, targets in graph.items() if not _is_edge(m) for t in targets
            if _is_edge(t)}  # fmt: skip


def test_nothing_below_the_edges_imports_them() -> None:
    """The composition root (``app.py``), the rules, decisions, readers, models and porting
    never import the server, the CLI or the hooks (issue 46: ``app.py`` imported
    ``server.owner``), not even for the type checker."""
    graph = package_imports(*LAYERS, typing_too=True)
    assert "ferrex.app" in graph and "ferrex.server.service" in graph
    assert upward_imports(graph) == set(UPWARD_LEFT)


def test_the_upward_import_finder_sees_one(tmp_path: Path) -> None:
    for name in ("ferrex/server", "ferrex/read"):
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "ferrex" / "__init__.py").write_text("")
    (tmp_path / "ferrex" / "server" / "owner.py").write_text("")
    (tmp_path / "ferrex" / "app.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ferrex.server import owner\n"
    )
    (tmp_path / "ferrex" / "read" / "x.py").write_text("import ferrex.server.owner\n")
    graph = package_imports("ferrex", base=tmp_path, typing_too=True)
    assert upward_imports(graph) == {
        ("ferrex.app", "ferrex.server.owner"),
        ("ferrex.read.x", "ferrex.server.owner"),
    }
