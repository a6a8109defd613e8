"""The review desk's adjustments on a real server (127.0.0.1) over SQLite and PostgreSQL: the queue (its
tabs, opening on what needs a decision; search, sort, per-currency totals; decided rows showing their
decision; withdrawing one's approval) and its state filter (the posting's state once there is one), an
adjustment's page, and deciding adjustments through the confirmation step: roles, CSRF, per-property
access, four eyes with two approvers, an amount that moved since the confirmation, and the audit rows with
the amount seen."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy import Engine, insert, select, update

from recon_pipeline.db.schema import adjustment_reviews, adjustments, discrepancies, review_audit
from recon_pipeline.db.schema import posting_outbox as outbox
from recon_pipeline.review.four_eyes import set_four_eyes_threshold
from recon_pipeline_tests.support.desk_fixtures import (
    NIGHT,
    NOW,
    add_user,
    finding,
    post_form,
    served_desk,
    sign_in,
)
from recon_pipeline_tests.support.desk_rows import adjustment
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.posting_fixtures import propose

THRESHOLD = 1000  # p1's own four-eyes threshold: above it, two approvers


@dataclass
class Desk:
    engine: Engine
    base_url: str
    ids: dict[str, str]  # adjustment id by record
    finding_id: int  # the finding "r-big" corrects

    @contextmanager
    def client(self, name: str) -> Iterator[httpx.Client]:
        """A client signed in as ``name``."""
        with loopback_client(base_url=self.base_url) as client:
            assert sign_in(client, name).status_code == 303
            yield client

    def status(self, record: str) -> str:
        with self.engine.connect() as connection:
            query = select(adjustments.c.status).where(adjustments.c.adjustment_id == self.ids[record])
            return str(connection.execute(query).scalar_one())

    def reviews(self) -> list[tuple[str, str, str]]:
        with self.engine.connect() as connection:
            query = select(
                adjustment_reviews.c.adjustment_id,
                adjustment_reviews.c.reviewed_by,
                adjustment_reviews.c.status,
            ).order_by(adjustment_reviews.c.review_id)
            return [tuple(row) for row in connection.execute(query)]

    def postings(self) -> list[str]:
        with self.engine.connect() as connection:
            return list(connection.execute(select(outbox.c.adjustment_id)).scalars())


@pytest.fixture
def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Desk]:
    with served_desk(database_url, monkeypatch) as served:
        amounts = {"r-small": 500, "r-small-2": -700, "r-big": 5000, "r-other": 300}
        ids = {
            record: propose(
                served.engine, record, amount, property_id="p2" if record == "r-other" else "p1", night=NIGHT
            )
            for record, amount in amounts.items()
        }
        with served.engine.begin() as connection:
            set_four_eyes_threshold(connection, "p1", THRESHOLD, NOW)
            connection.execute(
                insert(discrepancies), [finding("p1", "r-big", 5000, category="missing_in_ledger")]
            )
            finding_id = connection.execute(select(discrepancies.c.discrepancy_id)).scalar_one()
        add_user("ana", "analyst", "p1")
        add_user("alice", "approver", "p1")
        add_user("bob", "approver", "p1")
        yield Desk(served.engine, served.base_url, ids, finding_id)


def confirm(client: httpx.Client, action: str, ids: list[str]) -> httpx.Response:
    return post_form(client, "/adjustments/confirm", {"action": action, "adjustment_id": ids})  # type: ignore[dict-item]


def hidden_fields(page: httpx.Response) -> dict[str, list[str]]:
    """The confirmation form's hidden fields (action, ids, amount seen per id), as the browser posts them."""
    fields: dict[str, list[str]] = {}
    for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page.text):
        fields.setdefault(name, []).append(value)
    return fields


def decide(
    client: httpx.Client, action: str, ids: list[str], comment: str = "folio checked"
) -> httpx.Response:
    """Select → confirm → decide, as a person does through the pages."""
    page = confirm(client, action, ids)
    assert page.status_code == 200, page.text
    assert "Confirm" in page.text and 'name="comment"' in page.text
    return client.post("/adjustments/decide", data={**hidden_fields(page), "comment": comment})


def test_an_analyst_may_look_but_not_decide(desk: Desk) -> None:
    with desk.client("ana") as client:
        queue = client.get("/adjustments")
        assert queue.status_code == 200 and desk.ids["r-small"] in queue.text
        assert "Approve selected" not in queue.text and 'type="checkbox"' not in queue.text
        assert "Approve" not in client.get(f"/adjustments/{desk.ids['r-small']}").text
        assert confirm(client, "approve", [desk.ids["r-small"]]).status_code == 403
        data = {
            "action": "approve",
            "adjustment_id": desk.ids["r-small"],
            f"amount_seen_{desk.ids['r-small']}": "500",
            "comment": "ok",
        }
        refused = post_form(client, "/adjustments/decide", data)
        assert refused.status_code == 403 and "decide_adjustments" in refused.text
    assert desk.status("r-small") == "proposed" and desk.reviews() == [] and desk.postings() == []


