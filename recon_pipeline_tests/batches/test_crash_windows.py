"""Crash windows: the run process is SIGKILLed around its durable commit, then the work is re-run; nothing
is duplicated, nothing is lost, no event takes effect twice. 50 seeded trials per stage, on PostgreSQL.

What "acknowledgement" means, per stage:

- Writer (the ``reconcile_batch`` step, which materializes ``adjustments`` for a batch of properties):
  the batch's one write transaction (``batches/write.py``; one per property only when the batch's fails)
  vs the materialization Dagster records for the step (ASSET_MATERIALIZATION, STEP_SUCCESS, RUN_SUCCESS)
  once the whole batch is done, and vs the batch's ``night_reconciliations`` rows, written just before. A
  death in between leaves committed rows Dagster never heard of (every property's; some, where the write
  fell back), under a run that stays STARTED for ever (nothing in the dead process can report it; run
  monitoring or an operator must fail it). The re-run of the batch finds every committed row there and
  reports it unchanged; the rows keep the dead run's id.
- Processor (``recon_pipeline.events``): an event's one transaction (payment order, booking confirmation,
  stale night, processed mark) vs everything after it: the next events of the claimed batch (still
  ``processing`` under the dead worker's lease), the batches after, the counts it would print. Effect and
  processed mark share the transaction, so there is no window between them; a death after the commit only
  leaves claims, which are due again when the lease ends and are then processed once, by whoever comes.

Each trial kills one real process. Trials cycle through three kinds; the rest is drawn from a seeded RNG:

- a checkpoint (``recon_pipeline.checkpoints``) armed by ``crash_points`` at ``*.before_commit`` (all
  written, nothing committed) or at ``*.committed`` (the window). Writer: the batch at random (one to
  every property of the night), its one write the hit (all of its properties die uncommitted, or all
  committed). Processor: the hit at random among the trial's 11
  effectful events, so the death lands at any position of a claimed batch;
- an external SIGKILL at a random delay: for the writer between the step's start and the end of an
  uninterrupted child's life (medians of three measured first), so deaths land during the pulls,
  between or in the properties' commits, in Dagster's event writes or at the exit; for the processor
  anywhere in the worker's life.
  Where each death landed is read back from the database and the instance, and counted.

The killed processes are warm forks (``warm_children``), ~20 ms to start instead of seconds, which is what
lets 2 × 50 trials fit the budget. A writer child executes a real Dagster run of ``reconcile_night`` in
itself, as a run worker does: the batch step, from the provider pull to the writes. All 50 writer trials
kill such a run. A processor child runs the standalone worker's ``main`` (``python -m
recon_pipeline.events.worker``; the Dagster op calls the same ``process_available``). The re-run after
each trial is a run of the same batch in the test process (writer), or ``process_available`` in the test
process with its clock past the dead worker's lease (processor): the worker that comes later.

Replay a failure with ``RECON_CRASH_SEED=<seed in the message>``: the same trials are drawn (the external
delays scale with the durations measured in that run).
"""

from __future__ import annotations

import json
import random
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from sqlalchemy import Engine, delete, func, insert, select, text

