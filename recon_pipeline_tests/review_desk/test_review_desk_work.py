"""Working the findings on a real desk over SQLite and PostgreSQL: the legend, a finding's assignee and
notes (audited, its state unchanged, another property's a 404), bulk acknowledge through a confirmation
page (a refusal beside its row, the others done), and saved views that are their owner's alone, a
bounded number of them, each deletable from the desk."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, func, insert, select, update

from recon_pipeline.db.schema import discrepancies, discrepancy_reviews, review_audit, review_saved_views
from recon_pipeline.review_desk.pages.bulk import MAX_SELECTED
from recon_pipeline.review_desk.views import MAX_VIEWS_PER_USER
from recon_pipeline.words import CATEGORY_WORDS, QUEUE_STATE_WORDS, REVIEW_STATE_WORDS, SIGN_CONVENTION
from recon_pipeline_tests.support.desk_fixtures import (
    NOW,
    add_user,
    finding,
    finding_ids,
    post_form,
    served_desk,
    sign_in,
)
from recon_pipeline_tests.support.loopback import loopback_client


@dataclass
class Desk:
    engine: Engine
    base_url: str
    ids: dict[str, int]  # finding id by record key

    @contextmanager
    def client(self, name: str = "ana") -> Iterator[httpx.Client]:
        with loopback_client(base_url=self.base_url) as client:
            assert sign_in(client, name).status_code == 303
            yield client

    def finding(self, record_key: str) -> dict[str, Any]:
        with self.engine.connect() as connection:
            query = select(discrepancies).where(discrepancies.c.record_key == record_key)
            return dict(connection.execute(query).mappings().one())

    def rows(self, query: Any) -> list[tuple[Any, ...]]:
        with self.engine.connect() as connection:
            return [tuple(row) for row in connection.execute(query)]

    def actions(self) -> list[tuple[Any, ...]]:
        """The audit log's actions on findings (sign-ins and page views left out)."""
        a = review_audit.c
        return self.rows(
            select(a.user_name, a.action, a.target, a.amount_seen, a.detail)
            .where(a.action.not_in(["sign_in", "view_finding"]))
            .order_by(a.id)
        )

    def reviews(self) -> list[tuple[Any, ...]]:
        r = discrepancy_reviews.c
        return self.rows(
            select(
                r.record_key, r.action, r.previous_status, r.reviewed_by, r.note, r.difference_minor
            ).order_by(r.review_id)
        )


@pytest.fixture
def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Desk]:
    """Findings of p1 (three open, one resolved, one currency mismatch) and of p2; ana and bo analysts of
    p1 (bo of p2 too), cy of p2 only."""
    with served_desk(database_url, monkeypatch) as served:
        with served.engine.begin() as connection:
            for row in (
                finding("p1", "r-a", 1500),
                finding("p1", "r-b", -700),
                finding("p1", "r-c", 900, review_status="resolved"),
                finding("p1", "r-fx", 0, category="currency_mismatch", ledger_currency="GBP"),
                finding("p2", "r-other", 300),
            ):
                connection.execute(insert(discrepancies).values(**row))
            ids = finding_ids(connection)
        add_user("ana", "analyst", "p1")
        add_user("bo", "analyst", "p1,p2")
        add_user("cy", "analyst", "p2")
        yield Desk(served.engine, served.base_url, ids)


def test_the_legend_shows_every_category_the_sign_and_the_states_in_words(desk: Desk) -> None:
    with loopback_client(base_url=desk.base_url) as anonymous:
        assert anonymous.get("/legend").headers["location"] == "/signin"
    with desk.client() as client:
        page = client.get("/legend")
    assert page.status_code == 200
    text = html.unescape(page.text)
    assert "<h1>Legend</h1>" in text and '<table id="legend">' in text
    assert SIGN_CONVENTION in text
    rows = re.findall(r'<tr id="([a-z_]+)">', text)
    assert rows == list(CATEGORY_WORDS)
    for words in CATEGORY_WORDS.values():
        row = text.split(f'<tr id="{words.code}">', 1)[1].split("</tr>", 1)[0]
        assert all(part in row for part in (words.label, words.meaning, words.sign, words.code)), row
    assert text.index(SIGN_CONVENTION) < text.index('<table id="legend">')
    for label in (*REVIEW_STATE_WORDS.values(), *QUEUE_STATE_WORDS.values()):
        assert f">{label}</th>" in text


