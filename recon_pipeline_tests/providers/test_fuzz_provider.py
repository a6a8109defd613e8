"""Fuzzing the Stripe adapter with provider responses of every shape, over real HTTP on 127.0.0.1.

A scripted provider (one server for the module) answers ``/v1/charges`` and ``/v1/refunds`` pages and
by-id lookups with what Hypothesis drew: a plausible night of charges and refunds, then a few corruptions
(wrong types, missing fields, huge numbers, amounts that are not minor units such as ``10.5`` or
``"1000"``, unicode ids, ``has_more`` lies, lists that are not lists, unknown currencies). The property:
``pull_night`` either returns a complete, valid frame, or raises ``IncompletePullError``; never another
exception, never part of the night. Complete is judged against what the server actually served.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import pandas as pd
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from sqlalchemy import select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import adjustments, discrepancies, properties
from recon_pipeline.db.upsert import insert_new
from recon_pipeline.defs.assets import reconciliation_assets
from recon_pipeline.defs.batches import BATCH_OP, batch_run_config
from recon_pipeline.defs.resources import ProviderResource, ReconDatabase
from recon_pipeline.properties import PropertyRow
from recon_pipeline.providers.errors import IncompletePullError
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.objects import PropertyAccount
from recon_pipeline.providers.records import PROVIDER_RECORD_COLUMNS
from recon_pipeline.providers.stripe.client import StripeAdapter
from recon_pipeline.serving import ServerThread
from recon_pipeline.storage.night_outcomes import FAILED, load_outcomes
from recon_pipeline_tests.support.fuzzing import (
    ABSENT,
    deep_nesting,
    fuzz_settings,
    huge_integers,
    json_bytes,
    json_values,
    long_integer,
)
from recon_pipeline_tests.support.provider_fixtures import DAY, FAST_RETRY, T0, make_charge, make_refund

PROP = PropertyAccount("prop_a")
WINDOW = (datetime.fromtimestamp(T0, UTC), datetime.fromtimestamp(T0 + DAY, UTC))
NIGHT = WINDOW[0].date().isoformat()  # prop_a's night (UTC, midnight cutoff) is WINDOW
CHARGES, REFUNDS, TRANSACTIONS = "/v1/charges", "/v1/refunds", "/v1/balance_transactions"
MAX_PAGES = 6  # a has_more that never ends is refused after this many pages


# --- the scripted provider ----------------------------------------------------------------------------


Cursor = str | None  # the ``starting_after`` of a list request (None: the first page)


@dataclass
class Script:
    """What the provider answers during one example.

    ``pages[path][cursor]`` is the list page for ``starting_after=cursor``; a cursor the script does not
    know gets the last page again, as from a provider that ignores it (so a ``has_more`` that lies is seen
    for what it is). A retried request gets the same page. ``objects[path]`` are by-id answers (others are
    404). ``served[path]`` records the pages sent by cursor, which is what a complete frame must contain.
    """

    pages: dict[str, dict[Cursor, bytes]] = field(default_factory=dict)
    objects: dict[str, bytes] = field(default_factory=dict)
    served: dict[str, dict[Cursor, bytes]] = field(default_factory=dict)


class ScriptedProvider:
    """A Starlette app answering from the current ``script`` (replaced by each example)."""

    def __init__(self) -> None:
        self.script = Script()
        self.app = Starlette(routes=[Route("/{path:path}", self._answer)])

    async def _answer(self, request: Request) -> Response:
        # The percent-decoded path, so an id the adapter quoted matches (url.path re-parses a "?" in an id).
        path = request.scope["path"]
        script = self.script
        pages = script.pages.get(path)
        if pages:
            cursor = request.query_params.get("starting_after")
            body = pages.get(cursor, list(pages.values())[-1])
            script.served.setdefault(path, {})[cursor] = body
            return Response(body, media_type="application/json")
        if path in script.objects:
            return Response(script.objects[path], media_type="application/json")
        return JSONResponse({"error": {"type": "invalid_request_error", "message": "No such object"}}, 404)


@dataclass
class Provider:
    """The module's scripted provider on 127.0.0.1 and an adapter that reads it."""

    scripted: ScriptedProvider
    adapter: StripeAdapter
    base_url: str

    def serve(self, script: Script) -> Script:
        self.scripted.script = script
        return script


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    scripted = ScriptedProvider()
    with ServerThread(scripted.app) as server, ProviderHttp(server.base_url, retry=FAST_RETRY) as http:
        yield Provider(scripted, StripeAdapter(http, max_pages=MAX_PAGES), server.base_url)