from recon_pipeline import checkpoints
from recon_pipeline.checkpoints import (
    ADJUSTMENTS_BEFORE_COMMIT,
    ADJUSTMENTS_COMMITTED,
    EVENT_BEFORE_COMMIT,
    EVENT_COMMITTED,
)
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import (
    adjustments,
    booking_confirmations,
    bookings,
    payment_event_processing,
    payment_orders,
    properties,
    stale_nights,
)
from recon_pipeline.definitions import build_definitions
from recon_pipeline.defs.batches import BATCH_OP, batch_run_config
from recon_pipeline.events.processor import process_available
from recon_pipeline.events.store import ReceivedEvent, store_events
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.stripe.client import StripeAdapter
from recon_pipeline.providers.stripe.webhook import parse_event as parse_stripe_event
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline.simulation.host.store import SimulatorStore
from recon_pipeline.storage.night_outcomes import SUCCEEDED, PropertyOutcome, load_outcomes
from recon_pipeline_tests.support.crash_points import CrashAt, arm_from, crash_env
from recon_pipeline_tests.support.dagster_processes import (
    ADJUSTED_CATEGORIES,
    JOB_NAME,
    NightsWorld,
    build_nights_world,
    recon_env,
    seed_database,
    wait_until,
)
from recon_pipeline_tests.support.postgres import postgres_database
from recon_pipeline_tests.support.provider_fixtures import FAST_RETRY, make_charge, make_payment_intent
from recon_pipeline_tests.support.warm_children import (
    Child,
    RunSpec,
    WorkerSpec,
    crash_seed,
    execute_partition,
    inherited_env,
    reported_metadata,
    run_event_worker,
    start_child,
    warm_up,
)

TRIALS = 50
KILLED = -9  # a child's exit code after SIGKILL
CHILD_TIMEOUT_S = 120.0  # per child; a trial's child normally lives well under a second


# ----- trials -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Trial:
    """One kill: at a crash point's ``after``-th hit, or externally ``kill_after_s`` into the child's life."""

    index: int
    seed: int
    point: str | None
    after: int = 1
    kill_after_s: float | None = None

    def env(self) -> dict[str, str]:
        return crash_env(self.point, self.after)

    def describe(self) -> str:
        how = (
            f"{self.point} hit {self.after}"
            if self.point
            else f"external SIGKILL at {self.kill_after_s:.3f}s"
        )
        return f"seed={self.seed} trial={self.index} ({how}); replay with RECON_CRASH_SEED={self.seed}"


def draw_trial(
    rng: random.Random, seed: int, index: int, points: tuple[str, str], hits: int, window: tuple[float, float]
) -> Trial:
    """Trial ``index``: before-commit, committed and external kills in turn; the hit (1..``hits``) and the
    delay (within ``window`` seconds of the child's start) at random."""
    kind = index % 3
    if kind == 2:
        return Trial(index, seed, None, kill_after_s=rng.uniform(*window))
    return Trial(index, seed, points[kind], after=rng.randint(1, hits))


def wait_child(child: Child, trial: Trial) -> int:
    exitcode = child.wait(CHILD_TIMEOUT_S, trial.kill_after_s)
    if trial.point is not None:
        assert exitcode == KILLED, (
            f"{trial.describe()}: crash point not reached, exit {exitcode}\n{child.tail()}"
        )
    else:
        assert exitcode in (KILLED, 0), f"{trial.describe()}: child failed, exit {exitcode}\n{child.tail()}"
    return exitcode


def wait_for_dead_sessions(engine: Engine) -> None:
    """Wait (bounded) until PostgreSQL has ended the killed child's sessions.

    A SIGKILLed child's backend notices the closed socket a moment later: until then it still holds the
    row locks a re-run's ``SKIP LOCKED`` claim would pass over, and a COMMIT it already received may not be
    visible yet. What the death left is read, and the re-run starts, only once no other session of this
    database is inside a transaction."""
    if engine.dialect.name != "postgresql":
        return
    query = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
    )
    with engine.connect() as connection:

        def ended() -> bool | None:
            busy = connection.execute(query).scalar_one()
            connection.rollback()  # a fresh snapshot of pg_stat_activity per poll
            return True if busy == 0 else None

        wait_until("the killed child's database sessions to end", ended, CHILD_TIMEOUT_S, interval_s=0.02)