def test_assign_unassign_and_note_are_audited_and_leave_the_state(desk: Desk) -> None:
    target = desk.ids["r-a"]
    path = f"/findings/{target}"
    with desk.client() as client:
        mine = post_form(client, f"{path}/assign", {"assignee": "ana", "back": "status=open&sort=-night"})
        assert mine.status_code == 303 and mine.headers["location"] == f"{path}?status=open&sort=-night"
        assert "Assigned to: <strong>ana</strong> since" in client.get(path).text
        assert post_form(client, f"{path}/assign", {"assignee": "bo"}).status_code == 303
        # cy may not see p1: refused, nothing changes; so is a name that is no user.
        for name in ("cy", "nobody"):
            refused = post_form(client, f"{path}/assign", {"assignee": name})
            assert refused.status_code == 400
            assert f"{name} is not a desk user who may review p1&#39;s findings" in refused.text
        assert desk.finding("r-a")["assigned_to"] == "bo"
        assert post_form(client, f"{path}/assign", {"assignee": ""}).status_code == 303
        assert post_form(client, f"{path}/note", {"note": "asked the front desk"}).status_code == 303
        assert post_form(client, f"{path}/note", {"note": "  "}).status_code == 400
        page = client.get(path).text
        assert "Assigned to: no one" in page
        assert "Note (finding still open)" in page and "asked the front desk" in page  # in the history
        # Another property's finding is the same 404 as an unknown one; a POST without CSRF is a 403.
        other = desk.ids["r-other"]
        for action, data in (("assign", {"assignee": "ana"}), ("note", {"note": "x"})):
            for finding_id in (other, 999999):
                assert post_form(client, f"/findings/{finding_id}/{action}", data).status_code == 404
            assert client.post(f"{path}/{action}", data=data).status_code == 403
    row = desk.finding("r-a")
    assert (row["assigned_to"], row["assigned_at"], row["review_status"]) == (None, None, "open")
    assert desk.finding("r-other")["assigned_to"] is None
    assert desk.reviews() == [("r-a", "note", "open", "ana", "asked the front desk", 1500)]
    assert desk.actions() == [
        ("ana", "assign", str(target), 1500, "assigned to ana"),
        ("ana", "assign", str(target), 1500, "assigned to bo (was ana)"),
        ("ana", "unassign", str(target), 1500, "unassigned (was bo)"),
        ("ana", "note", str(target), 1500, "note; still open"),
    ]


def form(client: httpx.Client, path: str, data: dict[str, str | list[str]]) -> httpx.Response:
    """A POST of ``data`` (a list: the field repeated) with the session's CSRF token."""
    return post_form(client, path, data)  # type: ignore[arg-type]  # httpx repeats a list's field


def test_bulk_acknowledge_confirms_then_reviews_each_with_a_refusal_beside_its_row(desk: Desk) -> None:
    keys = ("r-a", "r-b", "r-c")
    chosen = [str(desk.ids[key]) for key in keys]
    with desk.client() as client:
        listed = client.get("/findings", params={"status": "open"}).text
        assert '<form method="post" action="/findings/bulk/confirm" id="bulk"' in listed
        assert '<input type="hidden" name="back" value="status=open">' in listed
        assert all(
            f'value="{key}" form="bulk" aria-label="Select finding {key}"' in listed for key in chosen[:2]
        )
        assert 'value="acknowledge">Acknowledge selected</button>' in listed
        assert 'value="resolve">Resolve selected</button>' in listed
        selection: dict[str, str | list[str]] = {
            "action": "acknowledge",
            "back": "status=open",
            "discrepancy_id": chosen,
        }
        confirm = form(client, "/findings/bulk/confirm", selection)
        assert confirm.status_code == 200, confirm.text
        page = html.unescape(confirm.text)
        assert "<h1>Confirm: acknowledge 3 findings</h1>" in page
        assert CATEGORY_WORDS["amount_mismatch"].label in page and "-7.00 EUR" in page
        seen = dict(re.findall(r'name="(difference_seen_\d+)" value="(-?\d+)"', page))
        assert seen == {
            f"difference_seen_{desk.ids[key]}": v
            for key, v in zip(keys, ("1500", "-700", "900"), strict=True)
        }
        assert '<label for="comment">Comment</label>' in page
        assert '<a href="/findings?status=open">Cancel</a>' in page
        assert desk.actions() == []  # confirming changes nothing

        review = form(client, "/findings/bulk/review", {**selection, **seen, "comment": "on it"})
        assert review.status_code == 200, review.text
        done = html.unescape(review.text)
        assert "<h1>Acknowledged 2 findings</h1>" in done and "1 refused" in done
        refused = done.split(f'<tr data-id="{desk.ids["r-c"]}" class="error">', 1)[1].split("</tr>", 1)[0]
        assert "refused: finding" in refused and "a resolved finding cannot be acknowledged" in refused
        assert '<a href="/findings?status=open">Back to findings</a>' in done
    assert [desk.finding(key)["review_status"] for key in keys] == [
        "acknowledged",
        "acknowledged",
        "resolved",
    ]
    assert desk.reviews() == [
        ("r-a", "acknowledge", "open", "ana", "on it", 1500),
        ("r-b", "acknowledge", "open", "ana", "on it", -700),
    ]
    assert [row[1:] for row in desk.actions()] == [
        ("acknowledge", chosen[0], 1500, "open -> acknowledged"),
        ("acknowledge", chosen[1], -700, "open -> acknowledged"),
    ]