# --- strategies -----------------------------------------------------------------------------------------

in_window = st.integers(min_value=T0, max_value=T0 + DAY - 1)
# Ids of any script (Stripe's are ASCII, but nothing here may depend on it); the index keeps them unique.
id_suffixes = st.text(st.characters(categories=("L", "N", "P", "S")), max_size=8)
currencies = st.sampled_from(["eur", "usd", "jpy", "kwd", "EUR", "xyz"])
# What a corrupted field holds instead: anything JSON can say, and the near misses of a minor-unit amount.
weird_values = st.one_of(
    st.just(ABSENT),
    st.sampled_from([10.5, "1000", 1e3, 1000.0, True, False, None, -1, 0, "", [], {}]),
    st.sampled_from(["\ud800", "ch_\x00", "EURO", "eü", "€€€", "ÉÜÖ", "ß", " eur "]),
    huge_integers,
    json_values,
)
CHARGE_FIELDS = [
    "id", "amount", "amount_captured", "currency", "created", "status", "captured", "payment_intent",
    "metadata", "balance_transaction", "metadata.booking_id", "metadata.property_id",
    "balance_transaction.fee", "balance_transaction.currency",
]  # fmt: skip
# Drawn more often than the rest: the fields whose numbers end up in the frame.
AMOUNT_FIELDS = ["amount", "amount_captured", "created", "balance_transaction.fee"]
REFUND_FIELDS = ["id", "amount", "currency", "created", "charge", "status", "payment_intent"]
PAGE_FIELDS = ["object", "data", "has_more"]


@st.composite
def charges(
    draw: st.DrawFn, prefix: str, created: st.SearchStrategy[int], min_size: int = 0
) -> list[dict[str, Any]]:
    """Up to 5 Stripe charges of prop_a or of another property, some pending or uncaptured."""
    made = []
    for i in range(draw(st.integers(min_value=min_size, max_value=5))):
        status = draw(st.sampled_from(["succeeded", "succeeded", "pending", "failed"]))
        captured = status == "succeeded" and draw(st.booleans())
        made.append(
            make_charge(
                f"{prefix}{i}_{draw(id_suffixes)}",
                draw(created),
                amount=draw(st.integers(min_value=1, max_value=10**8)),
                currency=draw(currencies),
                property_id=draw(st.sampled_from(["prop_a", "prop_a", "prop_b"])),
                fee=draw(st.none() | st.integers(min_value=0, max_value=500)) if captured else None,
                status=status,
                captured=captured,
            )
        )
    return made


@dataclass
class World:
    """A night as the provider holds it, before serialization: list pages and by-id objects."""

    charge_pages: list[dict[str, Any]]
    refund_pages: list[dict[str, Any]]
    objects: dict[str, Any]


def _paged(records: list[dict[str, Any]], sizes: list[int]) -> list[dict[str, Any]]:
    """``records`` newest first (as Stripe lists them) in pages of ``sizes``, has_more telling the truth."""
    ordered = sorted(records, key=lambda r: r["created"], reverse=True)
    pages: list[dict[str, Any]] = []
    start = 0
    for size in sizes:
        if start >= len(ordered):
            break
        pages.append({"object": "list", "data": ordered[start : start + size], "url": "/v1/x"})
        start += size
    if start < len(ordered) or not pages:
        pages.append({"object": "list", "data": ordered[start:], "url": "/v1/x"})
    for page in pages:
        page["has_more"] = page is not pages[-1]
    return pages


@st.composite
def worlds(draw: st.DrawFn) -> World:
    """A plausible night: charges in the window, earlier charges only reachable by id, refunds of both."""
    night = draw(charges("ch_", in_window, min_size=1))
    earlier = draw(charges("ch_e", st.integers(min_value=T0 - 30 * DAY, max_value=T0 - 1)))
    refundable = night + earlier
    refunds = []
    for i in range(draw(st.integers(min_value=0, max_value=3)) if refundable else 0):
        charge = draw(st.sampled_from(refundable))
        refunds.append(
            make_refund(
                f"re_{i}_{draw(id_suffixes)}",
                charge,
                draw(in_window),
                draw(st.integers(min_value=1, max_value=charge["amount"])),
                status=draw(st.sampled_from(["succeeded", "succeeded", "pending", "failed"])),
            )
        )
    sizes = st.lists(st.integers(min_value=1, max_value=3), max_size=3)
    objects = {f"{CHARGES}/{c['id']}": c for c in earlier} | {f"{REFUNDS}/{r['id']}": r for r in refunds}
    return World(_paged(night, draw(sizes)), _paged(refunds, draw(sizes)), objects)


