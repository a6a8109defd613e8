"""The tests' own layout (issue 25): a test module sits in the folder of the product area it tests
(``recon_pipeline_tests/<area>/test_*.py``, the area a folder or module of ``recon_pipeline`` or one of the
few areas outside it), and shares builders only through ``recon_pipeline_tests/support``: no module of the
tests imports a test module, so moving or deleting one never breaks another."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
PACKAGE = TESTS.parent / "recon_pipeline"
# Areas that are no folder of the package: its vocabulary modules at the root, the simulated world and
# the command line (whatever shape they have in the package), and the benchmark scripts (``benchmarks/``).
AREAS_OUTSIDE_PACKAGE = ("core", "simulation", "cli", "benchmarks")
NOT_AREAS = ("support", "data")


def _modules() -> list[Path]:
    return sorted(path for path in TESTS.rglob("*.py") if "__pycache__" not in path.parts)


def _is_area(folder: str) -> bool:
    if folder in NOT_AREAS:
        return False
    if folder in AREAS_OUTSIDE_PACKAGE:
        return True
    return (PACKAGE / folder / "__init__.py").is_file() or (PACKAGE / f"{folder}.py").is_file()


def _imported(path: Path) -> list[str]:
    """Every module of the tests ``path`` imports, dotted (``from a import b`` names both ``a`` and ``a.b``;
    a relative import keeps its leading dots)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            names.append(module)
            names.extend(f"{module.rstrip('.')}.{alias.name}" for alias in node.names)
    return [name for name in names if name.startswith(("recon_pipeline_tests.", "."))]


def _names_a_test_module(name: str) -> bool:
    return any(part.startswith("test_") for part in name.split("."))


def test_every_test_module_sits_in_an_area_folder() -> None:
    misplaced = []
    for path in _modules():
        if not path.name.startswith("test_"):
            continue
        relative = path.relative_to(TESTS)
        if len(relative.parts) != 2 or not _is_area(relative.parts[0]):
            misplaced.append(str(relative))
        elif not (path.parent / "__init__.py").is_file():
            misplaced.append(f"{relative} (its folder has no __init__.py)")
    assert not misplaced, f"test modules outside an area folder: {misplaced}"


def test_no_module_of_the_tests_imports_a_test_module() -> None:
    offenders = []
    for path in _modules():
        for name in _imported(path):
            if _names_a_test_module(name):
                offenders.append(f"{path.relative_to(TESTS)} imports {name}")
    assert not offenders, f"move shared helpers into recon_pipeline_tests/support: {offenders}"
