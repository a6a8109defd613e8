"""What every `recon` command module shares: the exit codes, the database a command works on, and the one
reading of an error the user can act on (``main`` prints it; ``reconcile-night`` also notes it)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeAlias

from recon_pipeline import config
from recon_pipeline.errors import ServiceUnavailable

if TYPE_CHECKING:
    from sqlalchemy import Engine

Handler = Callable[[argparse.Namespace], int]
# The subparsers of the `recon` parser: each command module adds its commands to them. A string: the class
# is not subscriptable at run time.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
BAD_INPUT_EXIT = 2
FAILED_EXIT = 1


@contextmanager
def recon_database() -> Iterator[Engine]:
    """An engine on RECON_DATABASE_URL, disposed after the command (its errors are reported by main)."""
    from recon_pipeline.db.engine import make_engine

    engine = make_engine(config.database_url())
    try:
        yield engine
    finally:
        engine.dispose()


def reported(error: Exception) -> tuple[str, int] | None:
    """The one-line reason and exit code of an error the user can act on; None for a bug."""
    from sqlalchemy.exc import SQLAlchemyError

    from recon_pipeline.db.engine import database_failure

    if isinstance(error, SQLAlchemyError):
        error = database_failure(error, config.database_url())
    if isinstance(error, ServiceUnavailable):
        code = FAILED_EXIT
    elif isinstance(error, ValueError | LookupError | OSError):  # ConfigError is a ValueError
        code = BAD_INPUT_EXIT
    else:
        return None
    lines = str(error).strip().splitlines() or [type(error).__name__]
    return lines[0], code


def acting_reviewer(by: str | None) -> str:
    """Who acts: ``--by``, else the login name ($USER, then $LOGNAME), validated (ReviewError, one line)."""
    from recon_pipeline.review.rules import validate_reviewer

    return validate_reviewer(by or os.environ.get("USER") or os.environ.get("LOGNAME"))