def test_a_decision_without_the_csrf_token_is_refused(desk: Desk) -> None:
    with desk.client("alice") as client:
        page = confirm(client, "approve", [desk.ids["r-small"]])
        fields = {**hidden_fields(page), "comment": "ok"}
        del fields["csrf_token"]
        assert client.post("/adjustments/decide", data=fields).status_code == 403
        assert client.post("/adjustments/confirm", data={"action": "approve"}).status_code == 403
    assert desk.status("r-small") == "proposed" and desk.reviews() == []


def test_bulk_approval_goes_through_a_confirmation_with_the_amounts_and_is_audited(desk: Desk) -> None:
    small, small_2 = desk.ids["r-small"], desk.ids["r-small-2"]
    with desk.client("alice") as client:
        queue = client.get("/adjustments").text
        assert "Approve selected" in queue and "Reject selected" in queue
        assert f'name="adjustment_id" value="{small}"' in queue
        page = confirm(client, "approve", [small, small_2])
        assert "5.00 EUR" in page.text and "-7.00 EUR" in page.text
        assert hidden_fields(page)[f"amount_seen_{small_2}"] == ["-700"]
        assert desk.reviews() == []  # confirming decides nothing yet
        result = decide(client, "approve", [small, small_2])
        assert result.status_code == 200
        assert result.text.count("proposed -&gt; approved") == 2
    assert (desk.status("r-small"), desk.status("r-small-2")) == ("approved", "approved")
    assert sorted(desk.postings()) == sorted([small, small_2])
    with desk.engine.connect() as connection:
        audit = connection.execute(
            select(
                review_audit.c.user_name,
                review_audit.c.action,
                review_audit.c.target,
                review_audit.c.amount_seen,
            )
            .where(review_audit.c.action != "sign_in")
            .order_by(review_audit.c.id)
        ).all()
    assert [tuple(row) for row in audit] == [
        ("alice", "approve", small, 500),
        ("alice", "approve", small_2, -700),
    ]


def test_four_eyes_through_the_desk_needs_a_second_different_approver(desk: Desk) -> None:
    big = desk.ids["r-big"]
    with desk.client("alice") as alice:
        first = decide(alice, "approve", [big])
        assert "approved 1 of 2: waiting for a second approver" in first.text
        assert desk.status("r-big") == "proposed" and desk.postings() == []
        queue = alice.get("/adjustments", params={"state": "proposed"})
        assert re.search(rf"{big}</a></td>.*?<td>1 of 2 approvals</td>", queue.text, re.DOTALL)
        again = decide(alice, "approve", [big])
        assert "refused: " in again.text and "already approved by alice" in again.text
        assert "a second approver must be someone else" in again.text
    with desk.client("bob") as bob:
        second = decide(bob, "approve", [big], "second pair of eyes")
        assert "proposed -&gt; approved" in second.text
        detail = bob.get(f"/adjustments/{big}")
        assert "2 of 2 approvals" in detail.text and "second pair of eyes" in detail.text
        assert f'href="/findings/{desk.finding_id}"' in detail.text
    assert desk.status("r-big") == "approved" and desk.postings() == [big]
    assert desk.reviews() == [(big, "alice", "proposed"), (big, "bob", "approved")]


def test_another_propertys_adjustment_is_not_found_on_its_page_and_in_actions(desk: Desk) -> None:
    other = desk.ids["r-other"]
    with desk.client("alice") as client:
        assert other not in client.get("/adjustments").text
        for path in (f"/adjustments/{other}", "/adjustments/adj_" + "0" * 24, "/adjustments/42"):
            page = client.get(path)
            assert page.status_code == 404 and "Not found" in page.text, path
        assert confirm(client, "approve", [desk.ids["r-small"], other]).status_code == 404
        data = {"action": "approve", "adjustment_id": other, f"amount_seen_{other}": "300", "comment": "ok"}
        assert post_form(client, "/adjustments/decide", data).status_code == 404
        assert client.get("/adjustments", params={"property": "p2"}).status_code == 400
    assert desk.status("r-other") == "proposed" and desk.reviews() == []


