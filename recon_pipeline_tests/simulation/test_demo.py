"""`recon demo` as a user runs it: a subprocess, a fresh RECON_HOME, twice."""

from __future__ import annotations

import os
import re
import sqlite3
from collections import Counter
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import dagster as dg
import pytest

from recon_pipeline.db.schema import discrepancies, matches
from recon_pipeline.defs.assets import reconciliation_assets
from recon_pipeline.defs.batches import batch_run_config
from recon_pipeline.nights import night_window
from recon_pipeline.providers.adyen.client import DEFAULT_SETTLEMENT_DAYS
from recon_pipeline.providers.settings import DEFAULT_FLAVOUR
from recon_pipeline.reconcile.matching import TIERS
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES as KEYED_PROPERTIES
from recon_pipeline.simulation.demo.properties import demo_properties
from recon_pipeline.simulation.demo.run import NightOutcome, run_demo, unlike_the_world
from recon_pipeline.simulation.demo.world import World, build_world
from recon_pipeline.simulation.registry import simulation_named
from recon_pipeline_tests.support.demo_runs import fresh_env, run_recon
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, asset_metadata, seeded

# What `recon demo` seeds: the keyed properties the tests' worlds are built of, the hotel-style one, and
# the hotel-style ones whose PMS is a named one (test_demo_pms_ledgers.py).
DEMO_PROPERTIES = demo_properties(DEFAULT_FLAVOUR)
HOTEL = "rome-trastevere"
PMS_STYLE_OF = simulation_named(DEFAULT_FLAVOUR).demo_world().pms_styles
HOTEL_BOOKINGS = 60


LIFECYCLE_LINE = re.compile(
    r"^   (\S+) \S+: booked (\d+), changed (\d+) -> findings cleared (\d+); "
    r"proposals withdrawn (\d+), superseded (\d+), new (\d+)$",
    re.MULTILINE,
)


REPORT_LINE = re.compile(r"^report of (\S+) (\S+): (.+)$", re.MULTILINE)


def lifecycle_lines(stdout: str) -> dict[str, tuple[int, ...]]:
    """property → (booked, changed, cleared, withdrawn, superseded, new) as the demo printed them."""
    return {match[0]: tuple(int(n) for n in match[1:]) for match in LIFECYCLE_LINE.findall(stdout)}


@pytest.mark.slow  # two `recon demo` processes
def test_demo_twice_finds_the_same_and_writes_nothing_new(tmp_path: Path) -> None:
    env = fresh_env(tmp_path)
    first = run_recon("demo", "--bookings", "150", env=env)
    assert first.returncode == 0, first.stderr
    for prop in DEMO_PROPERTIES:
        assert f"== {prop.property_id}" in first.stdout
    assert "differs" not in first.stdout
    assert "already committed" in first.stdout
    # The PMS books half of the missing payments and changes one amount; the re-run follows the ledger.
    lifecycle = lifecycle_lines(first.stdout)
    assert set(lifecycle) == {prop.property_id for prop in DEMO_PROPERTIES}
    for booked, changed, cleared, withdrawn, superseded, new in lifecycle.values():
        assert booked >= 1 and changed == 1
        assert cleared == withdrawn == booked  # each booked payment: its finding cleared, proposal withdrawn
        assert superseded == new == 1  # the changed amount: one proposal superseded by a new one
    # The reports, rendered on demand at the end from the database (the runs write no file).
    reports = REPORT_LINE.findall(first.stdout)
    assert {prop for prop, _night, _path in reports} == {prop.property_id for prop in DEMO_PROPERTIES}
    for prop, night, path in reports:
        page = (tmp_path / "home").resolve() / "reports" / prop / night / "report.html"
        assert Path(path) == page and page.is_file() and (page.parent / "discrepancies.csv").is_file()

    assert_money_movements_found(
        tmp_path / "home" / "recon.sqlite", {p: night for p, night, _path in reports}
    )

    second = run_recon("demo", "--bookings", "150", env=env)
    assert second.returncode == 0, second.stderr
    assert second.stdout.count("adjustments: 0 new") == len(DEMO_PROPERTIES)
    assert "seeded: properties +0, bookings +0, payment_orders +0, ledger_entries +0" in second.stdout
    assert set(lifecycle_lines(second.stdout).values()) == {(0, 0, 0, 0, 0, 0)}  # nothing moved again

    dagster_home = tmp_path / "home" / "dagster_home"
    assert (dagster_home / "dagster.yaml").exists()
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    try:
        with dg.DagsterInstance.get() as instance:
            runs = instance.get_runs()
            # each demo: a run and a re-run per property, and a payouts run per demo night
            nights = {night for _p, night, _path in reports}
            assert len(runs) == 2 * (2 * len(DEMO_PROPERTIES) + len(nights))
            assert all(run.is_success for run in runs)
    finally:
        del os.environ["DAGSTER_HOME"]


