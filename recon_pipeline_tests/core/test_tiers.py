"""The tiers conftest assigns: a new test is ``fast`` (``pytest -m fast``) unless it is marked, or uses a
fixture that puts it in ``postgres`` or ``slow``. Pytest itself (``pytester``) collects a small test file
with this suite's ``pytest_collection_modifyitems``, and the markers on its items are read back."""

from __future__ import annotations

import pytest

TIERS = ("fast", "postgres", "slow")
TIERED_FILE = """
import pytest

@pytest.fixture
def postgres_url():
    return "postgresql://"

@pytest.fixture
def seeded_pipeline():
    return None

def test_plain():
    pass

@pytest.mark.slow
def test_marked_slow():
    pass

@pytest.mark.postgres
def test_marked_postgres():
    pass

def test_on_postgres(postgres_url):
    pass

def test_through_dagster(seeded_pipeline):
    pass

@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_both_backends(backend):
    pass
"""


def test_unmarked_tests_are_fast_and_fixtures_put_tests_in_their_tier(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "from recon_pipeline_tests.conftest import pytest_collection_modifyitems  # noqa: F401\n"
    )
    pytester.makepyfile(test_tiered=TIERED_FILE)
    items, _ = pytester.inline_genitems("-p", "no:cacheprovider")
    tiers = {
        item.name: sorted(name for name in TIERS if item.get_closest_marker(name) is not None)
        for item in items
    }
    assert tiers == {
        "test_plain": ["fast"],
        "test_marked_slow": ["slow"],
        "test_marked_postgres": ["postgres"],
        "test_on_postgres": ["postgres"],
        "test_through_dagster": ["slow"],
        "test_both_backends[sqlite]": ["fast"],
        "test_both_backends[postgres]": ["postgres"],
    }