def test_an_amount_changed_since_the_confirmation_is_refused_and_the_others_go_on(desk: Desk) -> None:
    small, small_2 = desk.ids["r-small"], desk.ids["r-small-2"]
    with desk.client("alice") as client:
        page = confirm(client, "reject", [small, small_2])
        with desk.engine.begin() as connection:
            connection.execute(
                update(adjustments).where(adjustments.c.adjustment_id == small).values(amount_minor=550)
            )
        result = client.post("/adjustments/decide", data={**hidden_fields(page), "comment": "not ours"})
        assert result.status_code == 200
        assert "refused: " in result.text and "now proposes 5.50 EUR, not the 5.00 EUR you saw" in result.text
        assert "proposed -&gt; rejected" in result.text
    assert (desk.status("r-small"), desk.status("r-small-2")) == ("proposed", "rejected")


def test_nothing_selected_or_no_comment_is_a_bad_request(desk: Desk) -> None:
    with desk.client("alice") as client:
        none = confirm(client, "approve", [])
        assert none.status_code == 400 and "select at least one adjustment" in none.text
        page = confirm(client, "approve", [desk.ids["r-small"]])
        silent = client.post("/adjustments/decide", data={**hidden_fields(page), "comment": "  "})
        assert silent.status_code == 400 and "say why with the Comment" in silent.text
    assert desk.reviews() == []


def test_the_queue_shows_the_postings_state_and_filters_by_it(desk: Desk) -> None:
    with desk.client("alice") as client:
        decide(client, "approve", [desk.ids["r-small"], desk.ids["r-small-2"]])
    with desk.engine.begin() as connection:
        for record, state in (("r-small", "posting"), ("r-small-2", "unknown")):
            connection.execute(
                update(outbox)
                .where(outbox.c.adjustment_id == desk.ids[record])
                .values(state=state, last_error="timed out" if state == "unknown" else None)
            )
    with desk.client("bob") as client:
        shown = {
            state: [
                record
                for record, id_ in desk.ids.items()
                if id_ in client.get("/adjustments", params={"state": state}).text
            ]
            for state in ("posting", "unknown", "approved", "proposed", "posted")
        }
        assert shown == {
            "posting": ["r-small"],
            "unknown": ["r-small-2"],
            "approved": [],
            "proposed": ["r-big"],
            "posted": [],
        }
        with desk.engine.begin() as connection:
            connection.execute(
                update(outbox).where(outbox.c.adjustment_id == desk.ids["r-small"]).values(state="posted")
            )
        posted = client.get("/adjustments", params={"state": "posted"}).text
        assert desk.ids["r-small"] in posted and desk.ids["r-small-2"] not in posted
        detail = client.get(f"/adjustments/{desk.ids['r-small-2']}").text
        assert "unknown" in detail and "timed out" in detail
        assert client.get("/adjustments", params={"state": "lost"}).status_code == 400
        assert client.get("/adjustments", params={"night_from": "2026-13-01"}).status_code == 400
        ranged = client.get("/adjustments", params={"night_from": NIGHT, "night_to": NIGHT}).text
        assert desk.ids["r-big"] in ranged
        assert desk.ids["r-big"] not in client.get("/adjustments", params={"night_to": "2026-12-01"}).text


def rows_of(page: httpx.Response) -> list[str]:
    """The adjustment ids of the queue's body rows, in order."""
    table = page.text.split('<table id="adjustments"', 1)[1].split("</tbody>", 1)[0]
    return re.findall(r'<tr data-id="([^"]+)"', table)


def test_the_queue_opens_on_what_needs_a_decision_and_its_tabs_hold_the_rest(desk: Desk) -> None:
    small, small_2, big = desk.ids["r-small"], desk.ids["r-small-2"], desk.ids["r-big"]
    with desk.client("alice") as client:
        decide(client, "approve", [small, big])
        decide(client, "reject", [small_2])
    with desk.engine.begin() as connection:
        connection.execute(update(outbox).where(outbox.c.adjustment_id == small).values(state="posted"))
        connection.execute(
            insert(adjustments).values(**adjustment("adj_" + "e" * 24, "p1", "superseded", 900))
        )
    with desk.client("ana") as client:
        opened = client.get("/adjustments")
        assert rows_of(opened) == [big] and "Needs a decision" in opened.text
        assert "1 of 2 approvals" in opened.text
        assert rows_of(client.get("/adjustments", params={"tab": "waiting"})) == [big]
        done = client.get("/adjustments", params={"tab": "done", "sort": "amount"})
        assert rows_of(done) == [small_2, small]
        assert re.search(rf'data-id="{small}".*?Approved by alice · 2026-', done.text, re.DOTALL)
        assert re.search(rf'data-id="{small_2}".*?Rejected by alice · 2026-', done.text, re.DOTALL)
        assert "Posted" in done.text and "Rejected" in done.text
        assert rows_of(client.get("/adjustments", params={"tab": "closed"})) == ["adj_" + "e" * 24]
        assert len(rows_of(client.get("/adjustments", params={"tab": "all"}))) == 4
        assert client.get("/adjustments", params={"tab": "later"}).status_code == 400
    with desk.client("bob") as client:  # decided rows carry their decision, not a checkbox
        done = client.get("/adjustments", params={"tab": "done"}).text
        assert 'type="checkbox"' not in done
        page = client.get(f"/adjustments/{small}").text
        assert 'value="approve"' not in page and 'value="reject"' not in page
        assert (
            "Approved by alice" in page
            and "approved (1 of 1 approvals); now approved, waiting to post" in page
        )
        assert "proposed → " not in page


