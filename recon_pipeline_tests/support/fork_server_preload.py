"""What the warm children's fork server imports before it forks any child (see ``warm_children``).

Besides the child entry points, Dagster imports much on first use in a process: the storage backends,
alembic's migration scripts, the execution machinery. One throwaway materialization on a throwaway local
instance loads all of it here, once, so a child's first real run does not pay ~1 s for it (measured:
opening the instance drops from ~0.6 s to ~0.05 s). It leaves no thread behind, so forking stays safe.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import dagster as dg
import dagster_postgres  # noqa: F401  (the children's instances are PostgreSQL-backed)

import recon_pipeline_tests.support.warm_children  # noqa: F401  (the entry points the children run)


@dg.asset
def warm_up_asset() -> int:
    return 1


def _warm_dagster() -> None:
    with tempfile.TemporaryDirectory() as home:
        (Path(home) / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        with dg.DagsterInstance.from_config(home) as instance:
            if not dg.materialize([warm_up_asset], instance=instance).success:
                raise RuntimeError("the fork server's warm-up materialization failed")


_warm_dagster()