def test_checkpoints_are_inert_unless_a_test_arms_them_and_a_misspelt_switch_is_an_error() -> None:
    """Production installs no hook; a typo in a trial's variables must fail, not silently disarm it."""
    assert checkpoints.hook is None
    checkpoints.reached(EVENT_COMMITTED)  # this process lives on
    try:
        assert arm_from({}) is None and checkpoints.hook is None
        armed = arm_from(crash_env(EVENT_COMMITTED, 3))
        assert armed == CrashAt(EVENT_COMMITTED, 3) and checkpoints.hook is armed
        checkpoints.reached(EVENT_BEFORE_COMMIT)  # another checkpoint: not counted
        checkpoints.reached(EVENT_COMMITTED)
        checkpoints.reached(EVENT_COMMITTED)  # the second of three hits: still alive
        assert armed.hits == 2
        for point, after, error in [
            ("events.comitted", "1", "not a checkpoint"),
            (EVENT_COMMITTED, "0", "positive"),
        ]:
            with pytest.raises(ValueError, match=error):
                arm_from({"RECON_CRASH_POINT": point, "RECON_CRASH_AFTER": after})
    finally:
        checkpoints.hook = None


# ----- writer stage -------------------------------------------------------------------------------------
WRITER_NIGHT = date(2026, 11, 30)
WRITER_BOOKINGS = 8
WRITER_ASSET = "adjustments"  # one of the three assets the batch step materializes
ADJUSTMENT_FACTS = (
    "idempotency_key",
    "kind",
    "provider_record_id",
    "ledger_entry_id",
    "amount_minor",
    "currency",
)


@dataclass
class WriterHarness:
    """The seeded world, the recon database, the Dagster instance, the job (for runs in this process: setup
    and re-runs) and the environment of the run children (the runs that are killed)."""

    world: NightsWorld
    engine: Engine
    instance: dg.DagsterInstance
    job: dg.JobDefinition
    env: dict[str, str]
    logs: Path
    planned: dict[str, set[tuple[Any, ...]]] = field(default_factory=dict)  # per property, the first run's

    def materialize(self, batch: tuple[str, ...]) -> str:
        """A run of the night for ``batch`` in this process, to success; its run id."""
        result = self.job.execute_in_process(
            partition_key=WRITER_NIGHT.isoformat(),
            run_config=batch_run_config(batch),
            instance=self.instance,
        )
        assert result.success
        return result.run_id

    def run_in_child(
        self, batch: tuple[str, ...], crash: dict[str, str], name: str, workers: int | None = None
    ) -> tuple[str, Child]:
        """A run of the night for ``batch`` in a child, armed by ``crash`` (``Trial.env``); the run id is
        chosen up front, so a run killed before it reported anything can still be looked up."""
        run_id = str(uuid.uuid4())
        spec = RunSpec(
            {**self.env, **crash},
            self.logs / f"{name}.log",
            WRITER_NIGHT.isoformat(),
            run_id,
            batch,
            workers,
        )
        return run_id, start_child(execute_partition, spec)

    def rows(self, property_id: str, columns: tuple[str, ...] = ADJUSTMENT_FACTS) -> set[tuple[Any, ...]]:
        query = select(*(adjustments.c[name] for name in columns)).where(
            adjustments.c.property_id == property_id, adjustments.c.night == WRITER_NIGHT.isoformat()
        )
        with self.engine.connect() as connection:
            return {tuple(row) for row in connection.execute(query)}

    def total_rows(self) -> int:
        with self.engine.connect() as connection:
            return int(connection.execute(select(func.count()).select_from(adjustments)).scalar_one())

    def forget_adjustments(self, batch: tuple[str, ...]) -> None:
        """The batch's property-nights as before their first run: the trial's run has everything to write
        again."""
        with self.engine.begin() as connection:
            connection.execute(
                delete(adjustments).where(
                    adjustments.c.property_id.in_(batch), adjustments.c.night == WRITER_NIGHT.isoformat()
                )
            )

    def outcomes(self, batch: tuple[str, ...]) -> dict[str, PropertyOutcome]:
        with self.engine.connect() as connection:
            return load_outcomes(connection, WRITER_NIGHT.isoformat(), batch)

    def materialization(self, run_id: str) -> dict[str, Any] | None:
        return reported_metadata(self.instance, run_id, WRITER_ASSET)

    def step_window(self, batch: tuple[str, ...], runs: int = 3) -> tuple[float, tuple[float, float]]:
        """``runs`` uninterrupted children of ``batch`` (the hook inert: they write nothing new); the
        median child's life and the window external kills are drawn from: from the step's start to the
        child's end (the pulls, the commits, Dagster's event writes, the run's end, the exit)."""
        lives, starts = [], []
        for n in range(runs):
            run_id, child = self.run_in_child(batch, {}, f"calibration-{n}")
            assert child.wait(CHILD_TIMEOUT_S) == 0, child.tail()
            [step_start] = [
                entry
                for entry in self.instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_START)
                if entry.step_key == BATCH_OP
            ]
            lives.append(child.seconds)
            starts.append(step_start.timestamp - child.started_at)
        life = statistics.median(lives)
        return life, (statistics.median(starts), life)


