"""The posting drain end to end over the ``http`` adapter: approved adjustments on PostgreSQL, drained into
the Apaleo-shaped PMS simulator on a real loopback server, through every outcome the PMS can give — a
charge that lands, an accepted charge whose answer never comes (looked up at the next drain, never posted
twice), a 409 on a key the PMS already holds, a 5xx (looked up, found missing, posted afresh) and a 422
(failed for good with the PMS's own reason)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, insert

from recon_pipeline.db.outbox_states import APPROVED
from recon_pipeline.db.schema import ledger_entries
from recon_pipeline.postings.drain import drain, posting_of
from recon_pipeline.postings.http_adapter import HttpPostingAdapter, folio_id
from recon_pipeline.postings.outbox import Claimed
from recon_pipeline.postings.store import read_posted_adjustments
from recon_pipeline_tests.support.pms_server import API_KEY, Pms, serve_pms
from recon_pipeline_tests.support.posting_fixtures import NOW, POLICY, Clock, approve, posting

pytestmark = pytest.mark.postgres

CHARGES = f"/finance/v1/folio-actions/{folio_id('P1', '2026-12-01')}/charges"
FOLIO = f"/finance/v1/folios/{folio_id('P1', '2026-12-01')}"
TIMEOUT_S = 0.5  # the adapter's; the simulator's hang outlasts it


@pytest.fixture
def database_url(postgres_url: str) -> str:
    """These tests run on PostgreSQL only: the shared ``engine`` fixture migrates it."""
    return postgres_url


@pytest.fixture
def pms() -> Iterator[Pms]:
    with serve_pms() as pms:
        yield pms


@pytest.fixture
def adapter(pms: Pms) -> Iterator[HttpPostingAdapter]:
    with pms.adapter(timeout_s=TIMEOUT_S) as adapter:
        yield adapter


@dataclass
class HttpDrain:
    """The drain of one database into the PMS simulator over the ``http`` adapter, on a clock the test
    moves: the steps every test here repeats (drain now, drain once due, count what the PMS was sent)."""

    engine: Engine
    pms: Pms
    adapter: HttpPostingAdapter
    clock: Clock = field(default_factory=Clock)

    def run(self) -> dict[str, int]:
        """One drain at the clock's now: how many postings it left in each state."""
        result = drain(self.engine, self.adapter, "w1", policy=POLICY, clock=self.clock, rng=random.Random(7))
        return result.by_state

    def run_when_due(self, adjustment: str) -> dict[str, int]:
        """The clock moved to the adjustment's next attempt (its backoff spent), then one drain."""
        self.clock.now = posting(self.engine, adjustment)["next_attempt_at"]
        return self.run()

    def run_into_unknown(self, adjustment: str) -> dict[str, Any]:
        """One drain whose post of the adjustment (its first) ends with no answer, under the fault the
        test set: the posting's row after it."""
        assert self.run() == {"unknown": 1}
        row = posting(self.engine, adjustment)
        assert (row["state"], row["attempts"]) == ("unknown", 1)
        return row

    def requests(self, path: str) -> int:
        """How many requests the PMS got on ``path``."""
        return int(self.pms.stats()["requests_by_path"].get(path, 0))


@pytest.fixture
def http_drain(engine: Engine, pms: Pms, adapter: HttpPostingAdapter) -> HttpDrain:
    return HttpDrain(engine, pms, adapter)


def test_an_approved_adjustment_is_posted_as_one_charge(http_drain: HttpDrain) -> None:
    engine, pms = http_drain.engine, http_drain.pms
    adjustment = approve(engine, "ch_1", amount_minor=-1250)
    assert http_drain.run() == {"posted": 1}
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["lookups"], row["adapter"]) == ("posted", 1, 0, "http")
    assert (row["pms_reference"], row["adjustment_status"]) == ("P1-2026-12-01-1", "posted")
    folio = pms.control.get(FOLIO, headers={"Authorization": f"Bearer {API_KEY}"}).json()
    assert [(c["id"], c["amount"], c["receipt"]["number"]) for c in folio["charges"]] == [
        ("P1-2026-12-01-1", {"amount": -12.5, "currency": "EUR"}, row["idempotency_key"])
    ]
    http_drain.clock.advance(timedelta(days=1))
    assert http_drain.run() == {}  # nothing left due, nothing sent again
    assert http_drain.requests(CHARGES) == 1


