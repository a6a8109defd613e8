"""The posting drain end to end over the ``http`` adapter: approved adjustments on PostgreSQL, drained into
the Apaleo-shaped PMS simulator on a real loopback server, through every outcome the PMS can give — a
charge that lands, an accepted charge whose answer never comes (looked up at the next drain, never posted
twice), a 409 on a key the PMS already holds, a 5xx (looked up, found missing, posted afresh) and a 422
(failed for good with the PMS's own reason)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import Engine, insert

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import ledger_entries
from recon_pipeline.postings.drain import drain, posting_of
from recon_pipeline.postings.http_adapter import HttpPostingAdapter, folio_id
from recon_pipeline.postings.outbox import APPROVED, Claimed
from recon_pipeline.postings.store import read_posted_adjustments
from recon_pipeline_tests.test_postings import NOW, POLICY, Clock, approve, posting
from recon_pipeline_tests.test_postings_http import API_KEY, Pms, serve_pms

pytestmark = pytest.mark.postgres

CHARGES = f"/finance/v1/folio-actions/{folio_id('P1', '2026-12-01')}/charges"
FOLIO = f"/finance/v1/folios/{folio_id('P1', '2026-12-01')}"
TIMEOUT_S = 0.5  # the adapter's; the simulator's hang outlasts it


@pytest.fixture
def engine(postgres_url: str) -> Iterator[Engine]:
    engine = make_engine(postgres_url)
    migrations.upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def pms() -> Iterator[Pms]:
    with serve_pms() as pms:
        yield pms


@pytest.fixture
def adapter(pms: Pms) -> Iterator[HttpPostingAdapter]:
    with pms.adapter(timeout_s=TIMEOUT_S) as adapter:
        yield adapter


def run_drain(engine: Engine, adapter: HttpPostingAdapter, clock: Clock) -> dict[str, int]:
    return drain(engine, adapter, "w1", policy=POLICY, clock=clock, rng=random.Random(7)).by_state


def requests(pms: Pms, path: str) -> int:
    return int(pms.stats()["requests_by_path"].get(path, 0))


def test_an_approved_adjustment_is_posted_as_one_charge(
    engine: Engine,
    pms: Pms,
    adapter: HttpPostingAdapter,
) -> None:
    adjustment = approve(engine, "ch_1", amount_minor=-1250)
    clock = Clock()
    assert run_drain(engine, adapter, clock) == {"posted": 1}
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["lookups"], row["adapter"]) == ("posted", 1, 0, "http")
    assert (row["pms_reference"], row["adjustment_status"]) == ("P1-2026-12-01-1", "posted")
    folio = pms.control.get(FOLIO, headers={"Authorization": f"Bearer {API_KEY}"}).json()
    assert [(c["id"], c["amount"], c["receipt"]["number"]) for c in folio["charges"]] == [
        ("P1-2026-12-01-1", {"amount": -12.5, "currency": "EUR"}, row["idempotency_key"])
    ]
    clock.advance(timedelta(days=1))
    assert run_drain(engine, adapter, clock) == {}  # nothing left due, nothing sent again
    assert requests(pms, CHARGES) == 1


def test_an_accepted_charge_whose_answer_never_came_is_looked_up_and_stored_once(
    engine: Engine,
    pms: Pms,
    adapter: HttpPostingAdapter,
) -> None:
    adjustment = approve(engine, "ch_1")
    clock = Clock()
    pms.faults(accept_then_hang=1, hang_s=2)
    assert run_drain(engine, adapter, clock) == {"unknown": 1}
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["adjustment_status"]) == ("unknown", 1, "approved")
    assert "ReadTimeout" in row["last_error"]
    assert pms.stats()["postings_stored"] == 1  # the PMS holds it; the drain does not know
    assert run_drain(engine, adapter, clock) == {}  # not due before its backoff
    clock.now = row["next_attempt_at"]
    assert run_drain(engine, adapter, clock) == {"posted": 1}
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["lookups"]) == ("posted", 1, 1)
    assert (row["pms_reference"], row["adjustment_status"]) == ("P1-2026-12-01-1", "posted")
    assert requests(pms, CHARGES) == 1  # looked up, never posted again
    assert requests(pms, FOLIO) == 1
    assert pms.stats()["postings_stored"] == 1


def test_a_conflict_on_a_key_the_pms_holds_is_a_lookup_not_a_second_charge(
    engine: Engine,
    pms: Pms,
    adapter: HttpPostingAdapter,
) -> None:
    """The PMS already holds the key (an earlier sender's charge whose answer was lost) and answers a
    repeat with 409, as while the first request is in flight: the drain reads the folio and books the
    PMS's own charge id."""
    adjustment = approve(engine, "ch_1")
    row = posting(engine, adjustment)
    earlier = adapter.post(
        posting_of(engine, Claimed(adjustment, row["idempotency_key"], APPROVED, 0, 0, "earlier", NOW))
    )
    pms.faults(conflict_on_repeat=True)
    assert run_drain(engine, adapter, Clock()) == {"posted": 1}
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["pms_reference"]) == ("posted", 1, earlier.pms_reference)
    stats = pms.stats()
    assert stats["responses_by_status"] == {"201": 1, "409": 1, "200": 1}  # the 200 is the folio read
    assert (stats["postings_stored"], stats["duplicates_refused"]) == (1, 1)