@contextmanager
def writer_harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WriterHarness]:
    world = build_nights_world([WRITER_NIGHT], WRITER_BOOKINGS)
    with (
        postgres_database("recon_data") as recon_url,
        ServerThread(build_app(world.world.store)) as simulator,
    ):
        seed_database(recon_url, world)
        home = local_dagster_home(tmp_path / "dagster_home")
        variables = recon_env(recon_url, simulator.base_url, WRITER_NIGHT)
        variables["RECON_HOME"] = str(tmp_path / "recon_home")
        for name, value in variables.items():  # for the runs in this process
            monkeypatch.setenv(name, value)
        job = build_definitions().resolve_job_def(JOB_NAME)
        env = inherited_env(DAGSTER_HOME=str(home), **variables)
        engine = make_engine(recon_url)
        try:
            with dg.DagsterInstance.from_config(str(home)) as instance:
                yield WriterHarness(world, engine, instance, job, env, tmp_path / "logs")
        finally:
            engine.dispose()


def local_dagster_home(home: Path) -> Path:
    """A local instance with the least per-run cost: one event-log database for all runs (no SQLite file
    per run to create) and no capture of stdout. Not PostgreSQL: dagster-postgres opens a connection per
    event write, which doubled the cost of a trial, and whether the materialization was made durable before
    the process died is the same question on either storage."""
    home.mkdir(parents=True)
    config = {
        "telemetry": {"enabled": False},
        "event_log_storage": {
            "module": "dagster._core.storage.event_log",
            "class": "ConsolidatedSqliteEventLogStorage",
            "config": {"base_dir": str(home / "history")},
        },
        "compute_logs": {
            "module": "dagster._core.storage.noop_compute_log_manager",
            "class": "NoOpComputeLogManager",
        },
    }
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    return home


def draw_batch(rng: random.Random, property_ids: list[str]) -> tuple[str, ...]:
    """A batch of the night at random: one to every property, in a random order."""
    return tuple(rng.sample(property_ids, rng.randint(1, len(property_ids))))


