"""The posting crash window in CI: a poster process SIGKILLed at each point of a post (before send; the
PMS accepted, the answer not back; the answer in hand, not committed; committed, not acknowledged), a few
trials per point on PostgreSQL through both adapters, then a fresh drainer: no posting twice in the PMS,
every adjustment ``posted``, no ``unknown`` left (``postings_crash`` holds the machinery;
``benchmarks/postings_crash`` runs 50 per point)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recon_pipeline_tests.support.postings_crash import ADAPTERS, POINTS, run_point_trials
from recon_pipeline_tests.support.warm_children import crash_seed, warm_up

TRIALS_PER_POINT = 3


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_poster_killed_at_each_point_never_posts_twice_and_leaves_nothing_unknown(
    tmp_path: Path, adapter: str
) -> None:
    seed = crash_seed()
    warm_up()
    figures = run_point_trials(tmp_path, adapter, TRIALS_PER_POINT, seed)
    assert [figures[point]["trials"] for point in POINTS] == [TRIALS_PER_POINT] * len(POINTS)
    assert (figures["duplicates_in_pms"], figures["unknown_left"]) == (0, 0)
    print(f"posting crash trials ({adapter}, seed {seed}): {figures}")
