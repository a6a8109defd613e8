"""The README stays a five-minute read, and no page of the documentation names a path that is not there.

A path the README or a page of ``docs/`` names in backticks (``recon_pipeline/...``, ``docs/...``,
``benchmarks/...``, ``deploy/...``, ``recon_pipeline_tests/...``, a root ``*.yaml`` or ``*.toml``) or links to
must exist, and so must a module it names by its dotted name (``recon_pipeline.cli.reference``, ``python -m
benchmarks.run_all``, ``recon_pipeline_tests.support.crash_points``, possibly followed by one attribute), so
that a module moved or renamed takes its documentation with it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_README_LINES = 200


FENCED = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
REPO_PATH = re.compile(
    r"(?:recon_pipeline|recon_pipeline_tests|docs|benchmarks|deploy)/[A-Za-z0-9_./-]*|[A-Za-z0-9_.-]+\.(?:yaml|toml)"
)

DOTTED = re.compile(r"(?:recon_pipeline|recon_pipeline_tests|benchmarks)(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def documents() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def module_path(dotted: str) -> str:
    """The file of the module a dotted name names; its last part may be a name the module defines."""
    parts = dotted.split(".")
    for candidate in (f"{'/'.join(parts)}.py", f"{'/'.join(parts)}/__init__.py"):
        if (ROOT / candidate).exists():
            return candidate
    base, attribute = "/".join(parts[:-1]), parts[-1]
    defines = re.compile(
        rf"^(?:(?:async )?def|class) {attribute}\b|^{attribute}\b *[:=]|^from .* import .*\b{attribute}\b",
        re.M,
    )
    for candidate in (f"{base}.py", f"{base}/__init__.py"):
        if (ROOT / candidate).exists() and defines.search((ROOT / candidate).read_text(encoding="utf-8")):
            return candidate
    return f"{'/'.join(parts)}.py"


def named_paths(document: Path) -> list[str]:
    """Repository paths, relative to the root, that ``document`` names in code spans or links, in order."""
    text = FENCED.sub("", document.read_text(encoding="utf-8"))
    named: list[tuple[int, str]] = []
    for span in CODE_SPAN.finditer(text):
        if REPO_PATH.fullmatch(span.group(1)):
            named.append((span.start(), span.group(1)))
        for dotted in DOTTED.finditer(span.group(1)):
            named.append((span.start(), module_path(dotted.group(0))))
    for link in LINK.finditer(text):
        target = link.group(1).split("#", 1)[0]
        if not target or re.match(r"[a-z][a-z0-9+.-]*:", target):  # an anchor on the page, or a URL
            continue
        resolved = (document.parent / target).resolve()
        named.append((link.start(), resolved.relative_to(ROOT).as_posix()))
    return [path for _, path in sorted(named)]


def test_the_readme_is_a_five_minute_read() -> None:
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines, more than {MAX_README_LINES}"


def test_every_path_the_documentation_names_exists() -> None:
    missing = [
        f"{document.relative_to(ROOT)} names {path}, which does not exist"
        for document in documents()
        for path in named_paths(document)
        if not (ROOT / path).exists()
    ]
    assert not missing, "\n".join(missing)
