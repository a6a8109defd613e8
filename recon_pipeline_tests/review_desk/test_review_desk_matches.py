"""Matches on the review desk, on a real server over SQLite and PostgreSQL: a finding's candidate matches,
a suggestion confirmed or rejected through its form (reason required), the matches list, a pair by hand
and its one-line refusals, and what every refusal leaves unchanged: another property's match, a missing
CSRF token, an empty reason. Every decision is the store's (``match_decisions``) and the desk's audit
log's, by the signed-in user."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, insert, select

from recon_pipeline.db.schema import discrepancies, ledger_entries, match_decisions, matches, review_audit
from recon_pipeline.review.matches import match_key
from recon_pipeline.review_desk import matches as desk_matches
from recon_pipeline.review_desk.pages.matches import split_ids
from recon_pipeline.storage.matches import save_matches
from recon_pipeline_tests.support.desk_fixtures import (
    NIGHT,
    NOW,
    add_user,
    finding,
    finding_ids,
    post_form,
    served_desk,
    sign_in,
)
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.match_rows import match_row, matches_frame

SUGGESTED_KEY = match_key(["ch_s"], ["le_s"])
P2_KEY = match_key(["ch_q"], ["le_q"])
POSTED = NOW - timedelta(hours=12)  # 2026-12-02 20:00 UTC: in p1's night (Europe/Paris)


@dataclass
class Desk:
    engine: Engine
    base_url: str
    ids: dict[str, int]  # finding id by record key

    @contextmanager
    def client(self, name: str = "ana") -> Iterator[httpx.Client]:
        """A client signed in as ``name``."""
        with loopback_client(base_url=self.base_url) as client:
            assert sign_in(client, name).status_code == 303
            yield client

    def match_id(self, key: str, property_id: str = "p1") -> int:
        with self.engine.connect() as connection:
            return int(
                connection.execute(
                    select(matches.c.match_id).where(
                        matches.c.property_id == property_id, matches.c.match_key == key
                    )
                ).scalar_one()
            )

    def match(self, key: str, property_id: str = "p1") -> dict[str, Any]:
        with self.engine.connect() as connection:
            row = connection.execute(
                select(matches).where(matches.c.property_id == property_id, matches.c.match_key == key)
            ).mappings()
            return dict(row.one())

    def decisions(self) -> list[tuple[Any, ...]]:
        with self.engine.connect() as connection:
            query = select(
                match_decisions.c.property_id,
                match_decisions.c.match_key,
                match_decisions.c.action,
                match_decisions.c.previous_status,
                match_decisions.c.decided_by,
                match_decisions.c.reason,
            ).order_by(match_decisions.c.decision_id)
            return [tuple(row) for row in connection.execute(query)]

    def actions(self) -> list[tuple[Any, ...]]:
        """The audit log's match decisions (sign-ins and page views left out)."""
        with self.engine.connect() as connection:
            query = (
                select(
                    review_audit.c.user_name,
                    review_audit.c.action,
                    review_audit.c.target,
                    review_audit.c.amount_seen,
                    review_audit.c.detail,
                )
                .where(review_audit.c.action.in_(("confirm_match", "reject_match", "pair_match")))
                .order_by(review_audit.c.id)
            )
            return [tuple(row) for row in connection.execute(query)]