def assert_money_movements_found(database: Path, nights: dict[str, str]) -> None:
    """One of each money movement the demo plants is found where it was planted (the demo's own table
    already says found == planted per category): a won dispute's unbooked reversal, a converted card booked
    short in the settlement currency, a hold lapsing before the next night ends, a payout that failed and,
    on a night that is a deposit deadline, one the bank never received (the demo's table says the disputes and
    conversions the PMS booked right raise nothing: found equals planted in every category)."""
    with sqlite3.connect(database) as connection:
        found = connection.execute(
            "SELECT property_id, category, kind FROM discrepancies WHERE cleared_at IS NULL"
        ).fetchall()
    assert {
        (p, kind)
        for p, category, kind in found
        if category == "missing_in_ledger" and kind in ("dispute", "dispute_reversal")
    } == {(p.property_id, "dispute_reversal") for p in DEMO_PROPERTIES}
    categories = {(p, category) for p, category, _kind in found}
    assert ("lisbon-riverside", "fx_difference") in categories  # EUR: the one with a USD card
    assert {p.property_id for p in DEMO_PROPERTIES} <= {
        p for p, c in categories if c == "authorization_expiring"
    }
    assert ("kyoto-gion", "payout_failed") in categories  # the property alone on its connected account
    deadline = date.fromisoformat(nights["kyoto-gion"]).weekday() < 5  # a deposit deadline is a business day
    assert (("kyoto-gion", "payout_not_deposited") in categories) == deadline


@pytest.mark.slow  # `recon demo` processes
def test_razorpay_demo_passes_its_blocking_check_until_an_analyst_tightens_the_threshold(
    tmp_path: Path,
) -> None:
    env, prop = fresh_env(tmp_path), demo_properties("razorpay")[0].property_id
    first = run_recon("demo", "--provider", "razorpay", "--bookings", "40", env=env)
    assert first.returncode == 0, first.stderr
    assert f"== {prop}" in first.stdout and "speaking razorpay" in first.stdout
    assert "differs" not in first.stdout and "discrepancy_thresholds +1" in first.stdout

    tightened = run_recon("findings", "threshold", prop, "--set", "100000", env=env)
    assert tightened.returncode == 0, tightened.stderr
    second = run_recon("demo", "--provider", "razorpay", "--bookings", "40", env=env)
    assert second.returncode == 1
    assert "discrepancy_thresholds +0" in second.stdout  # the analyst's threshold is kept
    assert "Traceback" not in second.stdout + second.stderr
    reason = second.stderr.strip().splitlines()[-1]
    assert (
        reason.startswith(f"error: {prop} night ") and "check unexplained_discrepancy_amount failed" in reason
    )
    assert "INR unexplained, over the threshold of 1,000.00 INR" in reason


NIGHT_BLOCK = re.compile(r"^== (\S+)  night (\S+)  run", re.MULTILINE)


@pytest.mark.slow  # a `recon demo` process
def test_adyen_demo_reconciles_the_nights_its_settlement_batches_have_published(tmp_path: Path) -> None:
    """Adyen's money of a night is read from the settlement batches closing up to ``settlement_days``
    after it, so last night cannot be complete: the demo reconciles nights whose batches are out, finds
    every planted discrepancy there (its failed payment, of which the reports show nothing, as money missing
    at the provider) and says which nights and why."""
    env, properties = fresh_env(tmp_path), demo_properties("adyen")
    result = run_recon("demo", "--provider", "adyen", "--bookings", "40", env=env)
    assert result.returncode == 0, result.stderr
    assert "speaking adyen" in result.stdout and "differs" not in result.stdout
    nights = dict(NIGHT_BLOCK.findall(result.stdout))
    assert set(nights) == {p.property_id for p in properties}
    [nights_line] = [line for line in result.stdout.splitlines() if line.startswith("nights: ")]
    assert "adyen has published all of a night's money" in nights_line
    now = datetime.now(UTC)
    for prop in properties:
        night = nights[prop.property_id]
        assert f"{prop.property_id} {night}" in nights_line
        end = night_window(date.fromisoformat(night), prop.timezone, prop.night_cutoff).end
        assert end + timedelta(days=DEFAULT_SETTLEMENT_DAYS) <= now  # the batch covering it has closed
    assert set(lifecycle_lines(result.stdout)) == {p.property_id for p in properties}


