"""Four simultaneous runs of one night and one batch on PostgreSQL leave exactly one set of adjustments and
one set of discrepancies, and all four runs succeed.

The demo world (seed 7, 1,000 bookings) of one property-night is seeded into a PostgreSQL recon database;
four warm child processes (``warm_children``) each execute a Dagster run of ``reconcile_night`` for that
night's partition and the batch of that property (the same run config, as a re-execution or a second
trigger of the same batch would have), in themselves, against one PostgreSQL-backed instance from
deploy/dagster.yaml, released together by a barrier.

Started together is not enough for the writes to collide: each write is a transaction of milliseconds at
the end of a run of seconds. So the test holds both result tables in SHARE mode (``LOCK TABLE``: writers
wait, readers do not) and lets go of a table only once all four runs are blocked at it, as ``pg_locks``
shows: the four adjustment writers, then the four discrepancy writers, really run against each other.
Failure semantics: none; the business keys decide, the later writers find the rows there and every run
succeeds. One failure does exist upstream, in
Dagster: runs that claim a pool nobody set a limit for yet race to create its row, and on PostgreSQL the
loser's step fails (dagster-io/dagster#33552); the test sets the limit first, as a deployment must.

Both writers of one property-night take turns on a PostgreSQL advisory lock (``lock_partition``), so each
run's read of what was there is current: at each gate one run holds the lock and waits on the table, the
three others wait on the lock; the adjustments and the findings are counted as new exactly once over the
four runs, the later runs find them unchanged, and no run clears what another wrote.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
from sqlalchemy import Connection, Engine, bindparam, select, text

from recon_pipeline import categories as c
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import adjustments, discrepancies
from recon_pipeline.defs.concurrency import PROVIDER_POOL
from recon_pipeline.reconcile.adjustments import plan_adjustments
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.storage.adjustments import write_adjustments
from recon_pipeline.storage.night_outcomes import SUCCEEDED, load_outcomes
from recon_pipeline_tests.support.dagster_processes import StartWorld
from recon_pipeline_tests.support.warm_children import (
    CONTEXT,
    Child,
    RunSpec,
    execute_partition,
    inherited_env,
    reported_metadata,
    start_child,
    warm_up,
)

NIGHT = date(2026, 11, 30)
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
DEMO_BOOKINGS = 1000  # `recon demo`'s default
RUNS = 4
GATED = ("adjustments", "discrepancies")
GATE_TIMEOUT_S = 240.0  # every run pulls ~2,000 records first; four share two cores
RUN_TIMEOUT_S = 300.0

# A run waits at a writer either on the gated table or on the property-night's advisory lock that both writers
# (sync_adjustments, save_findings) take first, which only they use.
PARTITION_LOCK = "partition_lock"
WAITERS_SQL = text(
    """
    SELECT CASE WHEN l.locktype = 'advisory' THEN 'partition_lock' ELSE c.relname END, count(DISTINCT l.pid)
    FROM pg_locks l LEFT JOIN pg_class c ON c.oid = l.relation
    WHERE NOT l.granted
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND (c.relname IN :tables OR l.locktype = 'advisory')
    GROUP BY 1
    """
).bindparams(bindparam("tables", GATED, expanding=True))  # psycopg 3 adapts no tuple


@contextmanager
def share_locks(engine: Engine, tables: tuple[str, ...]) -> Iterator[dict[str, Connection]]:
    """One open transaction per table holding it in SHARE mode; committing one lets its writers go."""
    with ExitStack() as stack:
        held = {}
        for table in tables:
            connection = stack.enter_context(engine.connect())
            connection.execute(text(f"LOCK TABLE {table} IN SHARE MODE"))
            held[table] = connection
        yield held


def blocked_writers(monitor: Connection) -> Counter[str]:
    return Counter({table: int(n) for table, n in monitor.execute(WAITERS_SQL)})


def open_gates_when_all_wait(
    engine: Engine, held: dict[str, Connection], children: list[Child]
) -> dict[str, int]:
    """Release each locked table once all runs are blocked at the writers, on a locked table or on the
    property-night's lock behind it (bounded); returns how many writers each table released at once."""
    released: dict[str, int] = {}
    deadline = time.monotonic() + GATE_TIMEOUT_S
    with engine.connect() as monitor:
        while len(released) < len(held):
            waiting = blocked_writers(monitor)
            monitor.rollback()
            if sum(waiting[t] for t in held if t not in released) + waiting[PARTITION_LOCK] == RUNS:
                for table in [t for t in held if t not in released and waiting[t]]:
                    held[table].commit()
                    released[table] = waiting[table]
            failed = [c for c in children if c.exitcode not in (None, 0)]
            assert not failed, f"a run ended early ({failed[0].exitcode}):\n{failed[0].tail()}"
            assert time.monotonic() < deadline, f"not all {RUNS} runs reached the writers: {dict(waiting)}"
            time.sleep(0.05)
    return released


def run_together(engine: Engine, specs: list[RunSpec]) -> dict[str, int]:
    """Start the runs at once (a barrier) with the result tables gated; all must succeed; what the gates
    released."""
    barrier = CONTEXT.Barrier(len(specs))
    children: list[Child] = []
    try:
        with share_locks(engine, GATED) as held:
            children += [start_child(execute_partition, replace(spec, barrier=barrier)) for spec in specs]
            released = open_gates_when_all_wait(engine, held, children)
        exits = [child.wait(RUN_TIMEOUT_S) for child in children]
    finally:
        for child in children:
            child.stop()
    assert exits == [0] * len(specs), "\n".join(child.tail() for child in children)
    return released


