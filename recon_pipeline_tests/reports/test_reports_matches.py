"""The night's HTML report shows its matches beyond the provider's id, over SQLite and PostgreSQL: how many
each rule made in words (a person's decisions under "a person's decision"), the suggestions waiting for a
person, and each current match with its rule, records, entries, amounts and detail; a match a later run
cleared is not shown."""

from __future__ import annotations

from datetime import timedelta
from html.parser import HTMLParser

import pytest
from sqlalchemy import Engine, insert

from recon_pipeline.db.schema import properties
from recon_pipeline.ledger.queries import load_property
from recon_pipeline.reports.render import render_night_html
from recon_pipeline.storage.matches import save_matches
from recon_pipeline_tests.support.match_rows import NIGHT, NOW, PROPERTY, match_row, matches_frame


class Cells(HTMLParser):
    """The text of each row of ``table#matches``, and of ``p#matches-by-rule``."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.sentence = ""
        self._where: str | None = None
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        ident = dict(attrs).get("id")
        if ident in ("matches", "matches-by-rule"):
            self._where = ident
        if self._where == "matches" and tag == "tr":
            self.rows.append([])
        if self._where == "matches" and tag == "td":
            self._in_cell = True
            self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._in_cell = False
        if (tag, self._where) in (("table", "matches"), ("p", "matches-by-rule")):
            self._where = None

    def handle_data(self, data: str) -> None:
        if self._in_cell:
            self.rows[-1][-1] += data
        elif self._where == "matches-by-rule":
            self.sentence += data


@pytest.mark.fast
def test_the_report_says_the_matches_per_rule_and_lists_each_one(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(
            insert(properties),
            [{"property_id": PROPERTY, "name": "Rome", "timezone": "UTC", "currency": "EUR"}],
        )
        found = matches_frame(
            match_row(["ch_1"], ["le_1"], detail="ch_1 is le_1: booking B-17 and 120.00 EUR"),
            match_row(["ch_2"], ["le_2a", "le_2b"], rule="split", score=0.9, amount=9_000),
            match_row(["ch_3"], ["le_3"], rule="card_window", score=0.5, status="suggested", amount=4_550),
            match_row(["ch_gone"], ["le_gone"]),
        )
        save_matches(connection, PROPERTY, NIGHT, found, "run-1", NOW)
        # The next run no longer finds ch_gone's pairing: it is cleared, and the page leaves it out.
        save_matches(connection, PROPERTY, NIGHT, found.iloc[:3], "run-2", NOW + timedelta(hours=1))
        page = render_night_html(connection, load_property(connection, PROPERTY), NIGHT)
    cells = Cells()
    cells.feed(page)
    assert cells.sentence == (
        "Matched by booking and amount 1, a split folio (sums within a booking or a group) 1; "
        "1 suggestion waiting for a person."
    )
    header, *rows = cells.rows
    assert header == []  # the head's cells are <th>
    assert rows == [
        ["card, amount and time", "suggested", "0.50", "ch_3", "le_3", "45.50 EUR", "45.50 EUR",
         "card_window match"],
        ["booking and amount", "matched", "0.95", "ch_1", "le_1", "120.00 EUR", "120.00 EUR",
         "ch_1 is le_1: booking B-17 and 120.00 EUR"],
        ["a split folio (sums within a booking or a group)", "matched", "0.90", "ch_2", "le_2a le_2b",
         "90.00 EUR", "90.00 EUR", "split match"],
    ]  # fmt: skip


@pytest.mark.fast
def test_a_night_without_matches_says_so(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(
            insert(properties),
            [{"property_id": PROPERTY, "name": "Rome", "timezone": "UTC", "currency": "EUR"}],
        )
        page = render_night_html(connection, load_property(connection, PROPERTY), NIGHT)
    cells = Cells()
    cells.feed(page)
    assert cells.sentence == "Nothing matched beyond the provider's id."
    assert cells.rows[1:] == [["none"]]