def seed(engine: Engine) -> dict[str, int]:
    """p1's night: a suggestion (ch_s ↔ le_s, card and time only) with its suggested_match finding, and
    two unmatched sides (ch_a: missing_in_ledger; le_a: missing_at_provider); p2's own suggestion."""
    entries = [
        ("le_s", "p1", 12_000),
        ("le_a", "p1", 8_000),
        ("le_q", "p2", 5_000),
    ]
    suggestion = match_row(
        ["ch_s"],
        ["le_s"],
        rule="card_window",
        score=0.5,
        status="suggested",
        booking_id=None,
        keys_agree="amount 120.00 EUR, within 3 hours",
        keys_differ="card visa 4242 vs unknown",
        detail="ch_s may be le_s: card, amount and time, card unknown on the ledger",
    )
    with engine.begin() as connection:
        connection.execute(
            insert(ledger_entries),
            [
                dict(entry_id=entry, property_id=pid, kind="payment", amount_minor=amount, currency="EUR",
                     posted_at=POSTED)
                for entry, pid, amount in entries
            ],
        )  # fmt: skip
        rows = (
            finding("p1", f"match:{SUGGESTED_KEY}", 0, category="suggested_match", kind="payment",
                    provider_record_id="ch_s", ledger_entry_id="le_s", provider_amount_minor=12_000,
                    ledger_amount_minor=12_000),
            finding("p1", "ch_a:payment", 8_000, category="missing_in_ledger", kind="payment",
                    provider_record_id="ch_a", provider_amount_minor=8_000),
            finding("p1", "entry:le_a", -8_000, category="missing_at_provider", kind="payment",
                    ledger_entry_id="le_a", ledger_amount_minor=8_000),
            finding("p2", f"match:{P2_KEY}", 0, category="suggested_match", provider_record_id="ch_q",
                    ledger_entry_id="le_q"),
        )  # fmt: skip
        for row in rows:  # one at a time: the rows fill different columns
            connection.execute(insert(discrepancies).values(**row))
        save_matches(connection, "p1", NIGHT, matches_frame(suggestion), "run-1", NOW)
        p2 = match_row(["ch_q"], ["le_q"], rule="card_window", score=0.5, status="suggested", amount=5_000)
        save_matches(connection, "p2", NIGHT, matches_frame(p2), "run-1", NOW)
        return finding_ids(connection)


@pytest.fixture
def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Desk]:
    with served_desk(database_url, monkeypatch) as served:
        ids = seed(served.engine)
        add_user("ana", "analyst", "p1")
        add_user("alice", "approver", "p1")
        yield Desk(served.engine, served.base_url, ids)


@pytest.mark.fast
def test_a_findings_ids_are_its_columns_and_the_sides_its_record_key_names() -> None:
    def ids(record_key: str, record: str | None = None, entry: str | None = None) -> tuple[set[str], ...]:
        return desk_matches.finding_ids(
            {"record_key": record_key, "provider_record_id": record, "ledger_entry_id": entry}
        )

    assert ids("match:ch_1+ch_2=le_1", "ch_1", "le_1") == ({"ch_1", "ch_2"}, {"le_1"})
    assert ids("ambiguous:ch_9=le_a+le_b", "ch_9") == ({"ch_9"}, {"le_a", "le_b"})
    assert ids("ambiguous:=le_a", None, "le_a") == (set(), {"le_a"})
    assert ids("ch_3:payment", "ch_3") == ({"ch_3"}, set())
    assert ids("entry:le_7", None, "le_7") == (set(), {"le_7"})
    assert split_ids(" ch_1, ch_2\tch_3 ,") == ["ch_1", "ch_2", "ch_3"]


