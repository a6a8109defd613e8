"""Databases migrated to head, quickly: a SQLite file starts as a copy of one migrated template.

Migrating an empty SQLite file runs every revision (~35 ms of DDL), and the fast tier does it for
hundreds of tests. The template is migrated once per process by the same ``migrations.upgrade``; a
copy of it is byte for byte what that upgrade would have made. PostgreSQL databases are upgraded.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from sqlalchemy import Engine

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine

SQLITE = "sqlite:///"


@functools.cache
def _template() -> Path:
    """A SQLite file migrated to head, made once per process and removed when it exits."""
    folder = Path(
        tempfile.mkdtemp(prefix="recon_template_", dir="/dev/shm" if Path("/dev/shm").is_dir() else None)
    )
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = folder / "template.sqlite"
    engine = make_engine(f"{SQLITE}{path}")
    try:
        migrations.upgrade(engine)
    finally:
        engine.dispose()
    return path


def migrated_engine(url: str) -> Engine:
    """An engine on ``url`` at the newest revision: a new SQLite file is a copy of the template, anything
    else (an existing file, PostgreSQL) is upgraded."""
    path = Path(url.removeprefix(SQLITE)) if url.startswith(SQLITE) else None
    if path is not None and not path.exists():
        shutil.copyfile(_template(), path)
        return make_engine(url)
    engine = make_engine(url)
    migrations.upgrade(engine)
    return engine
