"""Each requester's share of the desk's page time (``review_desk/shares.py``), on its own: the time is
given, nothing waits."""

from __future__ import annotations

import pytest

from recon_pipeline.review_desk.shares import ShareLimits, WorkShares

LIMITS = ShareLimits(share=0.25, burst_s=1.0, max_wait_s=4.0, others_s=60.0)


def shares_with_another_at_the_desk(now: float = 0.0) -> WorkShares:
    """Shares where ``bea`` just had a page, so ``admin`` is not alone."""
    shares = WorkShares(LIMITS)
    shares.charge("bea", 0.05, now)
    return shares


@pytest.mark.fast
def test_a_requester_under_its_share_never_waits() -> None:
    shares = shares_with_another_at_the_desk()
    assert shares.wait_for("admin", 0.0) == 0.0  # never seen
    shares.charge("admin", 0.6, 1.0)
    shares.charge("admin", 0.4, 1.0)
    assert shares.wait_for("admin", 1.0) == 0.0  # exactly its burst: not over it


@pytest.mark.fast
def test_one_over_its_share_waits_until_it_has_drained_back_under() -> None:
    shares = shares_with_another_at_the_desk()
    shares.charge("admin", 1.5, 10.0)
    assert shares.wait_for("admin", 10.0) == pytest.approx(2.0)  # 0.5 s over, draining 0.25 s a second
    assert shares.wait_for("admin", 11.0) == pytest.approx(1.0)
    assert shares.wait_for("admin", 12.0) == 0.0
    assert shares.wait_for("bea", 10.0) == 0.0  # the others' pages are not held up


@pytest.mark.fast
def test_a_wait_is_bounded_however_long_the_requests_ran() -> None:
    shares = shares_with_another_at_the_desk()
    shares.charge("admin", 600.0, 1.0)
    shares.charge("admin", 600.0, 1.0)
    assert shares.wait_for("admin", 1.0) == pytest.approx(LIMITS.max_wait_s)
    assert shares.wait_for("admin", 1.0 + LIMITS.max_wait_s) == 0.0


@pytest.mark.fast
def test_a_requester_alone_at_the_desk_never_waits() -> None:
    shares = WorkShares(LIMITS)
    shares.charge("admin", 3.0, 1.0)
    assert shares.wait_for("admin", 1.0) == 0.0
    shares.charge("bea", 0.05, 1.0)  # someone else comes to the desk: admin's share counts again
    assert shares.wait_for("admin", 1.0) == pytest.approx(4.0)
    assert shares.wait_for("admin", 1.0 + LIMITS.others_s + 0.1) == 0.0  # and bea has gone


@pytest.mark.fast
def test_back_to_back_requests_get_the_share_and_no_more() -> None:
    """An admin's cheap searches one after another, each waiting what it is told, beside an analyst who
    has a page every second: over ten minutes the admin's page time is its share of the time, plus the
    burst it may run ahead by."""
    shares = WorkShares(LIMITS)
    now, admin_s, next_analyst = 0.0, 0.0, 0.0
    while now < 600.0:
        if now >= next_analyst:
            shares.charge("analyst", 0.03, now)
            next_analyst += 1.0
        now += shares.wait_for("admin", now) + 0.05
        shares.charge("admin", 0.05, now)
        admin_s += 0.05
    assert admin_s == pytest.approx(LIMITS.share * 600.0 + LIMITS.burst_s, abs=0.1)


@pytest.mark.fast
def test_requesters_idle_for_a_while_are_forgotten() -> None:
    shares = WorkShares(LIMITS)
    for index in range(1_000):
        shares.charge(f"client:10.0.{index // 256}.{index % 256}", 0.05, index / 100)
    assert len(shares) == 1_000
    shares.charge("bea", 0.05, 9.99 + LIMITS.others_s + 1.0)
    assert len(shares) == 1  # every address idle past others_s, with nothing left to drain
    shares.charge("admin", 3.0, 100.0)
    shares.charge("bea", 0.05, 100.0 + LIMITS.others_s + 1.0)
    assert len(shares) == 1


@pytest.mark.fast
def test_share_limits_are_checked() -> None:
    for bad in ({"share": 0.0}, {"share": 1.5}, {"burst_s": -1.0}, {"max_wait_s": -0.1}):
        with pytest.raises(ValueError, match="a share is over"):
            ShareLimits(**bad)  # type: ignore[arg-type]
    assert LIMITS.most_used_s == pytest.approx(1.0 + 0.25 * 4.0)  # enough for a wait of max_wait_s
