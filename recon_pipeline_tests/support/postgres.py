"""The test PostgreSQL: a scratch database per use, and one rule for when the server is missing.

PostgreSQL tests fail instead of skipping when ``RECON_REQUIRE_POSTGRES=1`` (set by ``.ci/run``), so CI
can never pass by not running them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest
from sqlalchemy.exc import OperationalError

from recon_pipeline_tests.support.scratch import DEFAULT_ADMIN_URL, scratch_database


def admin_url() -> str:
    return os.environ.get("RECON_TEST_POSTGRES_URL", DEFAULT_ADMIN_URL)


@contextmanager
def postgres_database(prefix: str = "recon_test") -> Iterator[str]:
    """A scratch database's URL; skips (or fails under CI) when PostgreSQL is unreachable."""
    with ExitStack() as stack:
        try:
            url = stack.enter_context(scratch_database(admin_url(), prefix))
        except OperationalError as error:
            reason = str(error).splitlines()[0]
            if os.environ.get("RECON_REQUIRE_POSTGRES") == "1":
                pytest.fail(f"PostgreSQL is required here but unavailable: {reason}")
            pytest.skip(f"PostgreSQL unavailable: {reason}")
        yield url
