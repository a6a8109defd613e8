"""A batch's PMS input read at once (``ledger/queries.py``): each property gets the rows of its own window,
whatever time zone, in one statement per table (per ``IN_CLAUSE_CHUNK`` properties)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import event, insert

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import ledger_entries, payment_orders, properties
from recon_pipeline.frames import SCOPE, pieces
from recon_pipeline.ledger import queries
from recon_pipeline.ledger.queries import (
    ADJACENT_NIGHT_MARGIN,
    captured_orders_frame,
    ledger_frame,
    ledger_frames,
    read_captured_order_rows,
    read_ledger_rows,
)
from recon_pipeline.ledger.validation import split_ledger_records
from recon_pipeline.nights import night_window
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT

ZONES = {"p_utc": "UTC", "p_tokyo": "Asia/Tokyo", "p_la": "America/Los_Angeles"}


@pytest.mark.parametrize("chunk", [500, 2])
def test_each_property_gets_its_own_windows_rows_in_one_statement_per_table(
    database_url: str, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queries, "IN_CLAUSE_CHUNK", chunk)
    engine = make_engine(database_url)
    migrations.upgrade(engine)
    windows = {p: night_window(NIGHT, zone, "00:00") for p, zone in ZONES.items()}
    # Per property: an entry in its night, one in the margin before it, one just past the margin; and a
    # captured order in its night and one an hour before it. The zones' windows overlap, so a row of one
    # property inside another's window tells whether the windows were applied per property.
    offsets = {
        "in": timedelta(hours=2),
        "adjacent": -timedelta(hours=3),
        "outside": ADJACENT_NIGHT_MARGIN * -1 - timedelta(hours=1),
    }
    with engine.begin() as connection:
        connection.execute(
            insert(properties),
            [{"property_id": p, "name": p, "timezone": zone, "currency": "EUR"} for p, zone in ZONES.items()],
        )
        connection.execute(
            insert(ledger_entries),
            [
                {"entry_id": f"{p}_{where}", "property_id": p, "kind": "payment", "amount_minor": 100,
                 "currency": "eur", "posted_at": windows[p].start + offset}
                for p in ZONES
                for where, offset in offsets.items()
            ],
        )  # fmt: skip
        connection.execute(
            insert(payment_orders),
            [
                {"provider_payment_id": f"ch_{p}_{where}", "property_id": p, "amount_minor": 100,
                 "currency": "eur", "status": "captured", "captured_at": windows[p].start + offset,
                 "updated_at": windows[p].start}
                for p in ZONES
                for where, offset in (("in", timedelta(hours=2)), ("before", -timedelta(hours=1)))
            ],
        )  # fmt: skip
    asked = {p: windows[p] for p in ("p_utc", "p_tokyo")}  # p_la is not in the batch
    statements: list[str] = []

    @event.listens_for(engine, "before_cursor_execute")
    def count(_c: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    with engine.connect() as connection:
        ledger = read_ledger_rows(connection, asked)
        captured = read_captured_order_rows(connection, asked)
    engine.dispose()

    per_table = -(-len(asked) // chunk)  # one statement per chunk of properties
    assert len(statements) == 2 * per_table
    assert set(ledger) == set(captured) == set(asked)
    for p, window in asked.items():
        frame = ledger_frame(ledger[p], window)
        assert dict(zip(frame["entry_id"], frame["in_night"], strict=True)) == {
            f"{p}_in": True,
            f"{p}_adjacent": False,
        }
        assert frame["currency"].tolist() == ["EUR", "EUR"]
        assert captured_orders_frame(captured[p])["payment_id"].tolist() == [f"ch_{p}_in"]


def test_the_ledger_frame_carries_the_card_keys_brand_lower_cased(engine: Any) -> None:
    """The four match keys a PMS records of a card payment reach the frame: the brand lower-cased (a PMS
    writes ``VISA`` or `` Visa ``), the last four, approval code and reference as read; an entry that
    names none has them null; a property's row still lists with the two columns it gained."""
    window = night_window(NIGHT, "UTC", "00:00")
    keyed = {
        "card_brand": " VISA ",
        "card_last4": "0042",
        "approval_code": "a1B2c3",
        "reference": "ch_1 / B-17",
    }
    bare = dict.fromkeys(keyed)
    blank = {**bare, "card_brand": " "}
    with engine.begin() as connection:
        connection.execute(
            insert(properties),
            {
                "property_id": "p",
                "name": "P",
                "timezone": "UTC",
                "currency": "EUR",
                "fee_booking": "per_payout",
            },
        )
        connection.execute(
            insert(ledger_entries),
            [
                {"entry_id": entry_id, "property_id": "p", "kind": "payment", "amount_minor": 100,
                 "currency": "EUR", "posted_at": window.start + timedelta(hours=1), **keys}
                for entry_id, keys in (("le_keyed", keyed), ("le_bare", bare), ("le_blank", blank))
            ],
        )  # fmt: skip
        frame = ledger_frame(read_ledger_rows(connection, {"p": window})["p"], window)
        assert [row.property_id for row in queries.list_properties(connection)] == ["p"]
        assert queries.load_property(connection, "p").property_id == "p"
    keys = frame.set_index("entry_id")[["card_brand", "card_last4", "approval_code", "reference"]]
    assert keys.loc["le_keyed"].tolist() == ["visa", "0042", "a1B2c3", "ch_1 / B-17"]
    assert keys.loc["le_bare"].tolist() == [None] * 4
    assert keys.loc["le_blank"].tolist() == [None] * 4
    assert (frame[list(keys.columns)].dtypes == "object").all()


def test_a_batch_of_ledgers_as_one_frame_is_each_night_as_its_own_frame_row_for_row() -> None:
    """``ledger_frames`` over three nights in three time zones (the windows overlap, so a row is in night
    only by its own night's window), then ``split_ledger_records`` once and ``frames.pieces``: each night
    gets the valid entries and the invalid-entry findings it gets alone, in its order and dtypes."""
    windows = [night_window(NIGHT, zone, "00:00") for zone in ZONES.values()]

    def rows(at: int) -> list[dict[str, Any]]:
        start = windows[at].start
        return [
            {"entry_id": f"e{at}_{n}", "property_id": f"p{at}", "booking_id": None,
             "provider_record_id": f"ch_{n}", "kind": kind, "amount_minor": amount, "currency": "eur",
             "posted_at": start + offset, "card_brand": "VA", "tender": "Cash" if n == 2 else None}
            for n, (kind, amount, offset) in enumerate(
                (("payment", 100, timedelta(hours=1)), ("refund", -40, -timedelta(hours=2)),
                 ("payment", 7, timedelta(hours=3)), ("chargeback", 5, timedelta(hours=4)),
                 ("payment", "12.5", timedelta(hours=30)))
            )
        ][: 5 - at]  # nights of different sizes; the third night has no invalid row

    parts = [(rows(at), window) for at, window in enumerate(windows)]
    split = split_ledger_records(ledger_frames(parts))
    valid = pieces(split.valid, split.valid[SCOPE].to_numpy(), len(parts))
    invalid = pieces(split.invalid, split.invalid[SCOPE].to_numpy(), len(parts))
    for at, (night_rows, window) in enumerate(parts):
        alone = split_ledger_records(ledger_frame(night_rows, window))
        pd.testing.assert_frame_equal(valid[at], alone.valid)
        pd.testing.assert_frame_equal(invalid[at], alone.invalid)
    assert [len(frame) for frame in invalid] == [1, 1, 0]  # the chargeback in night; "12.5" is adjacent
    assert valid[0]["in_night"].tolist() == [True, False, True]
