"""`recon demo`: the embedded default end to end, on a persistent Dagster instance.

Seed the demo properties of one provider (``--provider``: the ones its package names) and the demo
analyst's thresholds, serve the provider half from the simulator on 127.0.0.1 speaking that provider's
API (with each property's night before, where an earlier demo left it in the database:
``serve_held_nights_before``, so that the demo runs twice in a row at any moment), reconcile every
property's newest night whose money the provider has published (``demo_nights``: last night, unless the
provider publishes a night's money later) through the real ``reconcile_night`` job (its blocking asset
check included), then print what was found against what was planted. Then the PMS catches up
(``follow_the_ledger``): it books half of the missing payments and one ledger amount changes, the same
partitions run again, and the demo prints how many findings were cleared and proposals withdrawn or
superseded. Both steps are idempotent: a second run finds the same discrepancies, writes no new
adjustments and, the ledger being as the first left it, clears nothing. Last, each night's report files
are rendered on demand from the database (as `recon report night` does; the runs write none) and their
paths printed. A run that fails stops the demo with one line saying which check or step failed and why
(``DemoRunFailed``), not a traceback.
"""

from __future__ import annotations

import os
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
from sqlalchemy import Connection, Engine, RowMapping, func, make_url, select, update

from recon_pipeline import config
from recon_pipeline.batches.launch import DEFINITIONS_MODULE, stop_automations
from recon_pipeline.categories import ALL_CATEGORIES, AMOUNT_MISMATCH, MISSING_IN_LEDGER
from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import bookings, discrepancies, discrepancy_thresholds, ledger_entries
from recon_pipeline.db.upsert import insert_new
from recon_pipeline.defs.batches import batch_run_config
from recon_pipeline.defs.payouts import PAYOUTS_JOB
from recon_pipeline.ledger.queries import load_property
from recon_pipeline.nights import last_closed_night, night_window
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.settings import DEFAULT_FLAVOUR
from recon_pipeline.reconcile.matching import RULES, TIERS
from recon_pipeline.reconcile.matching.words import RULE_WORDS
from recon_pipeline.reports.paths import HTML
from recon_pipeline.reports.render import RenderedNight, render_night
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.demo.properties import DEMO_THRESHOLDS_MINOR, demo_properties
from recon_pipeline.simulation.demo.seed import seed_thresholds, seed_world
from recon_pipeline.simulation.demo.world import World, build_world
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline.simulation.registry import simulation_named

LOCAL_INSTANCE_YAML = Path(__file__).resolve().parents[3] / "dagster.yaml"
# The demo prints its own report; each run's full event log is on its Dagster instance (`dagster dev`).
QUIET_CONSOLE = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# The rules a hotel-style world counts what it built for (``World.expected_matches``): the matcher's tiers.
MATCHER_RULES = TIERS
# Where the simulator the demo's last lines start listens (`recon simulator serve`'s default port).
SIMULATOR_PORT = 12111
# How far the PMS moves the ledger amount of one mismatched entry, in minor units (follow_the_ledger).
CHANGED_BY_MINOR = 100


class DemoRunFailed(Exception):
    """A property's run failed; the message is one line: which property-night, which check or step, why."""


@dataclass(frozen=True)
class NightOutcome:
    """What one property-night's run did, read back from Dagster and the database."""

    property_id: str
    night: str
    run_id: str
    provider_records: int
    adjustments_new: int
    adjustments_unchanged: int
    found: dict[str, int]
    planted: dict[str, int]
    top_discrepancies: str
    # movements paired per rule (the run's ``matches/<rule>`` metadata, "exact_id" included), and what a
    # hotel-style property's world built for the matcher's rules to pair (empty for a keyed property)
    matched: dict[str, int] = field(default_factory=dict)
    planted_matches: dict[str, int] = field(default_factory=dict)

    def matches_differ(self) -> bool:
        """Whether a matcher's rule (not the provider's id) paired other than the world built."""
        return any(self.matched.get(rule, 0) != self.planted_matches.get(rule, 0) for rule in MATCHER_RULES)