def writer_trial(h: WriterHarness, trial: Trial, batch: tuple[str, ...]) -> str:
    """Kill a run of ``batch``, check what the death left per property, re-run the batch, check the end;
    returns where the death landed.

    A checkpoint trial's run writes the batch in one transaction, so its one hit is that commit: no property
    is committed (before_commit) or every one is (committed). An external kill's run works as the job
    does."""
    planned, what = {p: h.planned[p] for p in batch}, f"{trial.describe()} batch={list(batch)}"
    h.forget_adjustments(batch)
    workers = 1 if trial.point is not None else None
    run_id, child = h.run_in_child(batch, trial.env(), f"trial-{trial.index}", workers)
    exitcode = wait_child(child, trial)
    wait_for_dead_sessions(h.engine)
    left, reported = {p: h.rows(p) for p in batch}, h.materialization(run_id)
    for p in batch:
        assert left[p] in (set(), planned[p]), f"{what}: a partial set of {p}'s adjustments was committed"
    committed = [p for p in batch if left[p]]
    assert reported is None or committed == list(batch), f"{what}: Dagster was told before the commits"
    if trial.point == ADJUSTMENTS_BEFORE_COMMIT:
        assert committed == [], f"{what}: the rolled-back rows are there"
    if trial.point == ADJUSTMENTS_COMMITTED:
        assert committed == list(batch), f"{what}: committed rows are missing"
    if trial.point is not None:  # the process died before Dagster, or the outcomes table, heard of it
        record = h.instance.get_run_by_id(run_id)
        assert reported is None and record is not None, what
        assert record.status == dg.DagsterRunStatus.STARTED, f"{what}: {record.status}"
        assert all(o.run_id != run_id for o in h.outcomes(batch).values()), what
    if reported is not None:  # outcomes are recorded before the step reports
        assert {o.run_id for o in h.outcomes(batch).values()} == {run_id}, what

    rerun = h.materialize(batch)
    metadata = h.materialization(rerun)
    assert metadata is not None, what
    total, kept = sum(len(rows) for rows in planned.values()), sum(len(rows) for rows in left.values())
    assert (metadata["new"], metadata["unchanged"]) == (total - kept, kept), what
    for p in batch:
        assert h.rows(p) == planned[p], f"{what}: the re-run did not end with exactly {p}'s adjustments"
        if left[p]:  # the rows keep the run that committed them, though Dagster may never have seen it end
            assert h.rows(p, ("run_id",)) == {(run_id,)}, what
    assert h.total_rows() == sum(len(rows) for rows in h.planned.values()), what
    outcomes = h.outcomes(batch)
    assert {(p, o.status, o.run_id) for p, o in outcomes.items()} == {(p, SUCCEEDED, rerun) for p in batch}
    if exitcode == 0:
        return "finished"
    if not committed:
        return "before any commit"
    if len(committed) < len(batch):
        return "between the batch's commits"
    return (
        "after the commits, before the materialization" if reported is None else "after the materialization"
    )


@pytest.mark.postgres
@pytest.mark.slow
def test_writer_killed_around_its_commit_never_duplicates_or_loses_an_adjustment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = crash_seed()
    rng = random.Random(seed)
    started = time.monotonic()
    warm_up()
    with writer_harness(tmp_path, monkeypatch) as h:
        everyone = tuple(h.world.property_ids)
        h.materialize(everyone)  # the adjustments each property's night is to end with
        for p in everyone:
            h.planned[p] = h.rows(p)
            assert len(h.planned[p]) == planted_adjustments(h.world, p) > 0, p
        life, window = h.step_window(everyone)
        landed: Counter[str] = Counter()
        for index in range(TRIALS):
            batch = draw_batch(rng, list(everyone))
            trial = draw_trial(
                rng, seed, index, (ADJUSTMENTS_BEFORE_COMMIT, ADJUSTMENTS_COMMITTED), 1, window
            )
            landed[writer_trial(h, trial, batch)] += 1
    assert sum(landed.values()) == TRIALS
    print(
        f"writer crash trials: {TRIALS} in {time.monotonic() - started:.1f} s (seed {seed}, uninterrupted "
        f"child {life:.2f} s, external kills {window[0]:.2f}-{window[1]:.2f} s); {dict(landed)}"
    )


def planted_adjustments(world: NightsWorld, property_id: str) -> int:
    return sum(
        n
        for (p, _night, category), n in world.world.expected.items()
        if p == property_id and category in ADJUSTED_CATEGORIES
    )


# ----- processor stage ----------------------------------------------------------------------------------
PROPERTY = PropertyRow("crash-berlin", "Crash Berlin", "Europe/Berlin", "EUR", "00:00", None)
FIRST_NIGHT = date(2026, 3, 1)  # trial t's payments are on night FIRST_NIGHT + t: closed, so events mark it
BOOKINGS = 5  # per trial, each announced twice (payment_intent.succeeded, charge.succeeded)
BATCH_SIZE = 4  # the trial's 12 events span 3 claimed batches: kills leave 0-3 claims behind
LEASE = timedelta(seconds=60)
EVENT_STATE = ("status", "outcome", "attempts", "locked_by", "processed_at")


