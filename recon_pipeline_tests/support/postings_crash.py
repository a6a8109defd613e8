"""The posting crash window (issue 15), shared by ``test_postings_crash`` (a few trials per point, CI) and
``benchmarks/postings_crash`` (50 per point): a poster process is SIGKILLed at each point of a post, a
fresh drainer then runs, and nothing may be posted twice, lost, or left ``unknown``.

The poster is a real process: a warm child (``warm_children.run_poster``) executing a ``post_adjustments``
run against PostgreSQL, posting through the configured adapter — ``http`` to the PMS simulator served in
this process on 127.0.0.1, or ``sql`` into the database's ``ledger_entries``. Each trial approves
``ADJUSTMENTS`` adjustments; the poster claims them in one batch and posts them one at a time, and dies at
the ``hit``-th (drawn at random) at one of the points:

- ``postings.before_send``: claimed, nothing sent;
- ``postings.pms_accepted``: the PMS holds the posting, the answer has not reached the poster. ``sql``: a
  checkpoint right after the PMS's insert committed. ``http``: the simulator stores the charge and hangs
  before answering (``accept_then_hang``); this process SIGKILLs the poster as soon as the simulator
  reports the charge stored, so the death lands while the answer is still owed;
- ``postings.answered``: the answer is in hand, the outbox row not yet written;
- ``postings.committed``: the outbox row committed, the run's report (the acknowledgement) not done.

What the death left is checked exactly (which rows are posted, which the PMS holds), then a drainer whose
clock is past the dead poster's lease drains once: every row it finds claimed is looked up, never posted
blind; a key the PMS does not hold goes back to ``approved`` and is posted in the same drain.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine, func, select

from recon_pipeline.checkpoints import (
    POSTING_ANSWERED,
    POSTING_BEFORE_SEND,
    POSTING_COMMITTED,
    POSTING_PMS_ACCEPTED,
)
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import ledger_entries
from recon_pipeline.db.schema import posting_outbox as outbox
from recon_pipeline.postings.drain import DrainCounts, drain
from recon_pipeline.postings.factory import build_adapter
from recon_pipeline.postings.http_adapter import folio_id
from recon_pipeline.postings.outbox import PostingPolicy
from recon_pipeline.postings.sql_adapter import entry_id_for
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.pms.app import build_pms_app
from recon_pipeline_tests.support.crash_points import crash_env
from recon_pipeline_tests.support.dagster_processes import wait_until
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.postgres import postgres_database
from recon_pipeline_tests.support.posting_fixtures import approve
from recon_pipeline_tests.support.warm_children import (
    Child,
    PosterSpec,
    inherited_env,
    run_poster,
    start_child,
)

POINTS = (POSTING_BEFORE_SEND, POSTING_PMS_ACCEPTED, POSTING_ANSWERED, POSTING_COMMITTED)
ADAPTERS = ("http", "sql")
ADJUSTMENTS = 3  # per trial: the death lands at the first, a middle or the last post of the claimed batch
API_KEY = "crash_pms_key"
LEASE = timedelta(seconds=60)
HANG_S = 1.0  # the simulator's hang after accepting: the window the external kill must land in
KILLED = -9
CHILD_TIMEOUT_S = 120.0
FOLIO = folio_id("P1", "2026-12-01")  # approve()'s property and night
RERUN_POLICY = PostingPolicy(max_attempts=3, lease=LEASE)


@dataclass(frozen=True)
class PostingTrial:
    """One kill: the poster dies at ``point`` during its ``hit``-th post."""

    index: int
    seed: int
    adapter: str
    point: str
    hit: int

    @property
    def external(self) -> bool:
        """The http PMS's accept-before-answer window is in the simulator: this process kills the poster."""
        return self.adapter == "http" and self.point == POSTING_PMS_ACCEPTED

    def describe(self) -> str:
        return (
            f"{self.adapter} {self.point} at post {self.hit} (seed={self.seed} trial={self.index}); "
            f"replay with RECON_CRASH_SEED={self.seed}"
        )


def draw_trials(adapter: str, per_point: int, seed: int) -> list[PostingTrial]:
    """``per_point`` trials at each point, the post the death comes at drawn from ``seed``."""
    rng = random.Random(f"{seed}-{adapter}")
    return [
        PostingTrial(n * len(POINTS) + p, seed, adapter, point, rng.randint(1, ADJUSTMENTS))
        for n in range(per_point)
        for p, point in enumerate(POINTS)
    ]