def text_of(page: httpx.Response) -> str:
    """The page's text without tags, blanks collapsed: what a reader sees."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page.text)).split())


def test_a_suggestion_is_listed_on_its_finding_and_confirmed_there_by_the_signed_in_analyst(
    desk: Desk,
) -> None:
    finding_id = desk.ids[f"match:{SUGGESTED_KEY}"]
    with desk.client() as client:
        page = client.get(f"/findings/{finding_id}")
        assert page.status_code == 200
        seen = text_of(page)
        for said in (
            "How the two sides match",
            "Suggested, waiting for a person by card, amount and time (score 0.50)",  # in words
            "they agree on amount 120.00 EUR, within 3 hours; they differ on card visa 4242 vs unknown.",
            "card, amount and time",  # the rule in words
            "0.50 Suggested, waiting for a person",
            "120.00 EUR 120.00 EUR",  # both amounts, in major units with the currency
            "amount 120.00 EUR, within 3 hours",  # the keys that agree
            "card visa 4242 vs unknown",  # and those that differ
        ):
            assert said in seen, said
        back = f"/findings/{finding_id}"
        confirmed = post_form(
            client,
            f"/matches/{desk.match_id(SUGGESTED_KEY)}/decide",
            {"action": "confirm", "reason": "same guest, terminal sale", "back": back},
        )
        assert (confirmed.status_code, confirmed.headers["location"]) == (303, back)
        # A back link elsewhere than a finding's page is not followed: the match's own page instead.
        again = post_form(
            client,
            f"/matches/{desk.match_id(SUGGESTED_KEY)}/decide",
            {"action": "confirm", "reason": "twice", "back": "https://evil.example/"},
        )
        assert again.headers["location"] == f"/matches/{desk.match_id(SUGGESTED_KEY)}"
    row = desk.match(SUGGESTED_KEY)
    assert (row["status"], row["decided_by"], row["decision_reason"]) == (
        "confirmed",
        "ana",
        "same guest, terminal sale",
    )
    assert desk.decisions() == [
        ("p1", SUGGESTED_KEY, "confirm", "suggested", "ana", "same guest, terminal sale")
    ]
    target = f"p1 {NIGHT} {SUGGESTED_KEY}"
    assert desk.actions() == [
        ("ana", "confirm_match", target, 12_000, "suggested -> confirmed: same guest, terminal sale"),
        ("ana", "confirm_match", target, 12_000, "already confirmed, unchanged: twice"),
    ]


def test_rejecting_needs_a_reason_and_is_recorded_with_it(desk: Desk) -> None:
    match_id = desk.match_id(SUGGESTED_KEY)
    with desk.client("alice") as client:
        empty = post_form(client, f"/matches/{match_id}/decide", {"action": "reject", "reason": "  "})
        assert empty.status_code == 400
        assert "say why with the reason" in text_of(empty)
        unknown = post_form(client, f"/matches/{match_id}/decide", {"action": "merge", "reason": "x"})
        assert unknown.status_code == 400 and "unknown decision 'merge'" in text_of(unknown)
        assert desk.match(SUGGESTED_KEY)["status"] == "suggested" and desk.decisions() == []
        rejected = post_form(
            client, f"/matches/{match_id}/decide", {"action": "reject", "reason": "different guests"}
        )
        assert rejected.status_code == 303
        page = client.get(f"/matches/{match_id}")
        seen = text_of(page)
        assert "rejected (by alice at" in seen and "different guests" in seen
        assert "Confirm match" in page.text and "Reject match" not in page.text
    assert desk.match(SUGGESTED_KEY)["status"] == "rejected"
    assert desk.decisions() == [("p1", SUGGESTED_KEY, "reject", "suggested", "alice", "different guests")]


def test_the_matches_list_is_filtered_paged_and_narrowed_to_the_users_properties(desk: Desk) -> None:
    with desk.client() as client:
        listed = client.get("/matches")
        assert listed.status_code == 200
        assert SUGGESTED_KEY in listed.text and P2_KEY not in listed.text
        assert "rows 1-1 of 1" in text_of(listed)
        assert SUGGESTED_KEY not in client.get("/matches", params={"status": "confirmed"}).text
        assert SUGGESTED_KEY in client.get("/matches", params={"rule": "card_window", "night": NIGHT}).text
        refused = client.get("/matches", params={"property": "p2"})
        assert refused.status_code == 400 and "unknown property 'p2'" in text_of(refused)
        assert client.get("/matches", params={"rule": "guess"}).status_code == 400
        assert client.get("/matches", params={"status": "maybe"}).status_code == 400


def test_another_propertys_match_is_not_found_and_cannot_be_decided(desk: Desk) -> None:
    other = desk.match_id(P2_KEY, "p2")
    with desk.client() as client:
        assert client.get(f"/matches/{other}").status_code == 404
        assert client.get("/matches/99999").status_code == 404
        refused = post_form(client, f"/matches/{other}/decide", {"action": "confirm", "reason": "mine now"})
        assert refused.status_code == 404
        by_hand = post_form(
            client,
            "/matches/pair",
            {"property": "p2", "night": NIGHT, "records": "ch_q", "entries": "le_q", "reason": "mine"},
        )
        assert by_hand.status_code == 404
    assert desk.match(P2_KEY, "p2")["status"] == "suggested"
    assert desk.decisions() == [] and desk.actions() == []


def test_a_decision_without_the_sessions_csrf_token_is_refused(desk: Desk) -> None:
    match_id = desk.match_id(SUGGESTED_KEY)
    with desk.client() as client:
        missing = client.post(f"/matches/{match_id}/decide", data={"action": "confirm", "reason": "x"})
        assert missing.status_code == 403
        wrong = client.post(
            f"/matches/{match_id}/decide", data={"action": "confirm", "reason": "x", "csrf_token": "forged"}
        )
        assert wrong.status_code == 403
        pair = client.post(
            "/matches/pair",
            data={"property": "p1", "night": NIGHT, "records": "ch_a", "entries": "le_a", "reason": "x"},
        )
        assert pair.status_code == 403
    assert desk.match(SUGGESTED_KEY)["status"] == "suggested"
    assert desk.decisions() == [] and desk.actions() == []


def test_two_unmatched_records_are_paired_by_hand_and_refusals_are_one_line(desk: Desk) -> None:
    missing = desk.ids["ch_a:payment"]
    with desk.client() as client:
        finding_page = client.get(f"/findings/{missing}")
        link = re.search(r'href="(/matches/pair\?[^"]+)"', finding_page.text)
        assert link, "the finding links to the form, filled with its record"
        form = client.get(html.unescape(link.group(1)))
        assert 'name="records" value="ch_a"' in form.text and f'value="{NIGHT}"' in form.text

        def pair(records: str, entries: str, reason: str = "guest paid at the desk") -> httpx.Response:
            fields = {
                "property": "p1",
                "night": NIGHT,
                "records": records,
                "entries": entries,
                "reason": reason,
            }
            return post_form(client, "/matches/pair", fields)

        for records, entries, status, said in (
            ("ch_a", "le_q", 409, "ledger entry 'le_q' is not in p1's ledger on 2026-12-02"),
            ("ch_nowhere", "le_a", 409, "provider record 'ch_nowhere' is in no current finding or match"),
            ("ch_a", "", 400, "name at least one ledger entry id"),
            ("ch_a", "le_a", 400, "say why with the reason"),
        ):
            refused = pair(records, entries, "" if status == 400 and entries else "why")
            assert refused.status_code == status, refused.text
            assert said in text_of(refused), text_of(refused)
            assert f'value="{records}"' in refused.text  # the form keeps what was typed
        assert desk.decisions() == []

        paired = pair("ch_a", "le_a")
        assert paired.status_code == 303
        page = client.get(paired.headers["location"])
        seen = text_of(page)
        assert "a person's decision (person)" in seen and "confirmed (by ana at" in seen
        assert "80.00 EUR" in seen and "paired by hand by ana" in seen
        # The same records again: already matched, refused in one line.
        assert pair("ch_a", "le_a", "again").status_code == 303  # already so: nothing changes
    key = match_key(["ch_a"], ["le_a"])
    row = desk.match(key)
    assert (row["rule"], row["status"], row["provider_amount_minor"], row["ledger_amount_minor"]) == (
        "person",
        "confirmed",
        8_000,
        8_000,
    )
    assert desk.decisions()[0] == ("p1", key, "pair", None, "ana", "guest paid at the desk")
    assert len(desk.decisions()) == 1
    target = f"p1 {NIGHT} {key}"
    assert desk.actions() == [
        ("ana", "pair_match", target, 8_000, "unmatched -> confirmed: guest paid at the desk"),
        ("ana", "pair_match", target, 8_000, "already confirmed, unchanged: again"),
    ]
