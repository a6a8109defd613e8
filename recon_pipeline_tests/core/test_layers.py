"""The house's floors hold: no import circle, no import from a lower floor to a higher one, no two top-level
folders importing each other (pure: reads the package's source with ``ast``, imports nothing of it).

Every module of ``recon_pipeline`` is parsed, and every import in it counts, at the top or inside a
function alike: a late import hides a dependency from the reader, it does not remove it. A module's floor
is its top-level name's (``FLOORS``); it may import its own floor or lower. The one sanctioned way up is
``ALLOWED_UPWARD``: the cli's ``demo`` and ``simulator serve`` commands reach the simulated world's
entry points (``simulation/commands.py``), lazily.
A failure prints one line per violation, naming the modules.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import recon_pipeline

PACKAGE = "recon_pipeline"
ROOT = Path(recon_pipeline.__file__).parent

# The layer map, ground up: a top-level module or folder of recon_pipeline -> its floor.
FLOORS: dict[str, int] = {
    # 0 vocabulary: the words every floor speaks
    "errors": 0,
    "money": 0,
    "nights": 0,
    "keys": 0,
    "properties": 0,
    "retry": 0,
    "categories": 0,
    "tenders": 0,
    "words": 0,
    "frames": 0,
    "checkpoints": 0,
    "config": 0,
    "serving": 0,
    "arguments": 0,
    # 1 the database, the providers (their settings and shared rate included), the metric instruments
    "db": 1,
    "providers": 1,
    "metrics": 1,
    # 2 what is read and decided (reconcile stays pure), and the pipeline's tables, one room per table
    "ledger": 2,
    "events": 2,
    "reconcile": 2,
    "storage": 2,
    # 3 the work
    "batches": 3,
    "postings": 3,
    "review": 3,
    "reports": 3,
    "payouts": 3,
    "webhooks": 3,
    # 4 the Dagster definitions
    "defs": 4,
    "definitions": 4,
    # 5 the people's doors
    "cli": 5,
    "review_desk": 5,
    # 6 the simulated world
    "simulation": 6,
}

# (importing module, imported module) -> why: the only imports from a lower floor to a higher one. Only
# imports inside a function qualify, so production never loads the simulated world by importing a module.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {
    ("recon_pipeline.cli.simulation", "recon_pipeline.simulation.commands"): (
        "the `recon demo` and `recon simulator serve` commands run the simulated world"
    ),
}


def module_paths() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, not ``__init__``)."""
    modules = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = module_paths()


def resolve(name: str) -> str:
    """The module ``name`` is, or lies in (``pkg.mod.Name`` -> ``pkg.mod``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports_of(module: str, path: Path) -> Iterator[tuple[str, bool]]:
    """Each product module ``module`` imports, and whether the import sits inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    late = {
        id(node)
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(function)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # ``from pkg import mod`` imports the module pkg.mod; ``from mod import Name``, the module mod
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names
            ]
        else:
            continue
        for name in names:
            if name == PACKAGE or name.startswith(PACKAGE + "."):
                target = resolve(name)
                if target and target != module:
                    yield target, id(node) in late


def import_graph() -> dict[str, dict[str, bool]]:
    """importer -> imported -> whether every import of it is late (inside a function)."""
    graph: dict[str, dict[str, bool]] = defaultdict(dict)
    for module, path in sorted(MODULES.items()):
        for target, late in imports_of(module, path):
            graph[module][target] = graph[module].get(target, True) and late
    return graph


GRAPH = import_graph()


def top(module: str) -> str:
    """The top-level module or folder name a module belongs to ('' for the package itself)."""
    return module.split(".")[1] if "." in module else ""


def floor(module: str) -> int:
    return FLOORS[top(module)]


def edges() -> list[tuple[str, str, bool]]:
    """The graph's imports: (importer, imported, whether the import sits inside a function)."""
    return [
        (importer, imported, late)
        for importer, targets in sorted(GRAPH.items())
        for imported, late in sorted(targets.items())
    ]