@dataclass(frozen=True)
class EventTrialWorld:
    """Trial ``index``'s bookings and its events: per booking two, one about a payment whose booking is
    unknown locally, one about no payment at all. Ids are random, so their stored order is shuffled."""

    index: int
    bookings: list[dict[str, Any]]
    bodies: list[str]
    charges: list[dict[str, Any]]
    intents: list[dict[str, Any]]

    @property
    def night(self) -> str:
        return (FIRST_NIGHT + timedelta(days=self.index)).isoformat()

    @property
    def effectful(self) -> int:
        """Events that reach the event transaction (all but the one about no payment)."""
        return len(self.bodies) - 1

    def expected_outcomes(self) -> Counter[str]:
        return Counter(
            booking_confirmed=BOOKINGS,
            booking_already_confirmed=BOOKINGS,
            booking_not_found=1,
            no_payment_reference=1,
        )


def event_trial_world(index: int, rng: random.Random) -> EventTrialWorld:
    created = datetime.combine(FIRST_NIGHT + timedelta(days=index), datetime.min.time(), UTC) + timedelta(
        hours=20
    )
    bookings_, bodies, charges, intents = [], [], [], []
    for n in range(BOOKINGS + 1):
        booking_id = f"bk_crash{index:03d}_{n}"
        charge = make_charge(
            f"ch_crash{index:03d}_{n}",
            int(created.timestamp()),
            property_id=PROPERTY.property_id,
            booking_id=booking_id,
        )
        charges.append(charge)
        intents.append(make_payment_intent(charge))
        announced = [("charge.succeeded", charge)]
        if n < BOOKINGS:  # the last payment's booking is never seeded: booking_not_found
            bookings_.append(_booking_row(booking_id, created))
            announced.append(("payment_intent.succeeded", intents[-1]))
        bodies += [_event_body(index, rng, kind, obj, created) for kind, obj in announced]
    bodies.append(_event_body(index, rng, "customer.created", {"object": "customer", "id": "cus_x"}, created))
    return EventTrialWorld(index, bookings_, bodies, charges, intents)


def _booking_row(booking_id: str, created: datetime) -> dict[str, Any]:
    return {
        "booking_id": booking_id,
        "property_id": PROPERTY.property_id,
        "status": "pending",
        "amount_minor": 10_000,
        "currency": "EUR",
        "created_at": created - timedelta(hours=2),
        "updated_at": created - timedelta(hours=2),
    }


def _event_body(index: int, rng: random.Random, kind: str, obj: dict[str, Any], created: datetime) -> str:
    payload = {key: value for key, value in obj.items() if key != "account"}
    event_id = f"evt_crash{index:03d}_{rng.getrandbits(40):010x}"
    return json.dumps(
        {"id": event_id, "type": kind, "created": int(created.timestamp()), "data": {"object": payload}}
    )