@pytest.mark.slow  # `recon demo` processes
def test_bad_input_exits_non_zero_with_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "RECON_HOME": str(tmp_path), "RECON_DATABASE_URL": "mysql+nothing://x"}
    result = run_recon("db", "init", env=env)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    env["RECON_DATABASE_URL"] = f"sqlite:///{tmp_path / 'r.sqlite'}"
    assert run_recon("db", "init", env=env).stdout.startswith("upgraded the database from revision (none)")
    assert run_recon("db", "init", env=env).stdout.strip().endswith(", the newest")


# --- the demo's clock (run_demo's ``clock``) ----------------------------------------------------------


@pytest.mark.slow  # three demos through Dagster per database
def test_the_demo_runs_twice_in_a_row_as_rome_crosses_midnight(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A demo at 23:58 in Rome reconciles Rome's night before; at 00:02 Rome's newest night is the one
    that just ended, and its first minutes hold what the night before posted after midnight (payments of
    23:59 booked at 00:02, a late folio posting): the provider still serves those payments, so the demo
    finds what was planted, and the same demo again finds the same and proposes nothing new."""
    monkeypatch.setenv("RECON_DATABASE_URL", database_url)
    demos_across_midnight(monkeypatch, DEFAULT_FLAVOUR, HOTEL, "Europe/Rome")


@pytest.mark.slow  # three demos through Dagster
def test_the_razorpay_demo_runs_twice_in_a_row_as_mumbai_crosses_midnight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As for Rome; Razorpay's holds last three days, so the night before's hold that is open for days
    must not lapse before tonight's next night ends (it would be a finding nobody planted tonight)."""
    demos_across_midnight(monkeypatch, "razorpay", "mumbai-marine", "Asia/Kolkata")


def demos_across_midnight(monkeypatch: pytest.MonkeyPatch, flavour: str, moved: str, timezone: str) -> None:
    """``flavour``'s demo two minutes before the local midnight of ``moved``'s property (two days ago), two
    minutes after, and again: each finds what was planted; the second reconciles that property's new night
    with the night before served too and the others' nights unmoved; the third changes nothing."""
    for name in ("DAGSTER_HOME", "RECON_PROVIDER", "RECON_PROVIDER_FLAVOUR", "RECON_PROVIDER_BASE_URL"):
        monkeypatch.setenv(name, "")  # the demo sets them; each is put back after the test
    monkeypatch.delenv("DAGSTER_HOME")
    zone = ZoneInfo(timezone)
    midnight = datetime.combine(datetime.now(zone).date() - timedelta(days=2), time(0), zone)
    printed: list[str] = []

    def demo_at(moment: datetime) -> dict[str, NightOutcome]:
        outcomes = run_demo(HOTEL_BOOKINGS, echo=printed.append, flavour=flavour, clock=lambda: moment)
        assert unlike_the_world(outcomes) is None
        return {outcome.property_id: outcome for outcome in outcomes}

    before = demo_at(midnight - timedelta(minutes=2))
    assert before[moved].night == (midnight.date() - timedelta(days=2)).isoformat()
    printed.clear()
    after = demo_at(midnight + timedelta(minutes=2))
    assert after[moved].night == (midnight.date() - timedelta(days=1)).isoformat()
    assert [line for line in printed if "also serves the night before" in line] == [
        f"the provider also serves the night before of {moved} {before[moved].night} (an earlier demo's, "
        "whose last payments were posted in tonight's)"
    ]
    for property_id, outcome in after.items():  # the other properties' nights did not move
        assert (outcome.night == before[property_id].night) == (property_id != moved)
    assert after[moved].adjustments_new > 0

    again = demo_at(midnight + timedelta(minutes=2))
    for property_id, outcome in again.items():
        assert (outcome.night, outcome.found) == (after[property_id].night, after[property_id].found)
        assert outcome.adjustments_new == 0


# --- the hotel-style property (simulation/demo/hotel_night.py, HotelNightBuilder) -----------------------


@pytest.mark.fast
def test_the_hotel_world_builds_what_each_rule_pairs_and_leaves_the_keyed_properties_as_they_were() -> None:
    properties = demo_properties(DEFAULT_FLAVOUR)
    keyed_ids = [p.property_id for p in KEYED_PROPERTIES]
    assert [p.property_id for p in properties] == [*keyed_ids, HOTEL, *PMS_STYLE_OF]
    nights = {p.property_id: date(2026, 12, 3) for p in properties}
    world = build_world(nights, HOTEL_BOOKINGS, properties=properties)
    keyed = build_world(nights, HOTEL_BOOKINGS)  # the tests' worlds: the keyed properties alone
    assert [e for e in world.ledger_entries if e["property_id"] in keyed_ids] == keyed.ledger_entries
    assert Counter({k: n for k, n in world.expected.items() if k[0] in keyed_ids}) == keyed.expected
    built = {rule: n for (p, _night, rule), n in world.expected_matches.items() if p == HOTEL}
    assert set(built) == set(TIERS) and all(built.values())  # every matcher's rule has something to pair
    entries = [e for e in world.ledger_entries if e["property_id"] == HOTEL]
    unkeyed = [e for e in entries if e["provider_record_id"] is None]
    assert len(unkeyed) > len(entries) // 2  # most payments name no provider id
    assert not [
        e for e in entries if e["kind"] == "fee" and not str(e["provider_record_id"]).startswith("po_")
    ]


@pytest.mark.slow  # a `recon demo` process
def test_the_demo_pairs_the_hotel_ledger_rule_by_rule_and_finds_only_what_was_planted(tmp_path: Path) -> None:
    env = fresh_env(tmp_path)
    result = run_recon("demo", "--bookings", str(HOTEL_BOOKINGS), env=env)
    assert result.returncode == 0, result.stderr
    assert "differs" not in result.stdout
    nights = dict(NIGHT_BLOCK.findall(result.stdout))
    assert HOTEL in nights
    # the hotel-style properties alone print their matches per rule (the keyed properties' are the
    # provider's id alone)
    block = result.stdout.split(f"== {HOTEL}")[1].split("\n== ")[0]
    assert block.count("matched by") == 1 and result.stdout.count("matched by") == 1 + len(PMS_STYLE_OF)
    assert re.search(r"^   booking and amount +\d+ +\d+$", block, re.MULTILINE)
    assert lifecycle_lines(result.stdout)[HOTEL] == (1, 1, 1, 1, 1, 1)  # the PMS catches up, as elsewhere

    properties = DEMO_PROPERTIES
    world = build_world(
        {p.property_id: date.fromisoformat(nights[p.property_id]) for p in properties},
        HOTEL_BOOKINGS,
        properties=properties,
    )
    night = nights[HOTEL]
    planted = {
        category: n
        for (p, nt, category), n in (world.expected + world.expected_payouts).items()
        if (p, nt) == (HOTEL, night)
    }
    built = {rule: n for (p, nt, rule), n in world.expected_matches.items() if (p, nt) == (HOTEL, night)}
    with sqlite3.connect(tmp_path / "home" / "recon.sqlite") as connection:
        found = dict(
            connection.execute(
                "SELECT category, COUNT(*) FROM discrepancies WHERE property_id = ? AND night = ? "
                "GROUP BY category",
                (HOTEL, night),
            ).fetchall()
        )
        matched = dict(
            connection.execute(
                "SELECT rule, COUNT(*) FROM matches WHERE property_id = ? AND night = ? "
                "AND status = 'matched' AND cleared_at IS NULL GROUP BY rule",
                (HOTEL, night),
            ).fetchall()
        )
        paired = connection.execute(
            "SELECT provider_record_ids, ledger_entry_ids FROM matches WHERE property_id = ? AND night = ? "
            "AND cleared_at IS NULL AND provider_amount_minor = ledger_amount_minor",
            (HOTEL, night),
        ).fetchall()
        proposals = connection.execute(
            "SELECT provider_record_id, ledger_entry_id FROM adjustments WHERE property_id = ? AND night = ?",
            (HOTEL, night),
        ).fetchall()
        keyed = [p.property_id for p in KEYED_PROPERTIES]
        other_matches = connection.execute(
            f"SELECT COUNT(*) FROM matches WHERE property_id IN ({', '.join('?' * len(keyed))})", keyed
        )
        assert other_matches.fetchone() == (0,)  # the keyed properties: everything by the provider's id
    assert found == planted
    assert matched == built
    records = {record for ids, _entries in paired for record in ids.split()}
    entries = {entry for _ids, ids in paired for entry in ids.split()}
    assert proposals and len(records) == sum(built.values()) - 1  # every match but the one 5.00 off
    assert not [(r, e) for r, e in proposals if r in records or e in entries]


@pytest.mark.slow  # a Dagster run per database
def test_the_hotel_night_reconciles_to_its_plants_and_its_pairs_on_both_databases(database_url: str) -> None:
    """The hotel-style night alone through the night's job, on SQLite and PostgreSQL (whose seeding goes
    through COPY): its findings are the planted ones and each rule pairs what the world built."""
    [hotel] = [p for p in DEMO_PROPERTIES if p.property_id == HOTEL]
    with seeded(database_url, properties=(hotel,)) as pipeline:
        result = pipeline.materialize()
        assert result.success
        assert pipeline.found(HOTEL) == pipeline.planted(HOTEL)
        metadata = asset_metadata(result, "discrepancy_report")
        built = {rule: n for (p, _night, rule), n in pipeline.world.expected_matches.items() if p == HOTEL}
        assert {rule: metadata.get(f"matches/{rule}", 0) for rule in TIERS} == built


@pytest.mark.slow  # two Dagster runs
def test_two_hotel_nights_running_each_keep_their_own_pairs_and_the_late_posting_is_a_timing_difference(
    sqlite_url: str,
) -> None:
    """The night before's late posting lands in tonight: the night before's match re-keys it to its charge
    (a timing difference, no finding), and its postings, loaded as tonight's neighbours, are not paired
    again; each night's matches and counts are its own (they were once counted again the night after)."""
    [hotel] = [p for p in DEMO_PROPERTIES if p.property_id == HOTEL]
    before = NIGHT - timedelta(days=1)
    earlier = build_world({HOTEL: before}, 40, properties=(hotel,))

    def with_the_night_before(world: World) -> None:
        for name in ("charges", "refunds", "payment_intents", "disputes", "payouts", "balance_transactions"):
            getattr(world.store, name).extend(getattr(earlier.store, name))
        for name in ("bookings", "payment_orders", "ledger_entries"):
            getattr(world, name).extend(getattr(earlier, name))

    with seeded(sqlite_url, properties=(hotel,), edit=with_the_night_before) as pipeline:
        runs = {
            night: dg.materialize(
                reconciliation_assets,
                partition_key=night.isoformat(),
                instance=pipeline.instance,
                resources=pipeline.resources,
                run_config=batch_run_config([HOTEL]),
            )
            for night in (before, NIGHT)
        }
        rows = pipeline.table(discrepancies)
        matches_rows = pipeline.table(matches)
    columns = [column.name for column in discrepancies.columns]
    match_columns = [column.name for column in matches.columns]
    for night, world in ((before, earlier), (NIGHT, pipeline.world)):
        assert runs[night].success
        found = Counter(
            row[columns.index("category")] for row in rows if row[columns.index("night")] == str(night)
        )
        planted = {c: n for (_p, nt, c), n in world.expected.items() if nt == night.isoformat()}
        assert dict(found) == planted
        built = {rule: n for (_p, nt, rule), n in world.expected_matches.items() if nt == night.isoformat()}
        metadata = asset_metadata(runs[night], "discrepancy_report")
        assert {rule: metadata.get(f"matches/{rule}", 0) for rule in TIERS} == built
    keys = Counter(row[match_columns.index("match_key")] for row in matches_rows)
    assert keys and max(keys.values()) == 1  # no pair saved under both nights