def test_a_server_error_is_looked_up_found_missing_and_posted_afresh(
    engine: Engine,
    pms: Pms,
    adapter: HttpPostingAdapter,
) -> None:
    adjustment = approve(engine, "ch_1")
    clock = Clock()
    pms.faults(statuses=[503])
    assert run_drain(engine, adapter, clock) == {"unknown": 1}
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"]) == ("unknown", 1)
    assert "503" in row["last_error"]
    clock.now = row["next_attempt_at"]
    assert run_drain(engine, adapter, clock) == {"approved": 1}  # the folio holds nothing: post again
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["lookups"], row["last_error"]) == ("approved", 1, 1, None)
    assert row["next_attempt_at"] > clock.now  # after the backoff of one spent post
    clock.now = row["next_attempt_at"]
    assert run_drain(engine, adapter, clock) == {"posted": 1}
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["lookups"]) == ("posted", 2, 1)
    assert row["adjustment_status"] == "posted"
    assert requests(pms, CHARGES) == 2 and requests(pms, FOLIO) == 1
    assert pms.stats()["postings_stored"] == 1


def test_a_refusal_fails_for_good_with_the_pms_reason(
    engine: Engine,
    pms: Pms,
    adapter: HttpPostingAdapter,
) -> None:
    """The property's folio books EUR; an adjustment in USD is refused (422) and never sent again."""
    first = approve(engine, "ch_1")
    clock = Clock()
    assert run_drain(engine, adapter, clock) == {"posted": 1}  # the folio opens in EUR
    refused = approve(engine, "ch_2", currency="USD")
    assert run_drain(engine, adapter, clock) == {"failed": 1}
    assert posting(engine, first)["state"] == "posted"
    row = posting(engine, refused)
    assert (row["state"], row["attempts"], row["adjustment_status"]) == ("failed", 1, "approved")
    assert row["last_error"].startswith("PMS 422: ") and "currency" in row["last_error"].lower()
    clock.advance(timedelta(days=1))
    assert run_drain(engine, adapter, clock) == {}
    assert requests(pms, CHARGES) == 2
    assert pms.stats()["postings_stored"] == 1


def test_a_charge_posted_over_http_is_credited_to_its_night_once_the_pms_ledger_holds_it(
    engine: Engine,
    adapter: HttpPostingAdapter,
) -> None:
    """The next reconciliation of the night reads a posted adjustment's entry under the PMS's own
    reference of the charge (as the PMS's ledger names it), not only under the ``sql`` adapter's id."""
    adjustment = approve(engine, "ch_1", amount_minor=-1250)
    assert run_drain(engine, adapter, Clock()) == {"posted": 1}
    reference = posting(engine, adjustment)["pms_reference"]
    with engine.connect() as connection:
        assert read_posted_adjustments(connection, ["P1"], "2026-12-01") == {
            "P1": []
        }  # not in the ledger yet
    with engine.begin() as connection:  # the PMS's ledger books its charge under its own id
        connection.execute(
            insert(ledger_entries).values(
                entry_id=reference,
                property_id="P1",
                booking_id=None,
                provider_record_id="ch_1",
                kind="adjustment",
                amount_minor=-1250,
                currency="EUR",
                posted_at=NOW + timedelta(days=3),
            )
        )
    with engine.connect() as connection:
        [posted] = read_posted_adjustments(connection, ["P1"], "2026-12-01")["P1"]
    assert (posted.entry["entry_id"], posted.entry["amount_minor"], posted.provider_record_id) == (
        reference,
        -1250,
        "ch_1",
    )