def read_results(engine: Engine) -> tuple[list[tuple[str, str]], Counter[str], set[str]]:
    """(idempotency key, run id) of every adjustment; discrepancies per category; the runs that wrote them."""
    with engine.connect() as connection:
        keys = [
            tuple(row)
            for row in connection.execute(select(adjustments.c.idempotency_key, adjustments.c.run_id))
        ]
        found = Counter(connection.execute(select(discrepancies.c.category)).scalars())
        finding_runs = set(connection.execute(select(discrepancies.c.run_id).distinct()).scalars())
    return keys, found, finding_runs


@pytest.mark.slow
@pytest.mark.postgres
def test_four_simultaneous_runs_of_one_night_and_batch_write_one_set_of_results(
    pg_dagster_world: StartWorld, tmp_path: Path
) -> None:
    started = time.monotonic()
    prop = DEMO_PROPERTIES[0]
    warm_up()
    w = pg_dagster_world([NIGHT], DEMO_BOOKINGS, (prop,))
    [night] = w.world.partition_keys()
    batch = (prop.property_id,)
    planned_adjustments = w.world.planted_adjustments()
    planted = Counter({category: n for (_p, _n, category), n in w.world.world.expected.items()})
    env = inherited_env(**w.env)
    engine, logs, instance = make_engine(w.recon_url), tmp_path / "logs", w.instance
    try:
        # instance_from_home set the pool's limit, as a deployment must (see above).
        assert instance.event_log_storage.get_concurrency_info(PROVIDER_POOL).slot_count >= RUNS
        run_ids = [str(uuid.uuid4()) for _ in range(RUNS)]
        released = run_together(engine, [RunSpec(env, logs / f"{r}.log", night, r, batch) for r in run_ids])
        records = instance.get_run_records(dg.RunsFilter(run_ids=run_ids))
        metadata = {
            asset: [reported_metadata(instance, run_id, asset) or {} for run_id in run_ids]
            for asset in ("adjustments", "findings")
        }
        keys, found, finding_runs = read_results(engine)
        with engine.connect() as connection:
            outcomes = load_outcomes(connection, night)
    finally:
        engine.dispose()

    # Every writer ran against the three others: one at the table, three queued on the partition lock.
    assert released == {table: 1 for table in GATED}
    assert {r.dagster_run.status for r in records} == {dg.DagsterRunStatus.SUCCESS} and len(records) == RUNS
    assert {r.dagster_run.tags.get("dagster/partition") for r in records} == {night}
    assert all(m["properties"] == 1 for m in metadata["adjustments"])
    # The property-night's outcome: succeeded, last written by one of the runs (each overwrote it).
    [(property_id, outcome)] = outcomes.items()
    assert (property_id, outcome.status, outcome.run_id in run_ids) == (prop.property_id, SUCCEEDED, True)
    # One set of adjustments: the planned business keys, each inserted by exactly one of the runs.
    assert len(keys) == len({k for k, _ in keys}) == planned_adjustments > 0
    assert {run_id for _, run_id in keys} <= set(run_ids)
    assert sum(m["new"] for m in metadata["adjustments"]) == planned_adjustments
    assert sum(m["unchanged"] for m in metadata["adjustments"]) == (RUNS - 1) * planned_adjustments
    # One set of discrepancies: the planted findings, once each.
    assert found == planted  # category → count, over every row of the table
    assert finding_runs <= set(run_ids)
    reported_new = [m["discrepancies_new"] for m in metadata["findings"]]
    assert sorted(reported_new) == [0] * (RUNS - 1) + [found.total()]  # new once, by whichever ran first
    print(
        f"4 concurrent runs: {planned_adjustments} adjustments, {found.total()} discrepancies, "
        f"discrepancies_new per run {reported_new}, {time.monotonic() - started:.1f} s"
    )


# ----- the writers' race, pinned down -------------------------------------------------------------------
def test_a_row_clashing_on_any_unique_key_is_skipped_not_an_error(database_url: str) -> None:
    """What makes simultaneous adjustment writers safe: ``insert_new`` skips a row that clashes on *any*
    unique key. ``adjustments`` has two (``adjustment_id``, ``idempotency_key``); with ``ON CONFLICT
    (idempotency_key)`` PostgreSQL arbitrated only that one, and a writer that checked it a moment before
    another writer's identical row reached it, then met that row in the primary key, failed with a unique
    violation on ``adjustments_pkey`` (about one run in five of the test above, before the fix). That
    interleaving cannot be forced from SQL; this is the same clash, made deterministic: a primary key
    that exists under another idempotency key."""
    engine = make_engine(database_url)
    try:
        migrations.upgrade(engine)
        [row] = plan_adjustments("prop", NIGHT.isoformat(), missing_in_ledger_finding(), None, NOW)
        with engine.begin() as connection:
            assert write_adjustments(connection, [row]).new == 1
            counts = write_adjustments(connection, [{**row, "idempotency_key": "prop/other/key"}])
            stored = connection.execute(select(adjustments.c.idempotency_key)).scalars().all()
    finally:
        engine.dispose()
    assert (counts.new, counts.already_present) == (0, 1)
    assert stored == [row["idempotency_key"]]


def missing_in_ledger_finding() -> pd.DataFrame:
    """One finding that proposes one adjustment: a provider payment the ledger lacks."""
    return pd.DataFrame(
        [
            {
                "category": c.MISSING_IN_LEDGER,
                "record_key": "ch_1:payment",
                "kind": "payment",
                "provider_record_id": "ch_1",
                "ledger_entry_id": None,
                "booking_id": None,
                "provider_amount_minor": 10_000,
                "ledger_amount_minor": None,
                "difference_minor": 10_000,
                "currency": "EUR",
                "detail": "provider payment ch_1 has no ledger entry",
            }
        ]
    )
