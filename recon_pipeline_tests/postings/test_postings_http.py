"""The ``http`` posting adapter against the PMS simulator on a real loopback server: every outcome, the
unknown outcome resolved by lookup, and the simulator's own Apaleo-shaped contract."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from recon_pipeline.keys import adjustment_id, adjustment_idempotency_key
from recon_pipeline.postings.adapter import LookupUnavailableError, Posting, PostingOutcome
from recon_pipeline.postings.http_adapter import HttpPostingAdapter, folio_id
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.pms.app import build_pms_app
from recon_pipeline_tests.support.dagster_processes import free_port, wait_until
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.pms_server import API_KEY, Pms, serve_pms

CHARGES = "/finance/v1/folio-actions/hotel_1-2026-11-30/charges"


@pytest.fixture
def pms() -> Iterator[Pms]:
    with serve_pms() as pms:
        yield pms


def _posting(record: str = "ch_1", amount_minor: int = -1250, currency: str = "EUR") -> Posting:
    key = adjustment_idempotency_key("hotel_1", "2026-11-30", "missing_in_ledger", record)
    return Posting(
        idempotency_key=key,
        adjustment_id=adjustment_id(key),
        property_id="hotel_1",
        night="2026-11-30",
        booking_id="bk_1",
        provider_record_id=record,
        amount_minor=amount_minor,
        currency=currency,
        description=f"Reconciliation adjustment {record}",
    )


def _posts(pms: Pms) -> int:
    return int(pms.stats()["requests_by_path"].get(CHARGES, 0))


def test_post_lands_once_and_lookup_finds_it(pms: Pms) -> None:
    with pms.adapter() as adapter:
        first = adapter.post(_posting())
        again = adapter.post(_posting())  # the same key and body: the first answer, nothing stored
        found = adapter.lookup(_posting().idempotency_key)
        missing = adapter.lookup(_posting("ch_2").idempotency_key)
    assert first.outcome is PostingOutcome.POSTED
    assert first.pms_reference == "hotel_1-2026-11-30-1"
    assert again == first
    assert found == first
    assert missing is None
    assert pms.stats()["postings_stored"] == 1
    assert pms.stats()["duplicates_refused"] == 1
    charge = pms.control.get(
        f"/finance/v1/folios/{folio_id('hotel_1', '2026-11-30')}",
        headers={"Authorization": f"Bearer {API_KEY}"},
    ).json()["charges"][0]
    assert charge["amount"] == {"amount": -12.5, "currency": "EUR"}
    assert charge["receipt"] == {"type": "Custom", "number": _posting().idempotency_key}


def test_timeout_after_accept_is_unknown_and_lookup_resolves_it(pms: Pms) -> None:
    pms.faults(accept_then_hang=1, hang_s=1)
    with pms.adapter(timeout_s=0.3) as adapter:
        sent = adapter.post(_posting())
        resolved = adapter.lookup(_posting().idempotency_key)
    assert sent.outcome is PostingOutcome.UNKNOWN
    assert sent.reason is not None and "ReadTimeout" in sent.reason
    assert resolved is not None and resolved.outcome is PostingOutcome.POSTED
    assert resolved.pms_reference == "hotel_1-2026-11-30-1"
    assert pms.stats()["postings_stored"] == 1
    assert _posts(pms) == 1


def test_conflict_is_answered_by_lookup_never_a_second_post(pms: Pms) -> None:
    with pms.adapter() as adapter:
        first = adapter.post(_posting())
        pms.faults(conflict_on_repeat=True)
        second = adapter.post(_posting())
    assert second == dataclasses.replace(first, already_posted=True)  # counted as a duplicate suppressed
    stats = pms.stats()
    assert stats["responses_by_status"] == {"200": 1, "201": 1, "409": 1}  # the GET is the lookup
    assert _posts(pms) == 2
    assert stats["postings_stored"] == 1
    assert stats["duplicates_refused"] == 1


def test_conflict_with_nothing_on_the_folio_stays_unknown(pms: Pms) -> None:
    pms.faults(statuses=[409])
    with pms.adapter() as adapter:
        result = adapter.post(_posting())
    assert result.outcome is PostingOutcome.UNKNOWN
    assert result.reason is not None and "409" in result.reason
    assert pms.stats()["postings_stored"] == 0


def test_server_error_is_unknown_then_lookup_finds_nothing_and_a_repost_lands(pms: Pms) -> None:
    pms.faults(statuses=[503])
    with pms.adapter() as adapter:
        failed = adapter.post(_posting())
        looked_up = adapter.lookup(_posting().idempotency_key)
        reposted = adapter.post(_posting())
    assert failed.outcome is PostingOutcome.UNKNOWN
    assert failed.reason is not None and "503" in failed.reason
    assert looked_up is None
    assert reposted.outcome is PostingOutcome.POSTED
    assert pms.stats()["postings_stored"] == 1


def test_a_late_original_and_a_repost_after_lookup_store_one_charge(pms: Pms) -> None:
    """A slow reply is still in flight when the lookup says "not there": the re-post that follows and the
    late original carry the same key, so whichever lands second is refused, never stored."""
    pms.faults(slow_ms=800, path_prefix="/finance/v1/folio-actions")
    with pms.adapter(timeout_s=0.3) as adapter:
        timed_out = adapter.post(_posting())
        looked_up = adapter.lookup(_posting().idempotency_key)
        pms.faults(slow_ms=0)
        reposted = adapter.post(_posting())
    assert timed_out.outcome is PostingOutcome.UNKNOWN
    assert looked_up is None
    assert reposted.outcome is PostingOutcome.POSTED
    wait_until(
        "the late original", lambda: pms.stats()["duplicates_refused"] or None, timeout_s=5, interval_s=0.05
    )
    assert pms.stats()["postings_stored"] == 1


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        (None, _posting(amount_minor=0), "must not be zero"),
        (_posting("ch_eur"), _posting("ch_usd", currency="USD"), "does not match the folio's currency EUR"),
    ],
)
def test_validation_refusal_is_rejected_with_the_pms_message(
    pms: Pms, first: Posting | None, second: Posting, message: str
) -> None:
    with pms.adapter() as adapter:
        if first is not None:
            assert adapter.post(first).outcome is PostingOutcome.POSTED
        result = adapter.post(second)
    assert result.outcome is PostingOutcome.REJECTED
    assert result.reason is not None and message in result.reason
    assert pms.stats()["postings_stored"] == (0 if first is None else 1)


def test_rate_limit_is_waited_out_within_the_budget(pms: Pms) -> None:
    slept: list[float] = []
    pms.faults(statuses=[429, 429], retry_after="2")
    with pms.adapter(sleep=slept.append) as adapter:
        result = adapter.post(_posting())
    assert result.outcome is PostingOutcome.POSTED
    assert slept == [2.0, 2.0]
    assert _posts(pms) == 3
    assert pms.stats()["postings_stored"] == 1


def test_rate_limit_past_the_budget_is_unknown_and_nothing_was_accepted(pms: Pms) -> None:
    slept: list[float] = []
    pms.faults(statuses=[429] * 5, retry_after="2")
    with pms.adapter(sleep=slept.append, rate_limit_budget_s=3.0) as adapter:
        result = adapter.post(_posting())
        pms.faults(statuses=[])
        resolved = adapter.lookup(_posting().idempotency_key)
    assert result.outcome is PostingOutcome.UNKNOWN
    assert result.reason is not None and "not accepted" in result.reason
    assert slept == [2.0]
    assert _posts(pms) == 2
    assert resolved is None


def test_lookup_raises_when_the_pms_cannot_be_asked(pms: Pms) -> None:
    pms.faults(statuses=[503])
    with pms.adapter() as adapter, pytest.raises(LookupUnavailableError, match="503"):
        adapter.lookup(_posting().idempotency_key)
    nobody = f"http://127.0.0.1:{free_port()}"
    with HttpPostingAdapter(nobody, API_KEY, timeout_s=1.0) as adapter:
        assert adapter.post(_posting()).outcome is PostingOutcome.UNKNOWN
        with pytest.raises(LookupUnavailableError, match="ConnectError"):
            adapter.lookup(_posting().idempotency_key)


def test_refused_credentials_are_unknown_and_the_key_is_never_logged(
    pms: Pms, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pms.faults(statuses=[429], retry_after="0")
    with pms.adapter() as adapter:
        posted = adapter.post(_posting())
        shown = repr(adapter)
    with HttpPostingAdapter(pms.base_url, "wrong_key") as wrong:
        refused = wrong.post(_posting("ch_2"))
    assert posted.outcome is PostingOutcome.POSTED
    assert refused.outcome is PostingOutcome.UNKNOWN
    assert refused.reason is not None and "401" in refused.reason
    assert "rate limit" in caplog.text  # the 429 was logged, the key was not
    for text in (caplog.text, shown, str(posted), str(refused)):
        assert API_KEY not in text


def test_simulator_refuses_missing_or_wrong_credentials(pms: Pms) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": API_KEY}):
        response = pms.control.post(CHARGES, json={}, headers=headers)
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"] == "Bearer"
    assert pms.stats()["postings_stored"] == 0


def test_simulator_refuses_bad_bodies_with_apaleo_messages(pms: Pms) -> None:
    auth = {"Authorization": f"Bearer {API_KEY}"}
    good: dict[str, Any] = {
        "serviceType": "Other",
        "vatType": "Without",
        "name": "Adjustment",
        "amount": {"amount": 10.5, "currency": "EUR"},
    }
    bad = [
        (b"{not json", "not valid JSON"),
        ({**good, "name": ""}, "Name field is required"),
        ({**good, "serviceType": "Spa"}, "ServiceType"),
        ({**good, "amount": {"amount": "10", "currency": "EUR"}}, "Amount.Amount"),
        ({**good, "amount": {"amount": 10, "currency": "eur"}}, "Amount.Currency"),
        ({**good, "serviceDate": "30/11/2026"}, "ServiceDate"),
        ({**good, "receipt": {"type": "Custom"}}, "Receipt"),
    ]
    for body, message in bad:
        content = body if isinstance(body, bytes) else None
        response = pms.control.post(CHARGES, content=content, json=None if content else body, headers=auth)
        assert response.status_code == 400, message
        messages = response.json()["messages"]
        assert len(messages) == 1 and message in messages[0]
    assert pms.control.post(CHARGES, json=good, headers=auth).status_code == 201
    assert pms.control.get("/finance/v1/folios/nowhere", headers=auth).status_code == 404
    assert pms.stats()["postings_stored"] == 1


def test_simulator_key_reused_with_another_body_is_a_conflict(pms: Pms) -> None:
    auth = {"Authorization": f"Bearer {API_KEY}", "Idempotency-Key": "k1"}
    body: dict[str, Any] = {
        "serviceType": "Other",
        "vatType": "Without",
        "name": "Adjustment",
        "amount": {"amount": 10.5, "currency": "EUR"},
    }
    assert pms.control.post(CHARGES, json=body, headers=auth).status_code == 201
    changed = pms.control.post(CHARGES, json={**body, "name": "Other"}, headers=auth)
    assert changed.status_code == 409
    assert "k1" in changed.json()["messages"][0]
    assert pms.stats()["postings_stored"] == 1


def test_simulator_faults_are_checked_and_set_at_construction() -> None:
    with pytest.raises(ValueError, match="hang_s"):
        build_pms_app(API_KEY, faults={"hang_s": 0})
    app = build_pms_app(API_KEY, faults={"rate_limit_rps": 5, "conflict_on_repeat": True})
    assert app.state.faults.state()["rate_limit_rps"] == 5.0
    assert app.state.pms_faults.state()["conflict_on_repeat"] is True
    with ServerThread(app) as server, loopback_client(base_url=server.base_url) as control:
        refused = control.post("/_simulator/faults", json={"accept_then_hang": -1})
        assert refused.status_code == 400
        assert "accept_then_hang" in refused.json()["messages"][0]


def test_rate_limited_post_carries_retry_after() -> None:
    app = build_pms_app(API_KEY, faults={"rate_limit_rps": 1, "rate_limit_burst": 1})
    auth = {"Authorization": f"Bearer {API_KEY}"}
    with ServerThread(app) as server, loopback_client(base_url=server.base_url) as client:
        statuses = [client.post(CHARGES, json={}, headers=auth) for _ in range(2)]
    assert [r.status_code for r in statuses] == [400, 429]
    assert statuses[1].headers["Retry-After"] == "1"