def _set(obj: dict[str, Any], dotted: str, value: Any) -> None:
    head, _, rest = dotted.partition(".")
    if rest:
        if isinstance(obj.get(head), dict):
            _set(obj[head], rest, value)
    elif value is ABSENT:
        obj.pop(head, None)
    else:
        obj[head] = value


@st.composite
def corrupted(draw: st.DrawFn, world: World) -> World:
    """``world`` with 1–3 corruptions: a field of a record or of a page, a whole page, a paging lie, a
    record listed twice, or a by-id object the provider no longer knows."""
    world = copy.deepcopy(world)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        pages = draw(st.sampled_from([world.charge_pages, world.refund_pages]))
        index = draw(st.integers(min_value=0, max_value=len(pages) - 1))
        page, last = pages[index], pages[-1]
        records = [*_records(world.charge_pages), *_records(world.refund_pages), *world.objects.values()]
        how = draw(st.sampled_from(["record"] * 6 + ["page", "whole_page", "lie", "repeat", "forget"]))
        if how == "record" and records:
            record = draw(st.sampled_from(records))
            fields = REFUND_FIELDS if record.get("object") == "refund" else CHARGE_FIELDS
            name = draw(st.sampled_from(AMOUNT_FIELDS) | st.sampled_from(fields))
            _set(record, name, draw(huge_integers | weird_values))  # huge numbers twice as likely
        elif how == "forget" and world.objects:  # the provider no longer knows an object (404)
            del world.objects[draw(st.sampled_from(sorted(world.objects)))]
        elif how == "page" and isinstance(page, dict):
            _set(page, draw(st.sampled_from(PAGE_FIELDS)), draw(weird_values))
        elif how == "whole_page":
            pages[index] = draw(json_values)
        elif how == "lie" and isinstance(last, dict):
            last["has_more"] = True
        elif how == "repeat" and records and isinstance(page, dict) and isinstance(page.get("data"), list):
            page["data"].append(copy.deepcopy(draw(st.sampled_from(records))))
    return world


def _records(pages: list[Any]) -> list[dict[str, Any]]:
    """The objects still listed on ``pages`` (a corruption may have made a page or its data anything)."""
    return [
        record
        for page in pages
        if isinstance(page, dict) and isinstance(page.get("data"), list)
        for record in page["data"]
        if isinstance(record, dict)
    ]


def script_of(world: World, ensure_ascii: bool) -> Script:
    return Script(
        pages={
            CHARGES: _by_cursor(world.charge_pages, ensure_ascii),
            REFUNDS: _by_cursor(world.refund_pages, ensure_ascii),
            # a night without disputes: their balance transactions' list is empty (not fuzzed here)
            TRANSACTIONS: {None: b'{"object": "list", "data": [], "has_more": false}'},
        },
        objects={path: json_bytes(obj, ensure_ascii) for path, obj in world.objects.items()},
    )


def _by_cursor(pages: list[Any], ensure_ascii: bool) -> dict[Cursor, bytes]:
    """Each page under the cursor that asks for it: the id of the previous page's last record (after a page
    too corrupted to have one, the adapter stops: the next page is unreachable)."""
    by_cursor: dict[Cursor, bytes] = {}
    cursor: Cursor = None
    for i, page in enumerate(pages, start=1):
        by_cursor[cursor] = json_bytes(page, ensure_ascii)
        last = _records([page])[-1:]
        cursor = last[0]["id"] if last and isinstance(last[0].get("id"), str) else f"<unreachable {i}>"
    return by_cursor


# --- the oracle -----------------------------------------------------------------------------------------


def _listed(script: Script, path: str) -> list[dict[str, Any]]:
    """The records of the list pages the server sent (only called after a pull that succeeded)."""
    return [record for body in script.served.get(path, {}).values() for record in json.loads(body)["data"]]


def _object_id(path: str) -> str:
    """``ID`` of ``/v1/charges/ID`` (an id may hold a slash)."""
    return path.split("/", 3)[3]