def test_the_queue_searches_sorts_and_totals_per_currency(desk: Desk) -> None:
    small, small_2, big = desk.ids["r-small"], desk.ids["r-small-2"], desk.ids["r-big"]
    with desk.engine.begin() as connection:
        connection.execute(update(discrepancies).values(booking_id="BK-77"))
        connection.execute(update(adjustments).values(reason="A long reason. " * 30))
    with desk.client("ana") as client:
        for q, found in (
            (small, [small]),
            ("r-small-2", [small_2]),  # the provider record id
            ("BK-77", [big]),  # the booking of the finding it corrects
            ("50.00", [big]),
            ("5..7", [small_2, small]),
            ("nothing-like-it", []),
        ):
            assert sorted(rows_of(client.get("/adjustments", params={"q": q}))) == sorted(found), q
        assert client.get("/adjustments", params={"q": "7..5"}).status_code == 400
        ordered = client.get("/adjustments", params={"sort": "-amount"})
        assert rows_of(ordered) == [big, small, small_2]
        assert 'aria-sort="descending"' in ordered.text
        assert client.get("/adjustments", params={"sort": "colour"}).status_code == 400
        total = re.search(
            r'<tr class="total" data-currency="EUR" data-rows="(\d+)">.*?data-minor="(-?\d+)"',
            ordered.text,
            re.DOTALL,
        )
        assert total and (total.group(1), total.group(2)) == ("3", str(500 - 700 + 5000))
        assert "Total EUR (3 rows)" in ordered.text
        assert f'<td class="reason" title="{"A long reason. " * 30}">' in ordered.text


def test_an_approver_withdraws_their_approval_on_the_desk_until_posting_begins(desk: Desk) -> None:
    small, big = desk.ids["r-small"], desk.ids["r-big"]
    with desk.client("alice") as alice:
        decide(alice, "approve", [small, big])
        page = alice.get(f"/adjustments/{small}").text
        assert "Withdraw my approval" in page
        withdrawn = post_form(alice, f"/adjustments/{small}/withdraw-approval", {"comment": "wrong folio"})
        assert withdrawn.status_code == 303 and withdrawn.headers["location"] == f"/adjustments/{small}"
        page = alice.get(f"/adjustments/{small}").text
        assert "approval withdrawn (0 of 1 approvals); now needs a decision" in page
        assert "Withdraw my approval" not in page and 'value="approve"' in page
        assert post_form(alice, f"/adjustments/{big}/withdraw-approval", {"comment": " "}).status_code == 400
    assert desk.status("r-small") == "proposed" and desk.postings() == []
    with desk.client("bob") as bob:
        assert "Withdraw my approval" not in bob.get(f"/adjustments/{big}").text
        refused = post_form(bob, f"/adjustments/{big}/withdraw-approval", {"comment": "not mine"})
        assert refused.status_code == 409 and "bob has no approval of adjustment" in refused.text
        decide(bob, "approve", [big])
    with desk.engine.begin() as connection:  # a drainer claims the posting
        connection.execute(update(outbox).values(state="posting", claimed_by="drainer:1"))
    with desk.client("alice") as alice:
        assert "Withdraw my approval" not in alice.get(f"/adjustments/{big}").text
        refused = post_form(alice, f"/adjustments/{big}/withdraw-approval", {"comment": "too late"})
        assert refused.status_code == 409 and "has begun" in refused.text and "recon " not in refused.text
    with desk.client("ana") as ana:
        forbidden = post_form(ana, f"/adjustments/{big}/withdraw-approval", {"comment": "x"})
        assert forbidden.status_code == 403
    assert desk.status("r-big") == "approved"
    with desk.engine.connect() as connection:
        audit = connection.execute(
            select(review_audit.c.user_name, review_audit.c.target).where(
                review_audit.c.action == "withdraw_approval"
            )
        ).all()
    assert [tuple(row) for row in audit] == [("alice", small)]