def test_bulk_refuses_a_changed_difference_other_properties_and_bad_selections(desk: Desk) -> None:
    a, fx, other = (str(desk.ids[key]) for key in ("r-a", "r-fx", "r-other"))
    with desk.client() as client:
        page = html.unescape(
            form(client, "/findings/bulk/confirm", {"action": "resolve", "discrepancy_id": [fx]}).text
        )
        assert "<h1>Confirm: resolve 1 finding</h1>" in page and "EUR ≠ GBP" in page
        with desk.engine.begin() as connection:  # a re-run moved r-a's difference after its confirmation
            connection.execute(
                update(discrepancies).where(discrepancies.c.record_key == "r-a").values(difference_minor=1600)
            )
        before = (desk.reviews(), desk.actions())
        review = form(
            client,
            "/findings/bulk/review",
            {"action": "resolve", "discrepancy_id": [a], f"difference_seen_{a}": "1500", "comment": "booked"},
        )
        assert review.status_code == 200
        text = html.unescape(review.text)
        assert "<h1>Resolved 0 findings</h1>" in text
        assert "refused: the difference is now 16.00 EUR, not the 15.00 EUR you saw" in text
        for path in ("/findings/bulk/confirm", "/findings/bulk/review"):
            # Another property's finding among the selection: the same 404 as an unknown id.
            for ids in ([a, other], [a, "999999"]):
                data: dict[str, str | list[str]] = {
                    "action": "acknowledge",
                    "discrepancy_id": ids,
                    "comment": "x",
                    **{f"difference_seen_{i}": "0" for i in ids},
                }
                assert form(client, path, data).status_code == 404
            for data, message in (
                ({"action": "acknowledge"}, "select at least one finding"),
                (
                    {"action": "reopen", "discrepancy_id": [a]},
                    "choose Acknowledge selected or Resolve selected",
                ),
                ({"action": "acknowledge", "discrepancy_id": ["1 OR 1=1"]}, "is not a finding&#39;s id"),
                (
                    {"action": "acknowledge", "discrepancy_id": [str(n) for n in range(1, MAX_SELECTED + 2)]},
                    f"select at most {MAX_SELECTED} findings at once (you selected {MAX_SELECTED + 1})",
                ),
            ):
                refused = form(client, path, {**data, "comment": "x"})
                assert refused.status_code == 400 and message in refused.text
        for data, message in (
            ({"discrepancy_id": [a], f"difference_seen_{a}": "1600"}, "say why with the comment"),
            ({"discrepancy_id": [a], "comment": "x"}, f"the difference seen of finding {a} is missing"),
        ):
            refused = form(client, "/findings/bulk/review", {"action": "acknowledge", **data})
            assert refused.status_code == 400 and message in refused.text
    assert (desk.reviews(), desk.actions()) == before
    assert desk.finding("r-a")["review_status"] == "open"