@dataclass
class PostingCrashHarness:
    engine: Engine
    adapter: str
    pms_url: str
    control: httpx.Client
    env: dict[str, str]
    logs: Path

    def approve_trial(self, trial: PostingTrial) -> list[str]:
        """The trial's approved adjustments, in the order the poster claims and posts them."""
        ids = [approve(self.engine, f"ch_{trial.index:03d}_{n}") for n in range(ADJUSTMENTS)]
        return sorted(ids)  # approved at the same instant: claimed in adjustment id order

    def outbox_rows(self, ids: list[str]) -> list[dict[str, Any]]:
        with self.engine.connect() as connection:
            rows = connection.execute(select(outbox).where(outbox.c.adjustment_id.in_(ids))).mappings()
            by_id = {row["adjustment_id"]: dict(row) for row in rows}
        return [by_id[i] for i in ids]

    def pms_holds(self, keys: list[str]) -> Counter[str]:
        """How many postings the PMS holds under each key (a duplicate shows as 2)."""
        if self.adapter == "sql":
            entries = {entry_id_for(key): key for key in keys}
            with self.engine.connect() as connection:
                found = connection.execute(
                    select(ledger_entries.c.entry_id).where(ledger_entries.c.entry_id.in_(list(entries)))
                ).scalars()
                return Counter(entries[entry] for entry in found)
        response = self.control.get(
            f"/finance/v1/folios/{FOLIO}", headers={"Authorization": f"Bearer {API_KEY}"}
        )
        if response.status_code == 404:
            return Counter()
        numbers = [charge["receipt"]["number"] for charge in response.raise_for_status().json()["charges"]]
        return Counter(number for number in numbers if number in keys)

    def pms_stats(self) -> dict[str, Any]:
        """The simulator's counters (``http``); the ``sql`` PMS keeps none."""
        if self.adapter != "http":
            return {}
        return dict(self.control.get("/_simulator/stats").raise_for_status().json())

    def posts_sent(self) -> int:
        """Charge posts the http PMS received (0 for ``sql``)."""
        path = f"/finance/v1/folio-actions/{FOLIO}/charges"
        return int(self.pms_stats().get("requests_by_path", {}).get(path, 0))

    def poster(self, trial: PostingTrial) -> Child:
        crash = {} if trial.external else crash_env(trial.point, trial.hit)
        spec = PosterSpec({**self.env, **crash}, self.logs / f"{self.adapter}-{trial.index}.log")
        return start_child(run_poster, spec)

    def rerun(self) -> DrainCounts:
        """A drainer that comes after the dead poster's lease ran out."""
        adapter = build_adapter(self.adapter, self.engine, self.pms_url, API_KEY, 10.0)
        later = datetime.now(UTC) + LEASE + timedelta(seconds=1)
        try:
            return drain(
                self.engine, adapter, "rerun", policy=RERUN_POLICY, concurrency=2, clock=lambda: later
            )
        finally:
            close = getattr(adapter, "close", None)
            if close is not None:
                close()


@contextmanager
def posting_crash_harness(tmp_path: Path, adapter: str) -> Iterator[PostingCrashHarness]:
    with (
        postgres_database("recon_postcrash") as url,
        ServerThread(build_pms_app(API_KEY)) as pms,
        loopback_client(base_url=pms.base_url) as control,
    ):
        engine = make_engine(url)
        try:
            migrations.upgrade(engine)
            env = inherited_env(
                RECON_DATABASE_URL=url,
                RECON_POSTING_ADAPTER=adapter,
                RECON_PMS_POSTING_URL=pms.base_url,
                RECON_PMS_API_KEY=API_KEY,
                RECON_POSTING_LEASE_S=str(int(LEASE.total_seconds())),
            )
            yield PostingCrashHarness(engine, adapter, pms.base_url, control, env, tmp_path / "logs")
        finally:
            engine.dispose()


@dataclass(frozen=True)
class TrialOutcome:
    """What one trial's death left and what the fresh drainer did about it."""

    committed_at_death: int  # rows the dead poster had settled
    held_at_death: int  # postings the PMS held when it died
    looked_up: int  # claimed rows the fresh drainer looked up
    reposted: int  # of those, found missing in the PMS and posted afresh