def _of_prop_a(charge: dict[str, Any] | None) -> bool:
    metadata = (charge or {}).get("metadata")
    return isinstance(metadata, dict) and metadata.get("property_id") == PROP.property_id


def _named_by_ledger_of_prop_a(charge: dict[str, Any] | None) -> bool:
    """What a lookup by id keeps: prop_a's charges and those that name no property (a ``property_id``
    that is not a non-empty string names none): the ledger naming a payment nobody claims is its claim."""
    if charge is None:
        return False
    metadata = charge.get("metadata")
    claim = metadata.get("property_id") if isinstance(metadata, dict) else None
    return claim == PROP.property_id or not (isinstance(claim, str) and claim)


def assert_valid_rows(frame: pd.DataFrame, window: tuple[datetime, datetime] | None) -> None:
    """The contract's columns and dtypes, and every value well typed (and inside ``window`` if given)."""
    assert {name: str(dtype) for name, dtype in frame.dtypes.items()} == PROVIDER_RECORD_COLUMNS
    for row in frame.itertuples():
        assert isinstance(row.provider_record_id, str) and row.provider_record_id.isprintable()
        assert isinstance(row.charge_id, str) and row.charge_id.isprintable()
        assert row.property_id == PROP.property_id
        assert row.kind in {"payment", "refund", "fee"}
        assert isinstance(row.amount_minor, int) and abs(row.amount_minor) < 2**53
        assert row.amount_minor >= 0 if row.kind == "payment" else row.amount_minor <= 0
        assert re.fullmatch("[A-Z]{3}", row.currency), row.currency
        assert row.booking_id is None or isinstance(row.booking_id, str) and row.booking_id.isprintable()
        assert row.payment_intent_id is None or isinstance(row.payment_intent_id, str)
        assert isinstance(row.status, str) and isinstance(row.settled, bool)
        assert window is None or window[0] <= row.created_at < window[1]


def assert_complete_valid_frame(frame: pd.DataFrame, script: Script) -> None:
    """Every row valid and inside the window; every served record of prop_a present exactly once."""
    assert_valid_rows(frame, WINDOW)
    charges_listed = {c["id"]: c for c in _listed(script, CHARGES)}
    by_id = {_object_id(path): json.loads(body) for path, body in script.objects.items()}
    expected_refunds = [
        r["id"]
        for r in _listed(script, REFUNDS)
        if _of_prop_a(charges_listed.get(r["charge"]) or by_id.get(r["charge"]))
    ]
    kinds = frame.groupby("kind")["provider_record_id"].apply(list).to_dict()
    assert sorted(kinds.get("payment", [])) == sorted(i for i, c in charges_listed.items() if _of_prop_a(c))
    assert sorted(kinds.get("refund", [])) == sorted(expected_refunds)
    assert set(kinds.get("fee", [])) <= set(kinds.get("payment", []))


def pull(provider: Provider, script: Script) -> pd.DataFrame | None:
    """``pull_night`` against ``script``: the frame, or None after an IncompletePullError (any other
    exception fails the test)."""
    provider.serve(script)
    try:
        return provider.adapter.pull_night(PROP, *WINDOW)
    except IncompletePullError as error:
        assert PROP.property_id in str(error)
        return None


# --- properties -----------------------------------------------------------------------------------------


@fuzz_settings(max_examples=60)
@given(world=worlds(), ensure_ascii=st.booleans())
@pytest.mark.slow  # Hypothesis: many generated nights
def test_a_well_formed_night_is_pulled_completely(
    provider: Provider, world: World, ensure_ascii: bool
) -> None:
    """The fuzzed property below could pass by refusing everything: valid nights must be accepted."""
    script = script_of(world, ensure_ascii)
    frame = pull(provider, script)
    assert frame is not None
    assert_complete_valid_frame(frame, script)


@fuzz_settings(max_examples=250)
@given(world=worlds().flatmap(corrupted), ensure_ascii=st.booleans())
@pytest.mark.slow  # Hypothesis: many generated nights
def test_a_corrupted_night_gives_a_complete_valid_frame_or_an_incomplete_pull_error(
    provider: Provider, world: World, ensure_ascii: bool
) -> None:
    script = script_of(world, ensure_ascii)
    frame = pull(provider, script)
    event("frame" if frame is not None else "IncompletePullError")
    if frame is not None:
        assert_complete_valid_frame(frame, script)


