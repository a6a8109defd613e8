"""Per-property access on every route of the review desk, over SQLite and PostgreSQL on a real server.

A user of p1 tries each page, export and action with p2's identifiers: detail pages and actions answer 404
(the same as for what does not exist), list filters naming p2 answer 400, and no answer carries any of p2's
records. The census at the end fails when a route is added without a case here, so a new page cannot skip
the check.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import Engine, func, insert, select
from starlette.routing import Route

from recon_pipeline.db.schema import (
    adjustment_reviews,
    discrepancies,
    discrepancy_reviews,
    match_decisions,
    matches,
    payouts,
    posting_outbox,
)
from recon_pipeline.review_desk.app import DeskSettings, review_desk_app
from recon_pipeline.storage.matches import save_matches
from recon_pipeline_tests.support.desk_fixtures import (
    NIGHT,
    NOW,
    add_user,
    csrf_of,
    finding,
    served_desk,
    sign_in,
)
from recon_pipeline_tests.support.desk_rows import payout_row
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.match_rows import match_row, matches_frame
from recon_pipeline_tests.support.posting_fixtures import propose

THEIRS = "theirs"  # every p2 record's id starts with it: no answer to a p1 user may contain it


@dataclass
class Desk:
    engine: Engine
    base_url: str
    finding_id: int  # p2's
    adjustment_id: str  # p2's
    own_adjustment_id: str  # p1's
    match_id: int  # p2's

    def forbidden(self) -> tuple[str, ...]:
        """What marks p2's records in an answer."""
        return (THEIRS, self.adjustment_id)

    def own(self) -> tuple[str, ...]:
        """What marks p1's records: a list or export of everything shows one of them."""
        return ("mine_ch", "po_mine", self.own_adjustment_id)


@pytest.fixture
def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Desk]:
    with served_desk(database_url, monkeypatch) as served:
        own_adjustment_id = propose(served.engine, "mine_ch", 700, property_id="p1", night=NIGHT)
        adjustment_id = propose(served.engine, f"{THEIRS}_ch", 900, property_id="p2", night=NIGHT)
        with served.engine.begin() as connection:
            connection.execute(
                insert(discrepancies),
                [
                    finding("p1", "mine_ch", 700, category="missing_in_ledger"),
                    finding("p2", f"{THEIRS}_ch", 900, category="missing_in_ledger"),
                ],
            )
            connection.execute(
                insert(payouts), [payout_row("po_mine", "p1"), payout_row(f"po_{THEIRS}", "p2")]
            )
            finding_id = connection.execute(
                select(discrepancies.c.discrepancy_id).where(discrepancies.c.property_id == "p2")
            ).scalar_one()
            for property_id, record in (("p1", "mine_ch"), ("p2", f"{THEIRS}_ch")):
                suggestion = match_row([record], [f"le_{record}"], status="suggested", score=0.5)
                save_matches(connection, property_id, NIGHT, matches_frame(suggestion), "run-1", NOW)
            match_id = connection.execute(
                select(matches.c.match_id).where(matches.c.property_id == "p2")
            ).scalar_one()
        add_user("alice", "approver", "p1")  # may act: only the property stops her
        yield Desk(served.engine, served.base_url, finding_id, adjustment_id, own_adjustment_id, match_id)


def get_cases(desk: Desk) -> dict[str, list[tuple[str, dict[str, str], int]]]:
    """Route → the requests a p1 user makes with p2's identifiers and the status each must get."""
    p2_night = f"/nights/p2/{NIGHT}"
    return {
        "/findings": [("/findings", {}, 200), ("/findings", {"property": "p2"}, 400)],
        "/findings/{finding_id}": [(f"/findings/{desk.finding_id}", {}, 404)],
        "/findings/export.csv": [
            ("/findings/export.csv", {}, 200),
            ("/findings/export.csv", {"property": "p2"}, 400),
        ],
        "/findings/export.xlsx": [("/findings/export.xlsx", {"property": "p2"}, 400)],
        "/adjustments": [("/adjustments", {}, 200), ("/adjustments", {"property": "p2"}, 400)],
        "/adjustments/{adjustment_id}": [(f"/adjustments/{desk.adjustment_id}", {}, 404)],
        "/adjustments/export.csv": [
            ("/adjustments/export.csv", {}, 200),
            ("/adjustments/export.csv", {"property": "p2"}, 400),
        ],
        "/adjustments/export.xlsx": [("/adjustments/export.xlsx", {"property": "p2"}, 400)],
        "/overview": [("/overview", {}, 200), ("/overview", {"property": "p2"}, 400)],
        "/nights": [("/nights", {}, 200), ("/nights", {"property": "p2"}, 400)],
        "/nights/{property_id}/{night}": [(p2_night, {}, 404)],
        "/nights/{property_id}/{night}/report.html": [(f"{p2_night}/report.html", {}, 404)],
        "/payouts": [("/payouts", {}, 200), ("/payouts", {"property": "p2"}, 400)],
        "/payouts/{payout_id}": [(f"/payouts/po_{THEIRS}", {}, 404)],
        "/nights/export.csv": [
            ("/nights/export.csv", {}, 200),
            ("/nights/export.csv", {"property": "p2"}, 400),
        ],
        "/nights/export.xlsx": [("/nights/export.xlsx", {"property": "p2"}, 400)],
        "/payouts/export.csv": [
            ("/payouts/export.csv", {}, 200),
            ("/payouts/export.csv", {"property": "p2"}, 400),
        ],
        "/payouts/export.xlsx": [("/payouts/export.xlsx", {"property": "p2"}, 400)],
        "/matches": [("/matches", {}, 200), ("/matches", {"property": "p2"}, 400)],
        "/matches/{match_id}": [(f"/matches/{desk.match_id}", {}, 404)],
        "/matches/pair": [("/matches/pair", {"records": "mine_ch"}, 200)],  # the form: the user's own
        "/matches/export.csv": [
            ("/matches/export.csv", {}, 200),
            ("/matches/export.csv", {"property": "p2"}, 400),
        ],
        "/matches/export.xlsx": [("/matches/export.xlsx", {"property": "p2"}, 400)],
    }