def test_saved_views_are_their_owners_alone(desk: Desk) -> None:
    with desk.client("ana") as ana, desk.client("bo") as bo:
        saved = form(
            ana,
            "/views",
            {"list_name": "findings", "name": " Open EUR ", "query": "status=open&currency=EUR&page=3"},
        )
        assert saved.status_code == 303 and saved.headers["location"] == "/findings?status=open&currency=EUR"
        form(ana, "/views", {"list_name": "adjustments", "name": "Mine", "query": "tab=waiting"})
        # Saving a name again replaces its query.
        form(ana, "/views", {"list_name": "findings", "name": "Open EUR", "query": "status=open"})
        form(bo, "/views", {"list_name": "findings", "name": "Bo's", "query": "status=resolved"})
        page = ana.get("/findings").text
        assert '<a href="/findings?status=open">Open EUR</a>' in page and "Bo&#39;s" not in page
        assert "Bo&#39;s" in bo.get("/findings").text and "Open EUR" not in bo.get("/findings").text
        for data, message in (
            ({"list_name": "findings", "name": ""}, "name the view in one line of 1-80 characters"),
            ({"list_name": "findings", "name": "x" * 81}, "name the view in one line of 1-80 characters"),
            ({"list_name": "users", "name": "x"}, "unknown list &#39;users&#39;"),
        ):
            refused = form(ana, "/views", {**data, "query": ""})
            assert refused.status_code == 400 and message in refused.text
        (ana_view,) = desk.rows(
            select(review_saved_views.c.view_id).where(
                review_saved_views.c.user_name == "ana", review_saved_views.c.list_name == "findings"
            )
        )
        # bo cannot delete ana's view: the same 404 as an unknown one.
        for view_id in (ana_view[0], 999999):
            assert form(bo, f"/views/{view_id}/delete", {}).status_code == 404
        assert ana.post(f"/views/{ana_view[0]}/delete").status_code == 403  # no CSRF
        deleted = form(ana, f"/views/{ana_view[0]}/delete", {"back": "status=open"})
        assert deleted.status_code == 303 and deleted.headers["location"] == "/findings?status=open"
        assert "Open EUR" not in ana.get("/findings").text
    views = desk.rows(
        select(
            review_saved_views.c.user_name,
            review_saved_views.c.list_name,
            review_saved_views.c.name,
            review_saved_views.c.query,
        ).order_by(review_saved_views.c.view_id)
    )
    assert views == [
        ("ana", "adjustments", "Mine", "tab=waiting"),
        ("bo", "findings", "Bo's", "status=resolved"),
    ]


def stored_views(engine: Engine, user_name: str, list_name: str, names: list[str]) -> None:
    """Views of ``user_name`` written as the desk writes them (how many a test needs, at once)."""
    rows = [
        {"user_name": user_name, "list_name": list_name, "name": name, "query": "", "created_at": NOW}
        for name in names
    ]
    with engine.begin() as connection:
        connection.execute(insert(review_saved_views), rows)


def test_a_user_keeps_a_bounded_number_of_views_and_a_new_one_beyond_is_refused(desk: Desk) -> None:
    stored_views(desk.engine, "ana", "adjustments", [f"v{n:02d}" for n in range(MAX_VIEWS_PER_USER - 1)])
    with desk.client("ana") as ana, desk.client("bo") as bo:
        last = form(ana, "/views", {"list_name": "findings", "name": "last", "query": "status=open"})
        beyond = form(ana, "/views", {"list_name": "nights", "name": "one more", "query": ""})
        replaced = form(ana, "/views", {"list_name": "findings", "name": "last", "query": "status=resolved"})
        other_user = form(bo, "/views", {"list_name": "nights", "name": "bo's", "query": ""})  # bo's own cap
    assert (last.status_code, replaced.status_code, other_user.status_code) == (303, 303, 303)
    assert beyond.status_code == 400
    assert (
        f"you have {MAX_VIEWS_PER_USER} saved views, the most one user keeps: delete one first" in beyond.text
    )
    v = review_saved_views.c
    names = desk.rows(select(v.name, v.query).where(v.user_name == "ana", v.list_name != "adjustments"))
    assert names == [("last", "status=resolved")]


def test_every_stored_view_is_listed_and_can_be_deleted(desk: Desk) -> None:
    """More views than the cap, saved before there was one: all are listed, the last one deletable."""
    names = [f"view {n:03d}" for n in range(2 * MAX_VIEWS_PER_USER + 10)]
    stored_views(desk.engine, "ana", "findings", names)
    v = review_saved_views.c
    (last_id,) = desk.rows(select(v.view_id).where(v.name == names[-1]))[0]
    with desk.client("ana") as ana:
        listed = ana.get("/findings").text
        assert re.findall(r'action="/views/(\d+)/delete"', listed) == [
            str(view_id) for (view_id,) in desk.rows(select(v.view_id).order_by(v.name))
        ]
        assert form(ana, f"/views/{last_id}/delete", {}).status_code == 303
    assert desk.rows(select(func.count()).select_from(review_saved_views)) == [(len(names) - 1,)]