@fuzz_settings(max_examples=100)
@given(world=worlds().flatmap(corrupted), ensure_ascii=st.booleans())
@pytest.mark.slow  # Hypothesis: many generated nights
def test_a_lookup_by_id_gives_a_complete_valid_frame_or_an_incomplete_pull_error(
    provider: Provider, world: World, ensure_ascii: bool
) -> None:
    """``fetch_records_by_id`` (how the diff checks ledger entries the pull did not contain) reads the
    by-id answers through the same mapping, charges of earlier nights included."""
    script = provider.serve(script_of(world, ensure_ascii))
    requested = [_object_id(path) for path in sorted(script.objects)] + ["ch_unknown", "re_unknown"]
    try:
        frame = provider.adapter.fetch_records_by_id(PROP, requested)
    except IncompletePullError as error:
        assert PROP.property_id in str(error)
        event("IncompletePullError")
        return
    event("frame")
    assert_valid_rows(frame, window=None)
    by_id = {_object_id(path): json.loads(body) for path, body in script.objects.items()}
    kinds = frame.groupby("kind")["provider_record_id"].apply(list).to_dict()
    refunds = [r for i, r in by_id.items() if i.startswith("re_")]
    assert sorted(kinds.get("payment", [])) == sorted(
        i for i, c in by_id.items() if i.startswith("ch_") and _named_by_ledger_of_prop_a(c)
    )
    assert sorted(kinds.get("refund", [])) == sorted(
        r["id"] for r in refunds if _named_by_ledger_of_prop_a(by_id.get(r["charge"]))
    )


# --- fixed regressions, the minimal failing examples found above --------------------------------------


def one_night() -> World:
    """ch_1 of prop_a in the night; re_1 refunds ch_e1, an earlier charge only reachable by id."""
    charge, earlier = make_charge("ch_1", T0 + 60), make_charge("ch_e1", T0 - DAY)
    refund = make_refund("re_1", earlier, T0 + 120, 500)
    objects = {f"{CHARGES}/ch_e1": earlier, f"{REFUNDS}/re_1": refund}
    return World(_paged([charge], []), _paged([refund], []), objects)


def corrupt(world: World, target: str, name: str, value: Any) -> World:
    """``world`` with ``name`` of the night's charge (``charge``), of the refund (``refund``) or of the
    earlier charge (``earlier``, in the by-id answer) set to ``value``."""
    records = {
        "charge": world.charge_pages[0]["data"][0],
        "refund": world.refund_pages[0]["data"][0],
        "earlier": world.objects[f"{CHARGES}/ch_e1"],
    }
    _set(records[target], name, value)
    return world


NIGHT_CORRUPTIONS = {
    # OverflowError out of records_frame (the int64 column), not a ProviderError: the minimal example.
    "amount_2**63": ("charge", "amount_captured", 2**63),
    "fee_2**64": ("charge", "balance_transaction.fee", 2**64),
    "amount_past_exact_float": ("charge", "amount_captured", 2**53 + 1),
    # Accepted into the frame as is, to fail later in the diff or in a database write.
    "booking_id_a_list": ("charge", "metadata.booking_id", ["bk_1"]),
    "booking_id_with_nul": ("charge", "metadata.booking_id", "bk_\x00"),
    "record_id_with_nul": ("charge", "id", "ch_1\x00"),
    "currency_not_ascii": ("charge", "currency", "ÉÜÖ"),
    # UnicodeEncodeError out of quote() while building the by-id URL of the refund's charge.
    "refund_charge_lone_surrogate": ("refund", "charge", "ch_\ud800"),
    # Never minor units: refused, as before.
    "amount_decimal": ("charge", "amount_captured", 10.5),
    "amount_string": ("refund", "amount", "1000"),
    "amount_float": ("refund", "amount", 1000.0),
}


def test_the_night_before_corruption_is_pulled(provider: Provider) -> None:
    frame = pull(provider, script_of(one_night(), ensure_ascii=True))
    assert frame is not None
    assert sorted(zip(frame["provider_record_id"], frame["kind"], frame["amount_minor"], strict=True)) == [
        ("ch_1", "fee", -300),
        ("ch_1", "payment", 10_000),
        ("re_1", "refund", -500),
    ]