def post_cases(desk: Desk) -> dict[str, dict[str, Any]]:
    """Action route → the form a p1 user posts about p2's records (each must be a 404)."""
    return {
        "/findings/{finding_id}/review": {
            "path": f"/findings/{desk.finding_id}/review",
            "action": "acknowledge",
            "comment": "not mine to review",
        },
        "/findings/{finding_id}/assign": {
            "path": f"/findings/{desk.finding_id}/assign",
            "assignee": "alice",
        },
        "/findings/{finding_id}/note": {"path": f"/findings/{desk.finding_id}/note", "note": "not mine"},
        "/findings/bulk/confirm": {
            "path": "/findings/bulk/confirm",
            "action": "acknowledge",
            "discrepancy_id": str(desk.finding_id),
        },
        "/findings/bulk/review": {
            "path": "/findings/bulk/review",
            "action": "acknowledge",
            "discrepancy_id": str(desk.finding_id),
            f"difference_seen_{desk.finding_id}": "900",
            "comment": "not mine to review",
        },
        "/adjustments/confirm": {
            "path": "/adjustments/confirm",
            "action": "approve",
            "adjustment_id": desk.adjustment_id,
        },
        "/adjustments/decide": {
            "path": "/adjustments/decide",
            "action": "approve",
            "adjustment_id": desk.adjustment_id,
            f"amount_seen_{desk.adjustment_id}": "900",
            "comment": "not mine to approve",
        },
        "/adjustments/{adjustment_id}/withdraw-approval": {
            "path": f"/adjustments/{desk.adjustment_id}/withdraw-approval",
            "comment": "not mine to withdraw",
        },
        "/matches/{match_id}/decide": {
            "path": f"/matches/{desk.match_id}/decide",
            "action": "confirm",
            "reason": "not mine to confirm",
        },
        "/matches/pair": {
            "path": "/matches/pair",
            "property": "p2",
            "night": NIGHT,
            "records": f"{THEIRS}_ch",
            "entries": f"le_{THEIRS}_ch",
            "reason": "not mine to pair",
        },
    }


def changes(engine: Engine) -> tuple[int, ...]:
    """What an action would have written: reviews of either kind (notes included), postings, non-open
    findings, match decisions, assignees."""
    with engine.connect() as connection:
        return tuple(
            int(connection.execute(statement).scalar_one())
            for statement in (
                select(func.count()).select_from(discrepancy_reviews),
                select(func.count()).select_from(adjustment_reviews),
                select(func.count()).select_from(posting_outbox),
                select(func.count())
                .select_from(discrepancies)
                .where(discrepancies.c.review_status != "open"),
                select(func.count()).select_from(match_decisions),
                select(func.count())
                .select_from(discrepancies)
                .where(discrepancies.c.assigned_to.is_not(None)),
            )
        )


def test_no_page_export_or_action_reaches_another_propertys_records(desk: Desk) -> None:
    with loopback_client(base_url=desk.base_url) as client:
        assert sign_in(client, "alice").status_code == 303
        for route, requests in get_cases(desk).items():
            for path, params, status in requests:
                answer = client.get(path, params=params)
                assert answer.status_code == status, (route, path, params, answer.text[:300])
                body = answer.text  # the xlsx cases are refusals, so text too
                assert not any(marker in body for marker in desk.forbidden()), (route, path, params)
                if status == 200 and not route.startswith(("/nights", "/overview")):  # p1 and sums, no record
                    assert any(marker in body for marker in desk.own()), (route, path)
        before = changes(desk.engine)
        for route, form in post_cases(desk).items():
            token = csrf_of(client.get("/findings"))
            path = form.pop("path")
            answer = client.post(path, data={"csrf_token": token, **form})
            assert answer.status_code == 404, (route, answer.text[:300])
            assert not any(marker in answer.text for marker in desk.forbidden())
        assert changes(desk.engine) == before == (0, 0, 0, 0, 0, 0)


def test_every_route_of_the_desk_has_an_access_case() -> None:
    """A route added to the desk without a case above fails here: add its case (or say why it needs none)."""
    desk = Desk(None, "", 0, "", "", 0)  # type: ignore[arg-type]  # the cases only format paths
    public = {"/", "/signin", "/signout", "/legend"}  # no property's data: sign-in/out, home, the legend
    # A user's own saved views: a list's query, no property's data (another's: 404, test_review_desk_work).
    public |= {"/views", "/views/{view_id}/delete"}
    app = review_desk_app(None, DeskSettings("s" * 40))  # type: ignore[arg-type]  # routes only
    routed = {route.path for route in app.routes if isinstance(route, Route)} - public
    assert routed == set(get_cases(desk)) | set(post_cases(desk))
