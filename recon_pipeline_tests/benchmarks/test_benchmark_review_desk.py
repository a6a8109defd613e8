"""The review desk benchmark (``benchmarks/review_desk.py``) still seeds, serves and times every page at a
tiny size, and every page and export answered 200 for both users; its timings are printed, never
asserted."""

from __future__ import annotations

import pytest

from benchmarks import review_desk
from recon_pipeline_tests.support.benchmark_runs import benchmark_json


@pytest.mark.postgres
@pytest.mark.slow
def test_review_desk_benchmark_serves_every_page_to_both_users(postgres_url: str) -> None:
    figures = benchmark_json(
        "benchmarks.review_desk",
        "--properties",
        "5",
        "--nights",
        "2",
        "--requests",
        "2",
        "--export-requests",
        "1",
        timeout_s=300,
    )
    print(review_desk.markdown(figures))
    assert figures["all_200"] is True
    timed = figures["users"]
    assert set(timed) == {review_desk.ADMIN, review_desk.ANALYST}
    for pages in timed.values():
        assert set(pages) == set(review_desk.PAGE_ORDER) and all(
            page["statuses"] == {"200": page["requests"]} for page in pages.values()
        )
    per_night = review_desk.FINDINGS_PER_NIGHT
    assert figures["seeded"]["findings"] == 5 * 2 * per_night
    # The admin exports all the fleet's findings, the analyst only its one property's.
    assert timed[review_desk.ADMIN]["findings.csv"]["rows"] == 5 * 2 * per_night
    assert timed[review_desk.ADMIN]["findings.xlsx"]["rows"] == 5 * 2 * per_night
    assert timed[review_desk.ANALYST]["findings.csv"]["rows"] == 2 * per_night