@pytest.mark.parametrize("case", NIGHT_CORRUPTIONS)
def test_a_corrupted_field_is_an_incomplete_pull(provider: Provider, case: str) -> None:
    target, name, value = NIGHT_CORRUPTIONS[case]
    script = script_of(corrupt(one_night(), target, name, value), ensure_ascii=True)
    assert pull(provider, script) is None


@pytest.mark.parametrize("claim", [0, "", None, "prop_b"])
def test_a_by_id_charge_naming_no_property_is_the_ledgers_and_another_propertys_is_dropped(
    provider: Provider, claim: Any
) -> None:
    """Found by the lookup property above: a ``metadata.property_id`` that is no property id (``0``) names
    nobody, so the ledger that names the charge owns it (``named_by_ledger``), as with none at all; a
    charge of another property is never returned."""
    provider.serve(
        script_of(corrupt(one_night(), "earlier", "metadata.property_id", claim), ensure_ascii=True)
    )
    frame = provider.adapter.fetch_records_by_id(PROP, ["ch_e1"])
    payments = frame[frame["kind"] == "payment"]
    assert list(payments["provider_record_id"]) == ([] if claim == "prop_b" else ["ch_e1"])
    assert set(frame["property_id"]) <= {PROP.property_id}


@pytest.mark.parametrize("created", [10**12, -(10**12), 2**63])
def test_a_by_id_charge_created_out_of_range_is_an_incomplete_pull(provider: Provider, created: int) -> None:
    """datetime.fromtimestamp raised ValueError (year out of range) or OverflowError on these."""
    provider.serve(script_of(corrupt(one_night(), "earlier", "created", created), ensure_ascii=True))
    with pytest.raises(IncompletePullError, match="created"):
        provider.adapter.fetch_records_by_id(PROP, ["ch_e1"])


@pytest.mark.parametrize("literal", [long_integer(4_301), deep_nesting(100_000)])
def test_a_body_python_cannot_decode_is_an_incomplete_pull(provider: Provider, literal: str) -> None:
    """An integer past a double's range and nesting 100,000 deep are not JSON to the decoder: an invalid
    body to ProviderHttp, so the pull fails cleanly instead of crashing."""
    script = script_of(one_night(), ensure_ascii=True)
    script.pages[CHARGES] = {
        None: f'{{"object": "list", "data": [], "has_more": false, "x": {literal}}}'.encode()
    }
    assert pull(provider, script) is None


# --- the Dagster consequence --------------------------------------------------------------------------


@pytest.mark.slow  # a Dagster run per example
def test_a_malformed_response_fails_the_batch_step_and_reports_nothing(
    provider: Provider, sqlite_url: str
) -> None:
    """Through ``materialize``: the corrupted night fails the property in the batch step (after its step
    retries), naming the property, the night and the field; no asset is materialized, no discrepancy or
    adjustment is written, and the property-night's outcome is failed with the same one-line error."""
    engine = make_engine(sqlite_url)
    migrations.upgrade(engine)
    with engine.begin() as connection:
        insert_new(
            connection,
            properties,
            [PropertyRow("prop_a", "Fuzz", "UTC", "EUR", "00:00", None).row()],
            ["property_id"],
        )
    provider.serve(script_of(corrupt(one_night(), "charge", "amount_captured", "1000"), ensure_ascii=True))
    resources = {
        "recon_db": ReconDatabase(database_url=sqlite_url),
        "provider": ProviderResource(
            provider="simulator",
            flavour="stripe",
            base_url=provider.base_url,
            base_delay_s=0.001,
            max_delay_s=0.005,
        ),
    }
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            reconciliation_assets,
            partition_key=NIGHT,
            run_config=batch_run_config(["prop_a"]),
            instance=instance,
            resources=resources,
            raise_on_error=False,
        )
    assert not result.success
    failures = [e for e in result.all_events if e.is_step_failure]
    assert [e.step_key for e in failures] == [BATCH_OP]
    error = str(failures[0].step_failure_data.error)
    assert f"property prop_a night {NIGHT}: IncompletePullError" in error and "'amount_captured'" in error
    assert result.get_asset_materialization_events() == []
    with engine.connect() as connection:
        assert connection.execute(select(discrepancies)).all() == []
        assert connection.execute(select(adjustments)).all() == []
        [outcome] = load_outcomes(connection, NIGHT).values()
    assert (outcome.property_id, outcome.status) == ("prop_a", FAILED)
    assert outcome.error is not None and outcome.error in error and "\n" not in outcome.error
    engine.dispose()
