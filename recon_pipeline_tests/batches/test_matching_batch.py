"""The matcher through the batch path (``reconcile_batch``), on SQLite and PostgreSQL, against the Stripe
simulator over loopback: a night of a hotel whose ledger is kept PMS-style (``support/pms_night.py``:
most postings without the provider's id, ``fee_booking = per_payout``) reconciles to the planted
discrepancies and nothing else, every tier pairing what it should, held-back rows proposing nothing, the
matches stored per rule and a re-run changing no row; a person's decisions (review/matches.py and the
``recon matches`` CLI) hold across the next run; and a keyed world reconciles exactly as it did before
the matcher stood in the path.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import Engine, delete, select

from recon_pipeline.batches import compare
from recon_pipeline.batches.work import BatchRequest, reconcile_batch
from recon_pipeline.categories import finding_frame
from recon_pipeline.db.schema import (
    adjustments,
    discrepancies,
    match_decisions,
    matches,
    night_reconciliations,
)
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.settings import DEFAULT_FLAVOUR
from recon_pipeline.providers.stripe.client import StripeAdapter
from recon_pipeline.reconcile.matching import (
    MatchOutcome,
    NightToMatch,
    empty_matches,
    match_nights,
)
from recon_pipeline.reconcile.matching.outcome import zero_counts
from recon_pipeline.review.matches import confirm_match, pair_by_hand, reject_match
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES, demo_properties
from recon_pipeline.simulation.demo.seed import seed_world
from recon_pipeline.simulation.demo.world import build_world
from recon_pipeline_tests.support.pms_night import (
    NIGHT,
    PAYOUT_FEE_ENTRY,
    PROPERTY,
    PmsNightRun,
    build_pms_night,
    served_night,
)
from recon_pipeline_tests.support.provider_fixtures import (
    FAST_RETRY,
    StartSimulator,
    flavour_of,
    simulator_fixture,  # noqa: F401  (fixtures)
    simulator_server_fixture,  # noqa: F401
)
from recon_pipeline_tests.support.review_commands import recon

NIGHT_TEXT = NIGHT.isoformat()
RULES = ("exact_id", "person", "reference", "booking_amount", "strong_keys", "split", "card_window")

# Every match and suggestion of the night, as the matches table holds it: (rule, status).
MATCHES = {
    "ch_r1=le_r1": ("reference", "matched"),
    "ch_r2=le_r2": ("reference", "matched"),  # the reference names the PaymentIntent
    "ch_b1=le_b1": ("booking_amount", "matched"),
    "re_b1=le_b1r": ("booking_amount", "matched"),  # a refund goes through the same matcher
    "ch_b2=le_b2": ("booking_amount", "matched"),
    "ch_td=le_td": ("booking_amount", "matched"),  # posted the next night
    "ch_am1=le_am1": ("booking_amount", "matched"),  # identical charges: certain money, in time order
    "ch_am2=le_am2": ("booking_amount", "matched"),
    "ch_s1=le_s1": ("strong_keys", "matched"),  # the approval code
    "ch_s2=le_s2": ("strong_keys", "matched"),  # booking + card, amounts differ
    "ch_sp1=le_sp1a+le_sp1b": ("split", "matched"),  # one charge, two postings
    "ch_sp2a+ch_sp2b=le_sp2": ("split", "matched"),  # two charges, one posting
    "ch_cw=le_cw": ("card_window", "matched"),
    "ch_sg1=le_sg1": ("card_window", "suggested"),
    "ch_sg2=le_sg2": ("card_window", "suggested"),
}
MATCHES_BY_RULE = {
    "exact_id": 2,  # ch_k1 by its id, ch_k2 by its PaymentIntent's; no fee row (booked per payout)
    "person": 0,
    "reference": 2,
    "booking_amount": 6,
    "strong_keys": 2,
    "split": 2,
    "card_window": 1,
}
# The planted discrepancies (and the booking typo a person pairs later), each found once, with what it
# proposes; the held-back rows' findings, proposing nothing.
PLANTED = {
    ("amount_mismatch", "ch_s2:payment"): ("correct_amount_payment", 500),
    ("missing_in_ledger", "ch_u1:payment"): ("post_missing_payment", 26_000),
    ("missing_in_ledger", "ch_u2:payment"): ("post_missing_payment", 3_900),
    ("missing_at_provider", "entry:le_p1"): ("reverse_unmatched_payment", -15_000),
    ("missing_in_ledger", "ch_la:payment"): ("post_missing_payment", 18_000),  # the look-alikes
    ("missing_at_provider", "entry:le_la"): ("reverse_unmatched_payment", -18_000),
    ("missing_in_ledger", "ch_hb:payment"): ("post_missing_payment", 8_800),  # the booking typo
    # three interchangeable twins, two postings: the earliest two pair, the third is certain money
    ("missing_in_ledger", "ch_am3:payment"): ("post_missing_payment", 11_000),
    ("missing_at_provider", "entry:le_hb"): ("reverse_unmatched_payment", -8_800),
}
HELD = {
    ("suggested_match", "match:ch_sg1=le_sg1"),
    ("suggested_match", "match:ch_sg2=le_sg2"),
}


@pytest.fixture
def rome(engine: Engine, database_url: str, simulator: StartSimulator) -> Iterator[PmsNightRun]:
    with served_night(build_pms_night(), engine, database_url, simulator) as run:
        yield run


def _ids(match_key: str) -> set[str]:
    records, entries = match_key.split("=")
    return {*records.split("+"), *entries.split("+")}


def test_every_tier_pairs_what_it_should_and_only_the_planted_discrepancies_are_found(
    rome: PmsNightRun,
) -> None:
    [result] = rome.run("run-1").results
    assert result.matches_by_rule == MATCHES_BY_RULE
    assert result.report.matches_by_rule == MATCHES_BY_RULE
    stored = rome.matches()
    assert {key: (row["rule"], row["status"]) for key, row in stored.items()} == MATCHES
    assert {row["run_id"] for row in stored.values()} == {"run-1"}
    assert result.matches_saved == {
        "new": 15, "unchanged": 0, "updated": 0, "reappeared": 0, "cleared": 0, "decided": 0
    }  # fmt: skip

    found = rome.findings()
    assert set(found) == set(PLANTED) | HELD  # nothing else: no fee, no orphan, no timing difference
    assert rome.proposals() == PLANTED  # the held-back findings propose nothing
    assert all(found[key]["difference_minor"] == 0 for key in HELD)

    # A strong-key match whose amounts differ is one amount_mismatch, not a missing pair.
    mismatch = found[("amount_mismatch", "ch_s2:payment")]
    assert (mismatch["provider_amount_minor"], mismatch["ledger_amount_minor"]) == (20_000, 19_500)
    assert mismatch["ledger_entry_id"] == "le_s2"
    assert stored["ch_s2=le_s2"]["keys_differ"] == "amount 200.00 EUR vs 195.00 EUR"
    # The look-alikes (one card, one amount, two bookings, no approval code) are never paired.
    assert not [key for key in stored if _ids(key) & {"ch_la", "le_la", "ch_hb", "le_hb"}]
    # Three identical charges, two postings: two pair in time order, the third is missing with its money.
    assert not [key for key in found if key[0] == "ambiguous_match"]
    assert found[("missing_in_ledger", "ch_am3:payment")]["difference_minor"] == 11_000
    # A suggestion names its one candidate, below the threshold.
    suggestion = stored["ch_sg1=le_sg1"]
    assert (suggestion["score"], suggestion["provider_amount_minor"]) == (0.5, 7_700)
    assert "below the threshold 0.80" in found[("suggested_match", "match:ch_sg1=le_sg1")]["detail"]
    # The next night's unkeyed posting explains tonight's charge: a timing difference, not a finding.
    assert result.report.timing_difference_count == 1
    assert not [key for key in found if {"ch_td", "le_td", "le_prev"} & {key[1].split(":")[-1]}]
    # Fees booked per payout: the per-payout entry and the 22 charges' fee rows are not compared tonight,
    # the report says what Stripe took.
    assert not [key for key in found if PAYOUT_FEE_ENTRY in key[1] or key[1].endswith(":fee")]
    assert result.report.fees_taken is not None and result.report.fees_taken.count_by_currency == {"EUR": 22}

    before = rome.snapshot()
    [again] = rome.run("run-2").results
    assert rome.snapshot() == before  # a re-run changes no row
    assert again.matches_saved["unchanged"] == 15 and again.findings["unchanged"] == len(found)
    assert again.matches_by_rule == MATCHES_BY_RULE


def test_the_nights_either_side_leave_the_night_as_it_was(rome: PmsNightRun) -> None:
    """The schedule reconciles the next night and re-runs the earlier ones: the next night's folio posting
    of tonight's charge (le_td) is a timing difference there too, each night keeps its own matches (a
    neighbour's are applied first, never stored or counted again), and tonight re-run changes no row."""
    rome.run("run-1")
    tonight = rome.snapshot(NIGHT_TEXT)
    quiet = {rule: 0 for rule in MATCHES_BY_RULE}
    [after] = rome.run("run-2", (NIGHT + timedelta(days=1)).isoformat()).results
    assert after.report.findings.empty and after.report.timing_difference_count == 1
    assert after.matches_by_rule == quiet
    [before] = rome.run("run-3", (NIGHT - timedelta(days=1)).isoformat()).results
    # the previous night's own posting, which no charge of that night explains
    assert before.report.findings["record_key"].tolist() == ["entry:le_prev"]
    assert before.matches_by_rule == quiet
    assert {row["night"] for row in rome.rows(matches)} == {NIGHT_TEXT}
    [again] = rome.run("run-4").results
    assert rome.snapshot(NIGHT_TEXT) == tonight
    assert again.matches_by_rule == MATCHES_BY_RULE and again.matches_saved["unchanged"] == 15


