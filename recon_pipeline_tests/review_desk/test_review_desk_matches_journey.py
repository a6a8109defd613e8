"""Issue 26's review desk journey in Debian's Chromium, over a real night's run: Lisbon's ledger has two
postings without the provider's id (PMS-style: no charge id, no booking). The run (``reconcile_batch``
against the simulator) suggests one of them for its charge (amount and time, the card unknown on the
ledger: below the threshold, so proposes nothing), and leaves the other one and its charge unmatched (a
missing_in_ledger and a missing_at_provider finding, each with a proposal). An analyst confirms the
suggestion on its finding's page and pairs the other two by hand through the form the finding links to;
the night is run again, and the desk shows both reflected: the three findings cleared, the two proposals
withdrawn, both matches confirmed. Every step goes through the pages' own forms and links."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import Engine, select

from recon_pipeline.batches.work import BatchRequest, reconcile_batch
from recon_pipeline.db.schema import adjustments, discrepancies, match_decisions, matches, review_audit
from recon_pipeline.defs.resources import ProviderResource
from recon_pipeline.providers.interface import ProviderClient
from recon_pipeline.serving import ServerThread
from recon_pipeline.simulation.demo.properties import DEMO_PROPERTIES
from recon_pipeline.simulation.demo.seed import seed_world
from recon_pipeline.simulation.demo.world import World, build_world
from recon_pipeline.simulation.host.app import build_app
from recon_pipeline_tests.support.browser import chromium_page
from recon_pipeline_tests.support.desk_fixtures import PASSWORD, add_user, served_desk
from recon_pipeline_tests.support.provider_fixtures import flavour_of

pytestmark = [
    pytest.mark.slow,  # drives Chromium
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]

NIGHT = date(2026, 11, 30)
LISBON = next(p for p in DEMO_PROPERTIES if p.property_id == "lisbon-riverside")
SUGGESTED_ENTRY = "le_lisbon2026113000023"  # posted 10 minutes after its charge: a suggestion
UNMATCHED_ENTRY = "le_lisbon2026113000011"  # posted 6 hours after its charge: beyond the 3-hour window


@dataclass
class Night:
    engine: Engine
    base_url: str
    client: ProviderClient
    suggested_charge: str
    unmatched_charge: str

    def run(self, run_id: str) -> None:
        """The night's reconciliation of Lisbon, as the pipeline's step runs it."""
        batch = reconcile_batch(
            self.engine, self.client, BatchRequest(NIGHT.isoformat(), (LISBON.property_id,)), run_id
        )
        assert [o.error for o in batch.outcomes if not o.succeeded] == []


def unkey(world: World, entry_id: str, after_charge: timedelta) -> str:
    """The posting as a PMS keeps it: no provider id, no booking, posted ``after_charge`` the charge's
    creation; the charge's id."""
    charges = {charge["id"]: charge for charge in world.store.charges}
    entry = next(entry for entry in world.ledger_entries if entry["entry_id"] == entry_id)
    charge = charges[entry["provider_record_id"]]
    entry.update(
        provider_record_id=None,
        booking_id=None,
        posted_at=datetime.fromtimestamp(charge["created"], UTC) + after_charge,
    )
    return str(charge["id"])


@pytest.fixture
def night(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Night]:
    world = build_world({LISBON.property_id: NIGHT}, bookings_per_night=8, properties=(LISBON,), plant=False)
    suggested = unkey(world, SUGGESTED_ENTRY, timedelta(minutes=10))
    unmatched = unkey(world, UNMATCHED_ENTRY, timedelta(hours=6))
    with (
        served_desk(database_url, monkeypatch) as served,
        ServerThread(build_app(flavour_of("stripe").served(world.store), flavour="stripe")) as simulator,
    ):
        seed_world(served.engine, world)
        add_user("ana", "analyst", LISBON.property_id)
        client = ProviderResource(
            database_url=database_url,
            provider="simulator",
            flavour="stripe",
            base_url=simulator.base_url,
            max_concurrency=4,
            base_delay_s=0.01,
            max_delay_s=0.05,
        ).adapter()
        yield Night(served.engine, served.base_url, client, suggested, unmatched)


def sign_in(page: Page, base_url: str, name: str) -> None:
    page.goto(f"{base_url}/findings")
    page.get_by_label("Name").fill(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base_url}/findings")