def demo_nights(now: datetime, flavour: str = DEFAULT_FLAVOUR) -> dict[str, date]:
    """The newest night of every demo property of ``flavour`` that ended ``DemoWorld.published_after``
    before ``now`` (the last closed night where the provider publishes at once), each in its own timezone
    and cutoff: the provider has published all of its money, where a later night's pull may be incomplete."""
    published = now - simulation_named(flavour).demo_world().published_after
    return {
        p.property_id: last_closed_night(published, p.timezone, p.night_cutoff)
        for p in demo_properties(flavour)
    }


def render_nights(nights: dict[str, date], flavour: str) -> str:
    """Which nights the demo reconciles, and why those, on one line."""
    listed = ", ".join(f"{property_id} {night}" for property_id, night in nights.items())
    published_after = simulation_named(flavour).demo_world().published_after
    if not published_after:
        return f"nights: {listed} (each property's last closed night)"
    return (
        f"nights: {listed} (the newest that ended at least {published_after.days} days ago: {flavour} has "
        f"published all of a night's money by then, so a later night could not be read in full yet)"
    )


def prepare_dagster_home() -> Path:
    """DAGSTER_HOME, or RECON_HOME/dagster_home with the project's local dagster.yaml, so runs persist."""
    home = Path(os.environ.get("DAGSTER_HOME") or config.recon_home() / "dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists() and LOCAL_INSTANCE_YAML.exists():
        shutil.copy(LOCAL_INSTANCE_YAML, home / "dagster.yaml")
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def utc_now() -> datetime:
    return datetime.now(UTC)


def run_demo(
    bookings_per_night: int = 1000,
    seed: int = 7,
    echo: Callable[[str], None] = print,
    flavour: str = DEFAULT_FLAVOUR,
    clock: Callable[[], datetime] = utc_now,
) -> list[NightOutcome]:
    """Seed, serve, reconcile and report ``flavour``'s demo properties; one outcome per property.
    ``clock`` is the demo's now: which nights it reconciles, and the simulated provider's time (tests
    pin it; the runs' own timestamps are the real clock's).

    Raises DemoRunFailed when a property's run fails."""
    started = time.monotonic()
    properties = demo_properties(flavour)
    home = config.recon_home()
    home.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("RECON_DATABASE_URL", config.database_url())
    engine = make_engine(os.environ["RECON_DATABASE_URL"])
    migrations.upgrade(engine)
    now = clock()
    nights = demo_nights(now, flavour)
    world = build_world(nights, bookings_per_night, seed, properties, flavour)
    inserted = seed_world(engine, world)
    served_before = serve_held_nights_before(engine, world, nights, bookings_per_night, seed, flavour)
    world.store.clock = lambda: clock().timestamp()
    thresholds = {p.property_id: DEMO_THRESHOLDS_MINOR[p.property_id] for p in properties}
    inserted[discrepancy_thresholds.name] = seed_thresholds(engine, thresholds, now)
    echo(f"RECON_HOME={home}")
    echo("seeded: " + ", ".join(f"{table} +{n}" for table, n in inserted.items()))
    echo(render_nights(nights, flavour))
    if served_before:
        echo(
            "the provider also serves the night before of "
            + ", ".join(f"{p} {night}" for p, night in served_before.items())
            + " (an earlier demo's, whose last payments were posted in tonight's)"
        )
    dagster_home = prepare_dagster_home()
    app = build_app(world.store, flavour=flavour)
    with ServerThread(app) as simulator, dg.DagsterInstance.get() as instance:
        os.environ["RECON_PROVIDER"] = "simulator"
        os.environ["RECON_PROVIDER_FLAVOUR"] = flavour  # what the runs' provider resource speaks
        os.environ["RECON_PROVIDER_BASE_URL"] = simulator.base_url
        store = world.store
        echo(
            f"simulator: {simulator.base_url} speaking {flavour} "
            f"({len(store.charges)} payments, {len(store.refunds)} refunds)"
        )
        echo(f"DAGSTER_HOME={dagster_home}")
        for night in sorted({demo_night(world, p.property_id) for p in properties}):
            execute_payouts(instance, night)
        outcomes = [reconcile(instance, engine, world, p.property_id) for p in properties]
        for outcome in outcomes:
            echo(render_outcome(outcome))
        echo("")
        echo("the PMS catches up: half of the missing payments booked, one ledger amount changed; re-run")
        for prop in properties:
            echo(render_lifecycle(follow_the_ledger(instance, engine, world, prop)))
        stopped = stop_automations(instance)
    echo("")
    for rendered in render_reports(engine, world, properties):
        echo(f"report of {rendered.property_id} {rendered.night}: {rendered.paths[HTML]}")
    echo(f"demo finished in {time.monotonic() - started:.1f}s")
    for line in render_next_steps(dagster_home, flavour, bookings_per_night, seed, len(stopped)):
        echo(line)
    return outcomes


def render_next_steps(dagster_home: Path, flavour: str, bookings: int, seed: int, stopped: int) -> list[str]:
    """How to open the demo's instance in the Dagster UI with a provider to call (the demo's simulator
    ended with it), and how to turn its automations on (the demo leaves them off: a schedule's tick
    would otherwise launch runs against a provider that is gone)."""
    home = f"DAGSTER_HOME={shlex.quote(str(dagster_home))}"
    # A password in the URL is never printed (`***`: put yours back).
    url = make_url(os.environ["RECON_DATABASE_URL"]).render_as_string(hide_password=True)
    database = f"RECON_DATABASE_URL={shlex.quote(url)}"
    provider = (
        f"RECON_PROVIDER=simulator RECON_PROVIDER_FLAVOUR={flavour} "
        f"RECON_PROVIDER_BASE_URL=http://127.0.0.1:{SIMULATOR_PORT}"
    )
    return [
        f"automations off: the {stopped} schedules and sensors of this instance are stopped; turn them on "
        f"in the UI (Automation, each toggle) or with: {home} dagster schedule start --start-all "
        f"-m {DEFINITIONS_MODULE} && {home} dagster sensor start --start-all -m {DEFINITIONS_MODULE}",
        "open the UI (a simulator serving the demo's provider, then Dagster on the demo's instance):",
        f"  recon simulator serve --flavour {flavour} --port {SIMULATOR_PORT} --bookings {bookings} "
        f"--seed {seed} &",
        f"  {home} {database} {provider} dagster dev -m {DEFINITIONS_MODULE}",
    ]


def serve_held_nights_before(
    engine: Engine,
    world: World,
    nights: dict[str, date],
    bookings_per_night: int,
    seed: int,
    flavour: str,
) -> dict[str, date]:
    """Add to ``world``'s provider records those of each property's night before its demo night that the
    database holds (an earlier demo seeded and reconciled it, before the property's midnight or cutoff
    moved its newest night on); the nights added, per property.

    Why: a night's world posts some of its payments after its end (a payment at 23:59 booked at 00:02, a
    late folio posting), so the night before's ledger reaches into the demo night; the provider must still
    serve those payments, as a real one serves yesterday's, or each would be missing at the provider."""
    before = {property_id: night - timedelta(days=1) for property_id, night in nights.items()}
    earlier = {
        prop.property_id: build_world(
            {prop.property_id: before[prop.property_id]}, bookings_per_night, seed, (prop,), flavour
        )
        for prop in demo_properties(flavour)
        if prop.property_id in nights
    }
    # The night before's last booking (the world's last-built row) says whether the database holds it all.
    last_booking = {world_before.bookings[-1]["booking_id"]: p for p, world_before in earlier.items()}
    query = select(bookings.c.booking_id).where(bookings.c.booking_id.in_(list(last_booking)))
    with engine.connect() as connection:
        held = sorted(last_booking[booking_id] for booking_id in connection.execute(query).scalars())
    for property_id in held:
        world.store.absorb(earlier[property_id].store)
    world.store.reindex()
    return {property_id: before[property_id] for property_id in held}


def unlike_the_world(outcomes: list[NightOutcome]) -> str | None:
    """Why the demo's outcomes are not what its world planted and built, on one line; None when they are."""
    mismatched = [o.property_id for o in outcomes if o.found != o.planted]
    if mismatched:
        return f"findings differ from the planted discrepancies for {', '.join(mismatched)}"
    unpaired = [o.property_id for o in outcomes if o.matches_differ()]
    if unpaired:
        return f"matches per rule differ from the world's for {', '.join(unpaired)}"
    return None


def reconcile(instance: dg.DagsterInstance, engine: Engine, world: World, property_id: str) -> NightOutcome:
    """Run the reconcile_night job for the property's demo night and read back what it did; raise
    DemoRunFailed (one line) when the run failed."""
    night = demo_night(world, property_id)
    result = execute_night(instance, property_id, night)
    return NightOutcome(
        property_id=property_id,
        night=night,
        run_id=result.run_id,
        provider_records=_metadata_int(result, "discrepancy_report", "pulled"),
        adjustments_new=_metadata_int(result, "adjustments", "new"),
        adjustments_unchanged=_metadata_int(result, "adjustments", "unchanged"),
        found=found_by_category(engine, property_id, night),
        planted={
            cat: n
            for (p, nt, cat), n in (world.expected + world.expected_payouts).items()
            if p == property_id and nt == night
        },
        top_discrepancies=str(_metadata(result, "discrepancy_report", "top_discrepancies")),
        matched=matched_by_rule(result),
        planted_matches={
            rule: n for (p, nt, rule), n in world.expected_matches.items() if p == property_id and nt == night
        },
    )


def matched_by_rule(result: dg.ExecuteInProcessResult) -> dict[str, int]:
    """The run's movements paired per rule (``matches/<rule>`` of the report's metadata), zeros left out."""
    metadata = _materialization(result, "discrepancy_report").metadata
    counts = {
        key.removeprefix("matches/"): value.value
        for key, value in metadata.items()
        if key.startswith("matches/")
    }
    return {rule: int(n) for rule, n in counts.items() if isinstance(n, int) and n}


def render_reports(engine: Engine, world: World, properties: tuple[PropertyRow, ...]) -> list[RenderedNight]:
    """Each property's demo night rendered under RECON_HOME/reports from the committed tables."""
    with engine.connect() as connection:
        return [
            render_night(
                connection, load_property(connection, p.property_id), demo_night(world, p.property_id)
            )
            for p in properties
        ]


def demo_night(world: World, property_id: str) -> str:
    return next(n for (p, n, _c) in world.expected if p == property_id)


def execute_night(instance: dg.DagsterInstance, property_id: str, night: str) -> dg.ExecuteInProcessResult:
    """One successful run of reconcile_night for the property-night, or DemoRunFailed (one line)."""
    from recon_pipeline.definitions import build_definitions  # after the environment is set

    job = build_definitions().resolve_job_def("reconcile_night")
    result = job.execute_in_process(
        partition_key=night,
        instance=instance,
        run_config={**QUIET_CONSOLE, **batch_run_config([property_id])},
        raise_on_error=False,
    )
    if not result.success:
        reason = failure_reason(result, property_id, night)
        raise DemoRunFailed(f"{property_id} night {night} (run {result.run_id[:8]}): {reason}")
    return result


def execute_payouts(instance: dg.DagsterInstance, night: str) -> None:
    """One successful run of payouts_night for the night (every account's payouts), or DemoRunFailed."""
    from recon_pipeline.definitions import build_definitions  # after the environment is set

    job = build_definitions().resolve_job_def(PAYOUTS_JOB)
    result = job.execute_in_process(
        partition_key=night, instance=instance, run_config=QUIET_CONSOLE, raise_on_error=False
    )
    if not result.success:
        failure = next((event for event in result.all_events if event.is_step_failure), None)
        reason = _innermost(failure) if failure is not None else "the run failed"
        raise DemoRunFailed(f"payouts night {night} (run {result.run_id[:8]}): {reason}")


@dataclass(frozen=True)
class LifecycleOutcome:
    """What the re-run after the PMS caught up did to one property-night's findings and adjustments."""

    property_id: str
    night: str
    booked: int  # missing payments the PMS booked (ledger_entries newly inserted)
    changed: int  # ledger amounts the PMS changed
    cleared: int
    withdrawn: int
    superseded: int
    new: int


def follow_the_ledger(
    instance: dg.DagsterInstance, engine: Engine, world: World, prop: PropertyRow
) -> LifecycleOutcome:
    """Book the first half (by record) of the night's missing payments in the PMS, move the ledger amount
    of its first mismatched payment by CHANGED_BY_MINOR, re-run the night; what the re-run did.

    Idempotent: the booked entries' ids derive from the payments, and the changed amount from the seeded
    one, so a second demo books and changes nothing and its re-run clears nothing."""
    night = demo_night(world, prop.property_id)
    with engine.begin() as connection:
        booked = insert_new(connection, ledger_entries, _bookings(connection, prop, night), ["entry_id"])
        changed = _change_one_amount(connection, world, prop.property_id, night)
    result = execute_night(instance, prop.property_id, night)
    return LifecycleOutcome(
        property_id=prop.property_id,
        night=night,
        booked=booked,
        changed=changed,
        cleared=_metadata_int(result, "findings", "discrepancies_cleared"),
        withdrawn=_metadata_int(result, "adjustments", "withdrawn"),
        superseded=_metadata_int(result, "adjustments", "superseded"),
        new=_metadata_int(result, "adjustments", "new"),
    )


def _payment_findings(
    connection: Connection, property_id: str, night: str, category: str
) -> list[RowMapping]:
    c = discrepancies.c
    query = (
        select(discrepancies)
        .where(c.property_id == property_id, c.night == night, c.category == category)
        .where(c.record_key.like("%:payment"))
        .order_by(c.record_key)
    )
    return list(connection.execute(query).mappings())


def _bookings(connection: Connection, prop: PropertyRow, night: str) -> list[dict[str, object]]:
    """Ledger entries for the first half of the night's missing payments (cleared ones included, so the
    choice never moves), posted an hour into the night."""
    missing = _payment_findings(connection, prop.property_id, night, MISSING_IN_LEDGER)
    posted_at = night_window(night, prop.timezone, prop.night_cutoff).start + timedelta(hours=1)
    return [
        {
            "entry_id": f"demo-booked-{finding['provider_record_id']}",
            "property_id": prop.property_id,
            "booking_id": finding["booking_id"],
            "provider_record_id": finding["provider_record_id"],
            "kind": "payment",
            "amount_minor": finding["provider_amount_minor"],
            "currency": finding["currency"],
            "posted_at": posted_at,
        }
        for finding in missing[: (len(missing) + 1) // 2]
    ]


def _change_one_amount(connection: Connection, world: World, property_id: str, night: str) -> int:
    """Set the first mismatched payment's ledger amount to its seeded amount less CHANGED_BY_MINOR;
    1 when that changed the row."""
    findings = _payment_findings(connection, property_id, night, AMOUNT_MISMATCH)
    mismatched = [row for row in findings if row["ledger_entry_id"]]
    if not mismatched:
        return 0
    entry_id = mismatched[0]["ledger_entry_id"]
    seeded = next(entry["amount_minor"] for entry in world.ledger_entries if entry["entry_id"] == entry_id)
    amount = ledger_entries.c.amount_minor
    statement = (
        update(ledger_entries)
        .where(ledger_entries.c.entry_id == entry_id, amount != seeded - CHANGED_BY_MINOR)
        .values(amount_minor=seeded - CHANGED_BY_MINOR)
    )
    return connection.execute(statement).rowcount


def failure_reason(result: dg.ExecuteInProcessResult, property_id: str, night: str) -> str:
    """Why a run failed, on one line: its failed blocking checks with their amounts, else its failed
    steps' innermost errors."""
    checks = [
        evaluation
        for evaluation in result.get_asset_check_evaluations()
        if evaluation.blocking and not evaluation.passed
    ]
    if checks:
        return "; ".join(_check_failure(evaluation, property_id, night) for evaluation in checks)
    steps = [
        f"step {event.step_key} failed: {_innermost(event)}" for event in result.get_step_failure_events()
    ]
    return "; ".join(steps) or "the run failed"


def _check_failure(evaluation: dg.AssetCheckEvaluation, property_id: str, night: str) -> str:
    values = {key: value.value for key, value in evaluation.metadata.items()}
    failed = f"check {evaluation.check_name} failed"
    if "amount" not in values or "threshold" not in values:
        return failed
    return (  # unexplained_discrepancy_amount: say how to explain the findings or move the threshold
        f"{failed}: {values['amount']} unexplained, over the threshold of {values['threshold']}; review with "
        f"`recon discrepancies list --property {property_id} --night {night}`, or set "
        f"`recon discrepancies threshold {property_id} --set MINOR`"
    )


def _innermost(event: dg.DagsterEvent) -> str:
    """The first line of the innermost cause of a step failure (the user code's error, not Dagster's)."""
    error = event.step_failure_data.error
    while error is not None and error.cause is not None:
        error = error.cause
    return error.message.strip().splitlines()[0] if error is not None else "unknown error"


def found_by_category(engine: Engine, property_id: str, night: str) -> dict[str, int]:
    """Rows in ``discrepancies`` for the property-night, per category (cleared ones included: the demo
    compares what it ever found with what it planted)."""
    query = (
        select(discrepancies.c.category, func.count())
        .where(discrepancies.c.property_id == property_id, discrepancies.c.night == night)
        .group_by(discrepancies.c.category)
    )
    with engine.connect() as connection:
        return {category: int(count) for category, count in connection.execute(query).tuples()}


def _materialization(result: dg.ExecuteInProcessResult, asset: str) -> dg.AssetMaterialization:
    [materialization] = [
        event.materialization
        for event in result.get_asset_materialization_events()
        if event.asset_key == dg.AssetKey(asset)
    ]
    return materialization


def _metadata(result: dg.ExecuteInProcessResult, asset: str, key: str) -> object:
    return _materialization(result, asset).metadata[key].value


def _metadata_int(result: dg.ExecuteInProcessResult, asset: str, key: str) -> int:
    value = _metadata(result, asset, key)
    assert isinstance(value, int)
    return value


def render_outcome(outcome: NightOutcome) -> str:
    """A plain-text block per property: findings against what was planted, then the largest findings."""
    lines = [
        "",
        f"== {outcome.property_id}  night {outcome.night}  run {outcome.run_id[:8]}",
        f"   provider records {outcome.provider_records};  adjustments: {outcome.adjustments_new} new, "
        f"{outcome.adjustments_unchanged} already committed",
        f"   {'category':<28}{'found':>7}{'planted':>9}",
    ]
    for category in ALL_CATEGORIES:
        found, planted = outcome.found.get(category, 0), outcome.planted.get(category, 0)
        mark = "" if found == planted else "   <-- differs"
        lines.append(f"   {category:<28}{found:>7}{planted:>9}{mark}")
    if outcome.planted_matches or any(outcome.matched.get(rule) for rule in MATCHER_RULES):
        lines += render_matches(outcome)
    lines.append(outcome.top_discrepancies)
    return "\n".join(lines)


def render_matches(outcome: NightOutcome) -> list[str]:
    """The movements paired per rule against what the world built for each matcher's rule (the provider's
    id is the keyed postings' count: nothing planted to compare it with)."""
    lines = [f"   {'matched by':<42}{'found':>7}{'planted':>9}"]
    for rule in RULES:
        found = outcome.matched.get(rule, 0)
        if rule not in MATCHER_RULES:
            if found:
                lines.append(f"   {RULE_WORDS[rule]:<42}{found:>7}{'-':>9}")
            continue
        planted = outcome.planted_matches.get(rule, 0)
        mark = "" if found == planted else "   <-- differs"
        lines.append(f"   {RULE_WORDS[rule]:<42}{found:>7}{planted:>9}{mark}")
    return lines


def render_lifecycle(outcome: LifecycleOutcome) -> str:
    """One line per property: what the PMS did, then what the re-run made of it."""
    return (
        f"   {outcome.property_id} {outcome.night}: booked {outcome.booked}, changed {outcome.changed} -> "
        f"findings cleared {outcome.cleared}; proposals withdrawn {outcome.withdrawn}, "
        f"superseded {outcome.superseded}, new {outcome.new}"
    )
