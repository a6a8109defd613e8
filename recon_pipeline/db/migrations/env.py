"""Alembic's environment for the reconciliation tables, online only: the caller hands over a connection.

``recon_pipeline.db.migrations`` puts the connection in ``config.attributes``; nothing here reads a URL
or the environment, so the same scripts serve ``recon db init``, tests and benchmarks on SQLite and
PostgreSQL. Revisions render as batch operations so that an ALTER on SQLite becomes Alembic's
copy-and-move where SQLite has no ALTER of its own.
"""

from __future__ import annotations

from typing import Any, Literal

from alembic import context
from alembic.autogenerate.api import AutogenContext

from recon_pipeline.db.schema import metadata
from recon_pipeline.db.types import UtcDateTime


def render_item(kind: str, item: Any, _autogen_context: AutogenContext) -> str | Literal[False]:
    """Our UTC type as the plain column type it creates, so a revision never imports the package's
    Python types (a revision is frozen; the type's Python behaviour is not part of the schema)."""
    if kind == "type" and isinstance(item, UtcDateTime):
        return "sa.DateTime(timezone=True)"
    return False


connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("recon's migrations run online only: use recon_pipeline.db.migrations.upgrade(engine)")
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,
    render_item=render_item,
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