def test_a_suggestion_confirmed_and_a_pair_by_hand_hold_after_the_night_runs_again(night: Night) -> None:
    night.run("run-1")
    suggested_key = f"{night.suggested_charge}={SUGGESTED_ENTRY}"
    paired_key = f"{night.unmatched_charge}={UNMATCHED_ENTRY}"
    assert open_findings(night.engine) == {
        f"match:{suggested_key}": "suggested_match",
        f"{night.unmatched_charge}:payment": "missing_in_ledger",
        f"entry:{UNMATCHED_ENTRY}": "missing_at_provider",
    }
    assert proposals(night.engine) == {
        f"{night.unmatched_charge}:payment": "proposed",
        f"entry:{UNMATCHED_ENTRY}": "proposed",
    }  # the suggestion proposes nothing
    base = night.base_url
    with chromium_page("review-desk-matches-journey") as watched:
        page = watched.page
        sign_in(page, base, "ana")

        # The suggestion's finding lists its candidate: the rule in words, score, keys, both amounts.
        page.get_by_role("link", name=f"match:{suggested_key}").click()
        page.wait_for_url(re.compile(r".*/findings/\d+$"))
        finding_url = page.url
        candidate = page.get_by_role("row").filter(has_text=suggested_key)
        for said in ("card, amount and time", "0.50", "suggested", "323.50 EUR", "10 min apart"):
            assert candidate.get_by_text(said).count() > 0, said
        page.get_by_label("Reason").fill("terminal sale, same amount ten minutes later")
        page.get_by_role("button", name="Confirm match").click()
        page.wait_for_url(finding_url)
        expect(
            page.get_by_role("row").filter(has_text=suggested_key).get_by_text("confirmed")
        ).to_be_visible()
        watched.screenshot("review-desk-suggestion-confirmed")

        # The unmatched charge's finding links to the form, filled with its record; the entry is typed.
        page.get_by_role("link", name="Findings", exact=True).click()
        page.get_by_role("link", name=f"{night.unmatched_charge}:payment").click()
        page.get_by_role("link", name="Match this finding's records by hand").click()
        page.wait_for_url(re.compile(r".*/matches/pair\?.*"))
        assert page.get_by_label("Provider record ids").input_value() == night.unmatched_charge
        page.get_by_label("Ledger entry ids").fill(UNMATCHED_ENTRY)
        page.get_by_label("Reason").fill("guest's folio posted at check-out")
        page.get_by_role("button", name="Match by hand").click()
        page.wait_for_url(re.compile(r".*/matches/\d+$"))
        expect(page.get_by_text("a person's decision (person)")).to_be_visible()
        expect(page.get_by_role("cell", name="guest's folio posted at check-out")).to_be_visible()

        # The night runs again: the decisions hold, the findings clear, the proposals are withdrawn.
        night.run("run-2")
        page.goto(f"{base}/findings?cleared=no")
        expect(page.get_by_role("cell", name="No findings match.")).to_be_visible()
        page.get_by_role("link", name="Matches", exact=True).click()
        page.wait_for_url(f"{base}/matches")
        for key in (suggested_key, paired_key):
            row = page.get_by_role("row").filter(has_text=key)
            confirmed = row.get_by_role("cell", name="Confirmed by a person", exact=True)
            expect(confirmed, message=key).to_be_visible()
        watched.screenshot("review-desk-matches-after-rerun")
        # The cleared findings' pages say their proposals were withdrawn.
        for record_key in (f"{night.unmatched_charge}:payment", f"entry:{UNMATCHED_ENTRY}"):
            page.goto(f"{base}/findings?cleared=yes")
            page.get_by_role("link", name=record_key, exact=True).click()
            page.wait_for_url(re.compile(r".*/findings/\d+\?cleared=yes$"))  # the list's query kept
            withdrawn = page.get_by_role("cell", name="Withdrawn (no longer needed)", exact=True)
            expect(withdrawn, message=record_key).to_be_visible()

        assert watched.console_errors == [] and watched.page_errors == []
        assert {url.split("/")[2] for url in watched.requested_urls} == {base.split("/")[2]}

    assert open_findings(night.engine) == {}
    assert proposals(night.engine) == {
        f"{night.unmatched_charge}:payment": "withdrawn",
        f"entry:{UNMATCHED_ENTRY}": "withdrawn",
    }
    assert_recorded(night.engine, suggested_key, paired_key)


def open_findings(engine: Engine) -> dict[str, str]:
    with engine.connect() as connection:
        query = select(discrepancies.c.record_key, discrepancies.c.category).where(
            discrepancies.c.cleared_at.is_(None)
        )
        return dict(connection.execute(query).tuples().all())


def proposals(engine: Engine) -> dict[str, str]:
    with engine.connect() as connection:
        return dict(connection.execute(select(adjustments.c.record_key, adjustments.c.status)).tuples().all())


def assert_recorded(engine: Engine, suggested_key: str, paired_key: str) -> None:
    """Both matches confirmed by ana, as the second run left them; the decisions and the audit log say
    who did what at which amount."""
    with engine.connect() as connection:
        stored = {
            row.match_key: (row.rule, row.status, row.decided_by, row.cleared_at)
            for row in connection.execute(select(matches))
        }
        decisions = connection.execute(
            select(
                match_decisions.c.match_key, match_decisions.c.action, match_decisions.c.decided_by
            ).order_by(match_decisions.c.decision_id)
        ).all()
        audit = connection.execute(
            select(review_audit.c.user_name, review_audit.c.action, review_audit.c.amount_seen)
            .where(review_audit.c.action.in_(("confirm_match", "pair_match")))
            .order_by(review_audit.c.id)
        ).all()
    assert stored == {
        suggested_key: ("card_window", "confirmed", "ana", None),
        paired_key: ("person", "confirmed", "ana", None),
    }
    assert [tuple(row) for row in decisions] == [
        (suggested_key, "confirm", "ana"),
        (paired_key, "pair", "ana"),
    ]
    assert [tuple(row) for row in audit] == [("ana", "confirm_match", 32_350), ("ana", "pair_match", 18_150)]