def run_trial(h: PostingCrashHarness, trial: PostingTrial) -> TrialOutcome:
    """Kill a poster at the trial's point, check what it left, drain again, check the end."""
    what = trial.describe()
    ids = h.approve_trial(trial)
    keys = [row["idempotency_key"] for row in h.outbox_rows(ids)]
    posts_before = h.posts_sent()
    stored_before = h.pms_stats().get("postings_stored", 0)
    if trial.external:
        h.control.post("/_simulator/faults", json={"accept_then_hang": trial.hit, "hang_s": HANG_S})
    child = h.poster(trial)
    if trial.external:
        wait_until(
            f"{what}: the PMS storing post {trial.hit}",
            lambda: True if h.pms_stats()["postings_stored"] >= stored_before + trial.hit else None,
            CHILD_TIMEOUT_S,
            interval_s=0.005,
        )
        child.process.kill()
    exitcode = child.wait(CHILD_TIMEOUT_S)
    assert exitcode == KILLED, f"{what}: the poster lived past its point, exit {exitcode}\n{child.tail()}"

    # What the death left: a prefix of the batch settled, a prefix one longer held by the PMS.
    committed = trial.hit if trial.point == POSTING_COMMITTED else trial.hit - 1
    held = committed if trial.point == POSTING_BEFORE_SEND else trial.hit
    at_death = h.outbox_rows(ids)
    states = [row["state"] for row in at_death]
    assert states == ["posted"] * committed + ["posting"] * (ADJUSTMENTS - committed), f"{what}: {states}"
    assert h.pms_holds(keys) == Counter(keys[:held]), f"{what}: the PMS holds {h.pms_holds(keys)}"
    # Every post the PMS may have received was counted before it left, answered or not.
    attempts = [row["attempts"] for row in at_death]
    assert attempts == [1] * held + [0] * (ADJUSTMENTS - held), f"{what}: attempts at death {attempts}"

    counts = h.rerun()
    assert counts.to_look_up == ADJUSTMENTS - committed, f"{what}: {counts}"  # every claim left is looked up
    expected = +Counter(posted=ADJUSTMENTS - committed, approved=ADJUSTMENTS - held)  # + drops zeros
    assert counts.by_state == dict(expected), f"{what}: {counts}"
    assert counts.lost == 0, f"{what}: {counts}"

    final = h.outbox_rows(ids)
    assert [row["state"] for row in final] == ["posted"] * ADJUSTMENTS, f"{what}: {final}"
    assert h.pms_holds(keys) == Counter(keys), f"{what}: duplicates or losses: {h.pms_holds(keys)}"
    # One post per key, each counted once: a post found by lookup was never resent nor counted twice.
    assert [row["attempts"] for row in final] == [1] * ADJUSTMENTS, f"{what}: attempts {final}"
    if h.adapter == "http":
        assert h.posts_sent() - posts_before == ADJUSTMENTS, f"{what}: a charge was posted blind"
        assert h.pms_stats()["duplicates_refused"] == 0, f"{what}: a key was sent twice"
    return TrialOutcome(committed, held, ADJUSTMENTS - committed, ADJUSTMENTS - held)


def count_left(engine: Engine) -> dict[str, int]:
    """Outbox rows per state, over all trials: everything must be ``posted`` (or ``failed``)."""
    with engine.connect() as connection:
        return {
            state: int(n)
            for state, n in connection.execute(select(outbox.c.state, func.count()).group_by(outbox.c.state))
        }


def run_point_trials(tmp_path: Path, adapter: str, per_point: int, seed: int) -> dict[str, Any]:
    """Every trial of ``adapter``; the figures per point. Raises AssertionError on the first violation."""
    trials = draw_trials(adapter, per_point, seed)
    figures: dict[str, Any] = {}
    started = time.monotonic()
    with posting_crash_harness(tmp_path, adapter) as h:
        by_point: dict[str, list[TrialOutcome]] = {point: [] for point in POINTS}
        for trial in trials:
            by_point[trial.point].append(run_trial(h, trial))
        left = count_left(h.engine)
        held = h.pms_holds([row["idempotency_key"] for row in _all_rows(h.engine)])
    assert left == {"posted": len(trials) * ADJUSTMENTS}, f"{adapter}: outbox ends {left}"
    assert set(held.values()) == {1} and len(held) == len(trials) * ADJUSTMENTS, f"{adapter}: {held}"
    for point, outcomes in by_point.items():
        figures[point] = {
            "trials": len(outcomes),
            "looked_up": sum(o.looked_up for o in outcomes),
            "found_by_lookup": sum(o.looked_up - o.reposted for o in outcomes),
            "reposted_after_not_found": sum(o.reposted for o in outcomes),
        }
    figures["adjustments"] = len(trials) * ADJUSTMENTS
    figures["duplicates_in_pms"] = sum(n - 1 for n in held.values())
    figures["unknown_left"] = left.get("unknown", 0)
    figures["seconds"] = round(time.monotonic() - started, 1)
    return figures


def _all_rows(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as connection:
        return [dict(row) for row in connection.execute(select(outbox.c.idempotency_key)).mappings()]