def circles() -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each as one cycle through them."""
    adjacency: dict[str, list[str]] = defaultdict(list)
    for importer, imported, _ in edges():
        adjacency[importer].append(imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in adjacency[node]:
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(MODULES):
        if node not in index:
            visit(node)
    return [_cycle_through(min(group), group, adjacency) for group in groups]


def _cycle_through(start: str, group: set[str], adjacency: dict[str, list[str]]) -> list[str]:
    """The shortest path from ``start`` back to itself within ``group`` (breadth first)."""
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in sorted(adjacency[node]):
                if succ not in group or succ in parents:
                    continue
                parents[succ] = node
                if succ == start:
                    path = [start]
                    while path[-1] != start or len(path) == 1:
                        path.append(parents[path[-1]])
                    return path[::-1]
                following.append(succ)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # a strongly connected group always has one


def test_the_parser_sees_the_imports() -> None:
    """A graph the parser got wrong would pass every check: a few imports known to exist are found."""
    assert GRAPH["recon_pipeline.defs.resources"].keys() >= {
        "recon_pipeline.db.engine",
        "recon_pipeline.providers.settings",
        "recon_pipeline.config",
    }
    assert "recon_pipeline.providers.stripe" in GRAPH["recon_pipeline.providers"]  # from pkg import mod
    assert sum(len(targets) for targets in GRAPH.values()) > 500


def test_every_module_has_a_floor() -> None:
    unplaced = sorted({top(module) for module in MODULES if top(module)} - FLOORS.keys())
    assert not unplaced, "\n".join(f"{name}: no floor in test_layers.FLOORS" for name in unplaced)


def test_no_import_circle() -> None:
    found = circles()
    assert not found, "\n".join("import circle: " + " -> ".join(cycle) for cycle in found)


def test_no_import_from_a_lower_floor_to_a_higher_one() -> None:
    upward = []
    for importer, imported, late in edges():
        if floor(imported) <= floor(importer):
            continue
        if late and (importer, imported) in ALLOWED_UPWARD:
            continue
        upward.append(
            f"upward import: {importer} (floor {floor(importer)}) imports {imported} "
            f"(floor {floor(imported)}){'' if late else ' at module level'}"
        )
    assert not upward, "\n".join(upward)


def test_no_two_top_level_folders_import_each_other() -> None:
    between: dict[tuple[str, str], list[str]] = defaultdict(list)
    for importer, imported, _ in edges():
        if top(importer) and top(imported) and top(importer) != top(imported):
            between[top(importer), top(imported)].append(f"{importer} -> {imported}")
    mutual = sorted(pair for pair in between if pair[0] < pair[1] and pair[::-1] in between)
    assert not mutual, "\n".join(
        f"{a} and {b} import each other: {between[a, b][0]}; {between[b, a][0]}" for a, b in mutual
    )


# The tables the pipeline writes, each owned by one module of ``storage/`` (a room per table).
PIPELINE_TABLES: dict[str, str] = {
    "discrepancies": "recon_pipeline.storage.findings",
    "adjustments": "recon_pipeline.storage.adjustments",
    "matches": "recon_pipeline.storage.matches",
    "provider_records": "recon_pipeline.storage.provider_records",
    "night_reconciliations": "recon_pipeline.storage.night_outcomes",
    "night_takings": "recon_pipeline.storage.night_takings",
}
# SQLAlchemy's statements take the table first; the house's writers (db/upsert.py, db/bulk.py) second.
STATEMENTS = {"insert": 0, "update": 0, "delete": 0, "upsert": 1, "insert_new": 1, "copy_insert_new": 1}


def table_writes(path: Path) -> Iterator[tuple[str, int]]:
    """Each pipeline table a module's code names as the target of a write, with the line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        owner = getattr(node.func, "value", None)  # ``table.insert()``: the table's own statement
        if (
            name in ("insert", "update", "delete")
            and isinstance(owner, ast.Name)
            and owner.id in PIPELINE_TABLES
        ):
            yield owner.id, node.lineno
            continue
        position = STATEMENTS.get(name)
        if position is None or len(node.args) <= position:
            continue
        target = node.args[position]
        if isinstance(target, ast.Name) and target.id in PIPELINE_TABLES:
            yield target.id, node.lineno


def test_the_parser_sees_the_writes() -> None:
    """A scan that missed every write would pass: the run's known writes are found where they are."""
    found = {table for table, _ in table_writes(MODULES["recon_pipeline.storage.findings"])}
    assert found == {"discrepancies"}
    assert {table for table, _ in table_writes(MODULES["recon_pipeline.storage.matches"])} == {"matches"}


def test_only_storage_writes_a_pipeline_table() -> None:
    """A pipeline table is written by its own room of ``storage/`` and nowhere else."""
    elsewhere = [
        f"{module}:{line} writes {table} (its room is {PIPELINE_TABLES[table]})"
        for module, path in sorted(MODULES.items())
        for table, line in table_writes(path)
        if module != PIPELINE_TABLES[table]
    ]
    assert not elsewhere, "\n".join(elsewhere)