def test_an_accepted_charge_whose_answer_never_came_is_looked_up_and_stored_once(
    http_drain: HttpDrain,
) -> None:
    engine, pms = http_drain.engine, http_drain.pms
    adjustment = approve(engine, "ch_1")
    pms.faults(accept_then_hang=1, hang_s=2)
    row = http_drain.run_into_unknown(adjustment)
    assert row["adjustment_status"] == "approved"
    assert "ReadTimeout" in row["last_error"]
    assert pms.stats()["postings_stored"] == 1  # the PMS holds it; the drain does not know
    assert http_drain.run() == {}  # not due before its backoff
    assert http_drain.run_when_due(adjustment) == {"posted": 1}
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["lookups"]) == ("posted", 1, 1)
    assert (row["pms_reference"], row["adjustment_status"]) == ("P1-2026-12-01-1", "posted")
    assert http_drain.requests(CHARGES) == 1  # looked up, never posted again
    assert http_drain.requests(FOLIO) == 1
    assert pms.stats()["postings_stored"] == 1


def test_a_conflict_on_a_key_the_pms_holds_is_a_lookup_not_a_second_charge(http_drain: HttpDrain) -> None:
    """The PMS already holds the key (an earlier sender's charge whose answer was lost) and answers a
    repeat with 409, as while the first request is in flight: the drain reads the folio and books the
    PMS's own charge id."""
    engine, pms = http_drain.engine, http_drain.pms
    adjustment = approve(engine, "ch_1")
    row = posting(engine, adjustment)
    earlier = http_drain.adapter.post(
        posting_of(engine, Claimed(adjustment, row["idempotency_key"], APPROVED, 0, 0, "earlier", NOW))
    )
    pms.faults(conflict_on_repeat=True)
    assert http_drain.run() == {"posted": 1}
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["pms_reference"]) == ("posted", 1, earlier.pms_reference)
    stats = pms.stats()
    assert stats["responses_by_status"] == {"201": 1, "409": 1, "200": 1}  # the 200 is the folio read
    assert (stats["postings_stored"], stats["duplicates_refused"]) == (1, 1)


def test_a_server_error_is_looked_up_found_missing_and_posted_afresh(http_drain: HttpDrain) -> None:
    engine, pms = http_drain.engine, http_drain.pms
    adjustment = approve(engine, "ch_1")
    pms.faults(statuses=[503])
    row = http_drain.run_into_unknown(adjustment)
    assert "503" in row["last_error"]
    assert http_drain.run_when_due(adjustment) == {"approved": 1}  # the folio holds nothing: post again
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["lookups"], row["last_error"]) == ("approved", 1, 1, None)
    assert row["next_attempt_at"] > http_drain.clock.now  # after the backoff of one spent post
    assert http_drain.run_when_due(adjustment) == {"posted": 1}
    row = posting(engine, adjustment)
    assert (row["state"], row["attempts"], row["lookups"]) == ("posted", 2, 1)
    assert row["adjustment_status"] == "posted"
    assert http_drain.requests(CHARGES) == 2 and http_drain.requests(FOLIO) == 1
    assert pms.stats()["postings_stored"] == 1


def test_a_refusal_fails_for_good_with_the_pms_reason(http_drain: HttpDrain) -> None:
    """The property's folio books EUR; an adjustment in USD is refused (422) and never sent again."""
    engine = http_drain.engine
    first = approve(engine, "ch_1")
    assert http_drain.run() == {"posted": 1}  # the folio opens in EUR
    refused = approve(engine, "ch_2", currency="USD")
    assert http_drain.run() == {"failed": 1}
    assert posting(engine, first)["state"] == "posted"
    row = posting(engine, refused)
    assert (row["state"], row["attempts"], row["adjustment_status"]) == ("failed", 1, "approved")
    assert row["last_error"].startswith("PMS 422: ") and "currency" in row["last_error"].lower()
    http_drain.clock.advance(timedelta(days=1))
    assert http_drain.run() == {}
    assert http_drain.requests(CHARGES) == 2
    assert http_drain.pms.stats()["postings_stored"] == 1


def test_a_charge_posted_over_http_is_credited_to_its_night_once_the_pms_ledger_holds_it(
    http_drain: HttpDrain,
) -> None:
    """The next reconciliation of the night reads a posted adjustment's entry under the PMS's own
    reference of the charge (as the PMS's ledger names it), not only under the ``sql`` adapter's id."""
    engine = http_drain.engine
    adjustment = approve(engine, "ch_1", amount_minor=-1250)
    assert http_drain.run() == {"posted": 1}
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