@dataclass
class ProcessorHarness:
    engine: Engine
    base_url: str
    env: dict[str, str]
    logs: Path

    def seed(self, trial_world: EventTrialWorld) -> list[str]:
        """Store the trial's bookings and events as the webhook does; the event ids in queue order."""
        now = datetime.now(UTC)
        received = [ReceivedEvent(parse_stripe_event(body), body, now) for body in trial_world.bodies]
        with self.engine.begin() as connection:
            connection.execute(insert(bookings), trial_world.bookings)
            assert all(store_events(connection, "stripe", received))
        return list(self.event_states(trial_world))

    def event_states(self, trial_world: EventTrialWorld) -> dict[str, tuple[Any, ...]]:
        """event id → its processing state, in queue (seq) order."""
        c = payment_event_processing.c
        query = (
            select(c.event_id, *(c[name] for name in EVENT_STATE))
            .where(c.event_id.like(f"evt_crash{trial_world.index:03d}_%"))
            .order_by(c.seq)
        )
        with self.engine.connect() as connection:
            return {row[0]: tuple(row[1:]) for row in connection.execute(query)}

    def worker(self, crash: dict[str, str], name: str) -> Child:
        argv = ["--provider-base-url", self.base_url, "--worker-id", name, "--batch-size", str(BATCH_SIZE)]
        argv += ["--lease-s", str(int(LEASE.total_seconds()))]
        spec = WorkerSpec({**self.env, **crash}, self.logs / f"{name}.log", argv)
        return start_child(run_event_worker, spec)

    def rerun(self, name: str) -> int:
        """A worker that comes after the dead one's lease ran out drains the queue; how many it processed."""
        with ProviderHttp(self.base_url, retry=FAST_RETRY) as http:
            counts = process_available(
                self.engine,
                StripeAdapter(http),
                name,
                batch_size=BATCH_SIZE,
                clock=lambda: datetime.now(UTC) + LEASE + timedelta(seconds=1),
            )
        return counts.processed

    def effects(self, trial_world: EventTrialWorld) -> dict[str, Any]:
        booking_ids = [row["booking_id"] for row in trial_world.bookings]
        payment_ids = [intent["id"] for intent in trial_world.intents]
        with self.engine.connect() as connection:
            return {
                "confirmed_by": set(
                    connection.execute(
                        select(booking_confirmations.c.event_id).where(
                            booking_confirmations.c.booking_id.in_(booking_ids)
                        )
                    ).scalars()
                ),
                "confirmations": connection.execute(
                    select(func.count()).where(booking_confirmations.c.booking_id.in_(booking_ids))
                ).scalar_one(),
                "statuses": Counter(
                    connection.execute(
                        select(bookings.c.status).where(bookings.c.booking_id.in_(booking_ids))
                    ).scalars()
                ),
                "orders": Counter(
                    connection.execute(
                        select(payment_orders.c.status).where(
                            payment_orders.c.provider_payment_id.in_(payment_ids)
                        )
                    ).scalars()
                ),
                "stale_generation": connection.execute(
                    select(stale_nights.c.generation).where(
                        stale_nights.c.property_id == PROPERTY.property_id,
                        stale_nights.c.night == trial_world.night,
                    )
                ).scalar(),
            }


@contextmanager
def processor_harness(tmp_path: Path, store: SimulatorStore) -> Iterator[ProcessorHarness]:
    with postgres_database("recon_crash") as url, ServerThread(build_app(store)) as simulator:
        engine = make_engine(url)
        try:
            migrations.upgrade(engine)
            with engine.begin() as connection:
                connection.execute(insert(properties).values(PROPERTY.row()))
            env = inherited_env(RECON_DATABASE_URL=url, RECON_PROVIDER="simulator")
            yield ProcessorHarness(engine, simulator.base_url, env, tmp_path / "logs")
        finally:
            engine.dispose()


def expected_at_death(trial: Trial, order: list[str], effectful: list[bool]) -> int | None:
    """How many of the queue's first events the dead worker had settled, when a crash point decides it."""
    if trial.point is None:
        return None
    position = [i for i, has_effect in enumerate(effectful) if has_effect][trial.after - 1]
    return position + (1 if trial.point == EVENT_COMMITTED else 0)