def _decide_in_review(rome: PmsNightRun, now: datetime) -> None:
    """The analyst's three decisions, through review/matches.py."""
    args = (PROPERTY.property_id, NIGHT_TEXT)
    with rome.engine.begin() as connection:
        confirm_match(connection, *args, "ch_sg1=le_sg1", "ana", "same amount, 30 min apart", now)
    with rome.engine.begin() as connection:
        pair_by_hand(connection, *args, ["ch_hb"], ["le_hb"], "ana", "BK-HB-1 is BK-HB1 mistyped", now)
    with rome.engine.begin() as connection:
        reject_match(connection, *args, "ch_sg2=le_sg2", "ben", "two guests at the bar", now)


def _decide_in_cli(
    rome: PmsNightRun, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same decisions through `recon matches list|confirm|pair|reject`."""
    monkeypatch.setenv("RECON_DATABASE_URL", rome.database_url)
    where = ("--property", PROPERTY.property_id, "--night", NIGHT_TEXT)
    code, out, err = recon(capsys, "matches", "list", *where, "--status", "suggested")
    assert (code, err) == (0, "")
    assert [line.split()[2] for line in out.splitlines()[2:-1]] == ["ch_sg1=le_sg1", "ch_sg2=le_sg2"]
    assert out.splitlines()[-1] == "2 of 2 matching"
    said = f"({PROPERTY.property_id} {NIGHT_TEXT})"
    decisions = [
        (["confirm", "ch_sg1=le_sg1", "--by", "ana", "--reason", "same amount, 30 min apart"],
         f"match ch_sg1=le_sg1 {said}: suggested -> confirmed by ana at 77.00 EUR provider / 77.00 EUR"),
        (["pair", "--record", "ch_hb", "--entry", "le_hb", "--by", "ana", "--reason",
          "BK-HB-1 is BK-HB1 mistyped"],
         f"match ch_hb=le_hb {said}: unmatched -> confirmed by ana at 88.00 EUR provider / 88.00 EUR"),
        (["reject", "ch_sg2=le_sg2", "--by", "ben", "--reason", "two guests at the bar"],
         f"match ch_sg2=le_sg2 {said}: suggested -> rejected by ben at 56.00 EUR provider / 56.00 EUR"),
    ]  # fmt: skip
    for argv, line in decisions:
        code, out, err = recon(capsys, "matches", *argv, *where)
        assert (code, err, out) == (0, "", f"{line} ledger\n")


@pytest.mark.parametrize("where", ["review", "cli"])
def test_a_persons_decisions_hold_across_the_next_run(
    rome: PmsNightRun, where: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Confirm a suggestion, pair two unmatched records by hand, reject a suggestion; re-run: the
    confirmed and paired findings clear and their proposals are withdrawn, the rejected pairing is never
    proposed again (its rows go to the diff), the decisions stay as made and are audited."""
    rome.run("run-1")
    if where == "review":
        _decide_in_review(rome, datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    else:
        _decide_in_cli(rome, capsys, monkeypatch)
    decided = {key: row for key, row in rome.matches().items() if row["status"] in ("confirmed", "rejected")}
    assert {key: (row["rule"], row["status"], row["decided_by"]) for key, row in decided.items()} == {
        "ch_sg1=le_sg1": ("card_window", "confirmed", "ana"),
        "ch_hb=le_hb": ("person", "confirmed", "ana"),
        "ch_sg2=le_sg2": ("card_window", "rejected", "ben"),
    }

    [result] = rome.run("run-2").results
    assert result.matches_by_rule == {**MATCHES_BY_RULE, "person": 2}
    after = rome.matches()
    assert {key: after[key] for key in decided} == decided  # no run rewrites a person's decision
    assert {key: (row["rule"], row["status"]) for key, row in after.items() if key not in decided} == {
        key: value for key, value in MATCHES.items() if key not in decided
    }  # the rejected pairing is not proposed again, in any shape
    assert not [key for key in after if key not in decided and _ids(key) & {"ch_sg2", "le_sg2"}]

    found = rome.findings()
    settled = {
        ("suggested_match", "match:ch_sg1=le_sg1"),
        ("suggested_match", "match:ch_sg2=le_sg2"),
        ("missing_in_ledger", "ch_hb:payment"),
        ("missing_at_provider", "entry:le_hb"),
    }
    rejected = {
        ("missing_in_ledger", "ch_sg2:payment"): ("post_missing_payment", 5_600),
        ("missing_at_provider", "entry:le_sg2"): ("reverse_unmatched_payment", -5_600),
    }
    assert set(found) == (set(PLANTED) | HELD) - settled | set(rejected)
    assert rome.proposals() == {k: v for k, v in PLANTED.items() if k not in settled} | rejected
    withdrawn = rome.rows(adjustments, adjustments.c.status == "withdrawn")
    assert sorted(row["record_key"] for row in withdrawn) == ["ch_hb:payment", "entry:le_hb"]
    cleared = rome.rows(discrepancies, discrepancies.c.cleared_at.is_not(None))
    assert {(row["category"], row["record_key"]) for row in cleared} == settled

    audit = rome.rows(match_decisions)
    assert [
        (row["match_key"], row["action"], row["previous_status"], row["decided_by"], row["reason"])
        for row in audit
    ] == [
        ("ch_sg1=le_sg1", "confirm", "suggested", "ana", "same amount, 30 min apart"),
        ("ch_hb=le_hb", "pair", None, "ana", "BK-HB-1 is BK-HB1 mistyped"),
        ("ch_sg2=le_sg2", "reject", "suggested", "ben", "two guests at the bar"),
    ]
    assert [(row["provider_amount_minor"], row["ledger_amount_minor"], row["currency"]) for row in audit] == [
        (7_700, 7_700, "EUR"),
        (8_800, 8_800, "EUR"),
        (5_600, 5_600, "EUR"),
    ]

    before = rome.snapshot()
    rome.run("run-3")
    assert rome.snapshot() == before


# ----- a keyed world: the matcher in the path changes nothing ----------------------------------------------


def _identity(nights: Sequence[NightToMatch]) -> list[MatchOutcome]:
    """The nights as they were before the matcher: both frames straight to the diff."""
    return [
        MatchOutcome(
            night.provider_records, night.ledger, empty_matches(), finding_frame({}), zero_counts(), lambda: 0
        )
        for night in nights
    ]


def _results(engine: Engine) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The findings and the adjustments as a run leaves them, without the run's own ids and times."""
    with engine.connect() as connection:
        found = connection.execute(
            select(
                discrepancies.c.property_id,
                discrepancies.c.category,
                discrepancies.c.record_key,
                discrepancies.c.kind,
                discrepancies.c.provider_record_id,
                discrepancies.c.ledger_entry_id,
                discrepancies.c.booking_id,
                discrepancies.c.provider_amount_minor,
                discrepancies.c.ledger_amount_minor,
                discrepancies.c.difference_minor,
                discrepancies.c.currency,
                discrepancies.c.detail,
            ).order_by(discrepancies.c.property_id, discrepancies.c.category, discrepancies.c.record_key)
        )
        proposed = connection.execute(
            select(
                adjustments.c.idempotency_key,
                adjustments.c.property_id,
                adjustments.c.kind,
                adjustments.c.category,
                adjustments.c.record_key,
                adjustments.c.provider_record_id,
                adjustments.c.ledger_entry_id,
                adjustments.c.amount_minor,
                adjustments.c.currency,
                adjustments.c.reason,
                adjustments.c.status,
            ).order_by(adjustments.c.idempotency_key)
        )
        return [tuple(row) for row in found], [tuple(row) for row in proposed]


def test_a_keyed_world_reconciles_exactly_as_before(
    engine: Engine, simulator: StartSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo's planted-findings world (every posting names its provider id, fees per movement): with
    the matcher in the path, every property's findings and proposals are those of the diff alone, row for
    row, and the matcher hands the diff the very frames it was given."""
    properties = DEMO_PROPERTIES  # the keyed ones (the demo's hotel-style property is not keyed)
    world = build_world(
        {p.property_id: NIGHT for p in properties}, bookings_per_night=30, properties=properties
    )
    seed_world(engine, world)
    served = simulator(flavour_of("stripe").served(world.store))
    outcomes: list[tuple[pd.DataFrame, pd.DataFrame, MatchOutcome]] = []

    def spied(nights: Sequence[NightToMatch]) -> list[MatchOutcome]:
        found = match_nights(nights)
        outcomes.extend((n.provider_records, n.ledger, o) for n, o in zip(nights, found, strict=True))
        return found

    request = BatchRequest(NIGHT_TEXT)
    with ProviderHttp(served.base_url, retry=FAST_RETRY) as http:
        client = StripeAdapter(http)
        monkeypatch.setattr(compare, "match_nights", spied)
        batch = reconcile_batch(engine, client, request, "with-matcher")
        assert {o.status for o in batch.outcomes} == {"succeeded"} and len(batch.results) == len(properties)
        with_matcher = _results(engine)
        with engine.begin() as connection:
            for table in (adjustments, discrepancies, matches, night_reconciliations):
                connection.execute(delete(table))
        monkeypatch.setattr(compare, "match_nights", _identity)
        reconcile_batch(engine, client, request, "diff-alone")
        diff_alone = _results(engine)

    assert with_matcher == diff_alone
    assert with_matcher[0] and with_matcher[1]  # the planted findings, and their proposals
    assert len(outcomes) >= len(properties)  # once a property, again after a look-up found records
    for provider_records, ledger_records, outcome in outcomes:
        assert outcome.matches.empty and outcome.findings.empty
        pd.testing.assert_frame_equal(outcome.provider_records, provider_records)
        pd.testing.assert_frame_equal(outcome.ledger, ledger_records)
    for result in batch.results:
        assert {rule: n for rule, n in result.matches_by_rule.items() if rule != "exact_id"} == dict.fromkeys(
            RULES[1:], 0
        )
        assert result.matches_by_rule["exact_id"] > 0
    planted = {(p, c): n for (p, _night, c), n in world.expected.items()}
    found: dict[tuple[str, str], int] = {}
    for property_id, category, *_ in with_matcher[0]:
        found[(property_id, category)] = found.get((property_id, category), 0) + 1
    assert found == planted


# ----- a batch is matched as one: the same rows as its properties one by one ---------------------------


def _matches(engine: Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as connection:
        found = connection.execute(
            select(
                matches.c.property_id,
                matches.c.match_key,
                matches.c.rule,
                matches.c.status,
                matches.c.score,
                matches.c.detail,
            ).order_by(matches.c.property_id, matches.c.match_key)
        )
        return [tuple(row) for row in found]


def test_a_batch_matched_as_one_writes_what_its_properties_write_one_by_one(
    engine: Engine, simulator: StartSimulator
) -> None:
    """Every demo property (keyed ones, and one per PMS style: tenders, groups, negative refunds,
    reversals, twins) in one batch, whose nights the matcher runs as one stacked frame; then each property
    in a batch of its own: the findings, proposals and matches stored are the same, row for row."""
    everyone = demo_properties(DEFAULT_FLAVOUR)
    world = build_world({p.property_id: NIGHT for p in everyone}, bookings_per_night=30, properties=everyone)
    seed_world(engine, world)
    served = simulator(flavour_of("stripe").served(world.store))
    with ProviderHttp(served.base_url, retry=FAST_RETRY) as http:
        client = StripeAdapter(http)
        batch = reconcile_batch(engine, client, BatchRequest(NIGHT_TEXT), "together")
        assert {o.status for o in batch.outcomes} == {"succeeded"} and len(batch.results) == len(everyone)
        together = (*_results(engine), _matches(engine))
        with engine.begin() as connection:
            for table in (adjustments, discrepancies, matches, night_reconciliations):
                connection.execute(delete(table))
        for prop in everyone:
            alone = reconcile_batch(engine, client, BatchRequest(NIGHT_TEXT, (prop.property_id,)), "alone")
            assert [o.status for o in alone.outcomes] == ["succeeded"]
        one_by_one = (*_results(engine), _matches(engine))
    assert together == one_by_one
    findings, proposals, paired = together
    assert findings and proposals and len({row[0] for row in paired}) >= 3  # PMS properties' matches