def processor_trial(h: ProcessorHarness, trial: Trial, trial_world: EventTrialWorld) -> str:
    """Kill a worker draining the trial's events, check what the death left, re-run, check the end;
    returns where the death landed."""
    what = trial.describe()
    order = h.seed(trial_world)
    effectful = [parse_stripe_event(b).provider_payment_id is not None for b in _in_order(trial_world, order)]
    worker_id = f"crashed-{trial.index}"
    exitcode = wait_child(h.worker(trial.env(), worker_id), trial)
    wait_for_dead_sessions(h.engine)
    at_death = h.event_states(trial_world)
    settled = [
        event_id for event_id, state in at_death.items() if state[0] != "pending" and state[0] != "processing"
    ]
    assert settled == order[: len(settled)], f"{what}: the worker did not settle a prefix of the queue"
    assert all(at_death[event_id][0] == "processed" for event_id in settled), what
    expected = expected_at_death(trial, order, effectful)
    if expected is not None:
        assert len(settled) == expected, f"{what}: {len(settled)} settled, expected {expected}"
    claimed = [event_id for event_id, state in at_death.items() if state[0] == "processing"]
    assert all(at_death[event_id][3] == worker_id for event_id in claimed), what
    assert len(claimed) <= BATCH_SIZE, f"{what}: more claims left than one batch"

    rerun_id = f"rerun-{trial.index}"
    assert h.rerun(rerun_id) == len(order) - len(settled), what
    final = h.event_states(trial_world)
    for event_id in settled:  # processed once: nobody touched them again
        assert final[event_id] == at_death[event_id], f"{what}: {event_id} was processed again"
    for event_id in order[len(settled) :]:
        status, _outcome, attempts, locked_by, _at = final[event_id]
        assert (status, locked_by) == ("processed", rerun_id), f"{what}: {event_id} {final[event_id]}"
        assert attempts == 1, f"{what}: {event_id} counted {attempts} tries"  # a dead worker's claim is none
    assert Counter(state[1] for state in final.values()) == trial_world.expected_outcomes(), what
    effects = h.effects(trial_world)
    confirming = {event_id for event_id, state in final.items() if state[1] == "booking_confirmed"}
    assert effects["confirmations"] == BOOKINGS and effects["confirmed_by"] == confirming, (
        f"{what}: {effects}"
    )
    assert effects["statuses"] == Counter(confirmed=BOOKINGS), f"{what}: {effects}"
    assert effects["orders"] == Counter(captured=BOOKINGS + 1), f"{what}: {effects}"
    # Every applied event bumps its closed night's stale generation once: an event applied twice shows here.
    assert effects["stale_generation"] == trial_world.effectful, f"{what}: {effects}"
    if exitcode == 0:
        return "finished"
    if not settled:
        return "before the first commit"
    return "after the last commit" if len(settled) == len(order) else f"{len(claimed)} claims left behind"


def _in_order(trial_world: EventTrialWorld, order: list[str]) -> list[str]:
    by_id = {json.loads(body)["id"]: body for body in trial_world.bodies}
    return [by_id[event_id] for event_id in order]


@pytest.mark.postgres
@pytest.mark.slow
def test_processor_killed_around_an_event_commit_applies_every_event_exactly_once(tmp_path: Path) -> None:
    seed = crash_seed()
    rng = random.Random(seed)
    started = time.monotonic()
    worlds = [event_trial_world(index, rng) for index in range(TRIALS + 1)]  # the last one calibrates
    store = SimulatorStore(
        charges=[c for w in worlds for c in w.charges], payment_intents=[i for w in worlds for i in w.intents]
    )
    store.reindex()
    warm_up()
    with processor_harness(tmp_path, store) as h:
        calibration = worlds[TRIALS]
        h.seed(calibration)
        child = h.worker({}, "calibration")
        assert child.wait(CHILD_TIMEOUT_S) == 0, child.tail()
        assert Counter(s[1] for s in h.event_states(calibration).values()) == calibration.expected_outcomes()
        window = (0.0, child.seconds * 1.1)  # the worker's whole life: it settles events until the end
        landed: Counter[str] = Counter()
        for index in range(TRIALS):
            world = worlds[index]
            trial = draw_trial(
                rng, seed, index, (EVENT_BEFORE_COMMIT, EVENT_COMMITTED), world.effectful, window
            )
            landed[processor_trial(h, trial, world)] += 1
    assert sum(landed.values()) == TRIALS
    print(
        f"processor crash trials: {TRIALS} in {time.monotonic() - started:.1f} s (seed {seed}, "
        f"uninterrupted worker {child.seconds:.2f} s); deaths: {dict(landed)}"
    )
