"""Fuzzing the webhook receiver over real HTTP on 127.0.0.1, on a SQLite file and on PostgreSQL.

One receiver per database serves the whole module (a server per example would spend the budget on
startups); every example counts ``payment_events`` and ``payment_event_processing`` just before and just
after its delivery, so the shared database is no obstacle. The properties:

- no delivery is ever answered with a 5xx (the only deliberate one, 503 for a database that is down, is
  not provoked here);
- a delivery whose signature does not verify is a 400 (413 when too large) and stores nothing;
- a validly signed body that is not a well-formed event is a 400 ``malformed_event`` and stores nothing;
- a validly signed well-formed event is a 200 stored exactly once, byte for byte, with a pending
  processing row, and its redelivery is a 200 duplicate that stores nothing;
- after each run the receiver is healthy (``/healthz`` 200) and still stores a fresh event.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from sqlalchemy import select

from recon_pipeline.db import migrations
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import payment_event_processing, payment_events
from recon_pipeline.providers.events import MAX_CREATED, MAX_ID_LENGTH
from recon_pipeline.providers.stripe.webhook import DEFAULT_TOLERANCE_S, HEADER, compute_signature, sign
from recon_pipeline.serving import ServerThread
from recon_pipeline.webhooks.receiver import build_receiver
from recon_pipeline_tests.support.fuzzing import (
    ABSENT,
    any_text,
    deep_nesting,
    fuzz_settings,
    huge_integers,
    json_bytes,
    json_values,
    long_integer,
)
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.postgres import postgres_database
from recon_pipeline_tests.support.webhook_receiver import OLD_SECRET, PATH, SECRET, Receiver, counts

# Room for the deep and long bodies below, still small enough that a few examples reach the 413.
MAX_BODY = 32 * 1024
SIGNATURE_REASONS = {
    "missing_header",
    "malformed_header",
    "no_v1_signature",
    "timestamp_outside_tolerance",
    "no_matching_signature",
}


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def fuzz_receiver(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Receiver]:
    """One receiver on 127.0.0.1 per database for the module, on a real SQLite file or PostgreSQL."""
    with ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path_factory.mktemp('fuzz_webhooks') / 'recon.sqlite'}"
        else:
            url = stack.enter_context(postgres_database())
        engine = make_engine(url)
        stack.callback(engine.dispose)
        migrations.upgrade(engine)
        server = stack.enter_context(
            ServerThread(build_receiver(engine, [SECRET, OLD_SECRET], max_body_bytes=MAX_BODY))
        )
        client = stack.enter_context(loopback_client(base_url=server.base_url, timeout=30))
        yield Receiver(engine, client, server)


# --- strategies: events -------------------------------------------------------------------------------

# Valid ids: printable (letters, digits, punctuation, symbols of any script), at most MAX_ID_LENGTH.
ids = st.text(st.characters(categories=("L", "N", "P", "S")), min_size=1, max_size=40)
_unprintable = st.characters(categories=("Cc", "Cf", "Cs", "Co", "Zl", "Zp", "Zs")).filter(lambda c: c != " ")
invalid_ids = st.one_of(
    json_values.filter(lambda v: not isinstance(v, str)),
    st.just(""),
    st.text("x", min_size=MAX_ID_LENGTH + 1, max_size=MAX_ID_LENGTH + 1),
    st.tuples(ids, _unprintable, ids).map("".join),
)
invalid_created = st.one_of(
    json_values.filter(lambda v: not isinstance(v, int) or isinstance(v, bool)),
    st.integers(max_value=-1),
    st.integers(min_value=MAX_CREATED + 1),
)
stripe_objects = st.builds(
    lambda extra, fields: {**extra, **fields},
    st.dictionaries(any_text, json_values, max_size=3),
    st.fixed_dictionaries(
        {"object": st.sampled_from(["payment_intent", "charge", "refund", "customer"]) | any_text},
        optional={
            "id": ids | json_values,
            "payment_intent": ids | json_values,
            "charge": ids | json_values,
            "amount": huge_integers | json_values,
            "currency": st.sampled_from(["eur", "jpy", "xyz", "€"]) | any_text,
            "metadata": json_values,
        },
    ),
)


@st.composite
def well_formed_events(draw: st.DrawFn) -> dict[str, Any]:
    """A Stripe event the contract accepts, with odd but harmless extra fields anywhere."""
    event = draw(st.dictionaries(any_text, json_values, max_size=3))
    data = draw(st.dictionaries(any_text, json_values, max_size=2))
    event.update(
        {
            "id": draw(ids),
            "object": "event",
            "type": draw(ids),
            "created": draw(st.integers(min_value=0, max_value=MAX_CREATED)),
            "data": {**data, "object": draw(stripe_objects)},
        }
    )
    account = draw(st.sampled_from([ABSENT, None]) | ids)
    event.pop("account", None)
    if account is not ABSENT:
        event["account"] = account
    return event


def _with(event: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    changed = dict(event)
    if value is ABSENT:
        changed.pop(key, None)
    else:
        changed[key] = value
    return changed


@st.composite
def broken_events(draw: st.DrawFn) -> dict[str, Any]:
    """A well-formed event with exactly one thing the contract forbids."""
    event = draw(well_formed_events())
    broken_data = st.one_of(
        json_values.filter(lambda v: not isinstance(v, dict)),
        st.dictionaries(any_text.filter(lambda k: k != "object"), json_values, max_size=3),
        json_values.filter(lambda v: not isinstance(v, dict)).map(lambda v: {"object": v}),
    )
    key, value = draw(
        st.one_of(
            st.tuples(st.sampled_from(["id", "type", "created", "data"]), st.just(ABSENT)),
            st.tuples(st.sampled_from(["id", "type"]), invalid_ids),
            st.tuples(st.just("created"), invalid_created),
            st.tuples(st.just("data"), broken_data),
            st.tuples(st.just("account"), invalid_ids.filter(lambda v: v is not None)),
        )
    )
    return _with(event, key, value)


_EVENT_HEAD = '{"id": "evt_fuzz", "object": "event", "type": "charge.succeeded", "created": 1760000000, '
malformed_bodies = st.one_of(
    st.builds(json_bytes, broken_events(), st.booleans()),
    st.builds(json_bytes, json_values.filter(lambda v: not isinstance(v, dict))),
    st.binary(max_size=200).filter(lambda b: not b.strip().startswith(b"{")),
    # Truncated anywhere (the closing brace is always last), or with a byte that is not UTF-8.
    st.builds(
        lambda e, cut: json_bytes(e)[: max(0, len(json_bytes(e)) - cut)],
        well_formed_events(),
        st.integers(min_value=1, max_value=50),
    ),
    st.builds(
        lambda e, b: json_bytes(e)[:-1] + b + b"}",
        well_formed_events(),
        st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"]),
    ),
    # What Python's json module cannot decode at all: ints past 4300 digits, and nesting past the recursion
    # limit (deep enough for the ~3000 pytest and Hypothesis allow, not just the default 1000).
    st.integers(min_value=8_000, max_value=15_000).map(
        lambda d: (
            f'{_EVENT_HEAD}"data": {{"object": {{"object": "charge", "n": {deep_nesting(d)}}}}}}}'.encode()
        )
    ),
    st.integers(min_value=4_301, max_value=6_000).map(
        lambda n: f'{_EVENT_HEAD}"data": {{"object": {{"amount": {long_integer(n)}}}}}}}'.encode()
    ),
)


# --- strategies: signature headers that must not authenticate -----------------------------------------


def header_bytes(text: str) -> bytes:
    """``text`` as a header value the HTTP client will send: UTF-8 (a lone surrogate as its three bytes),
    control characters replaced, no edge whitespace (h11 refuses those; the server then sees the bytes as
    latin-1, as Starlette decodes them)."""
    encoded = text.encode("utf-8", "surrogatepass")
    raw = bytes(b if b >= 0x20 and b != 0x7F or b == 0x09 else 0x3F for b in encoded)
    return raw.strip(b" \t")


_CERTAIN_REASONS = {
    "none": "missing_header",
    "stale": "timestamp_outside_tolerance",
    "huge_t": "malformed_header",
}


@dataclass(frozen=True)
class Forgery:
    """A Stripe-Signature header that must not verify, drawn independently of the clock and made at send
    time (``now``), so that examples replay identically. ``reason`` is the refusal when it is certain.

    ``parts`` of a forged header: ``t`` (``t=`` now + ``offset``, or ``text`` verbatim when set),
    ``v1:<how>`` (a signature that is wrong in one way) and ``raw:<item>`` (an item sent as is).
    """

    kind: str  # none | garbage | forged | stale | huge_t
    text: str = ""  # the garbage header, or the verbatim t of a forged one
    offset: int = 0  # seconds from now of the signed timestamp
    huge_t: int = 0
    secret: str = SECRET
    parts: tuple[str, ...] = ()

    @property
    def reason(self) -> str | None:
        return _CERTAIN_REASONS.get(self.kind)

    def header_values(self, body: bytes, now: int) -> list[str]:
        if self.kind == "none":
            return []
        if self.kind == "garbage":
            return [self.text]
        if self.kind == "stale":
            return [sign(body, self.secret, now + self.offset)]
        if self.kind == "huge_t":
            return [sign(body, self.secret, self.huge_t)]
        t = now + self.offset
        made = {
            "v1:wrong_secret": compute_signature(body, "whsec_attacker", t),
            "v1:other_body": compute_signature(body + b" ", SECRET, t),
            "v1:next_second": compute_signature(body, SECRET, t + 1),
            "raw:v0_right_signature": "v0=" + compute_signature(body, SECRET, t),
        }
        rendered = {"t": f"t={self.text or t}"}
        return [",".join(rendered.get(p) or made.get(p) or p.partition(":")[2] for p in self.parts)]


_forged_t = st.one_of(
    st.just(""),  # t = now + offset
    huge_integers.map(str),
    st.integers(min_value=4_301, max_value=6_000).map(long_integer),
    st.sampled_from(["now", "1e9", "0x10", "+1760000000", " 1760000000", "1_760_000_000", "١٧٦٠", "１７６"]),
    any_text,
)
_wrong_v1 = st.one_of(
    st.sampled_from(["v1:wrong_secret", "v1:other_body", "v1:next_second"]),
    st.text("0123456789abcdef", min_size=64, max_size=64).map(lambda s: f"raw:v1={s}"),
    any_text.map(lambda s: f"raw:v1={s}"),
)
# Schemes that never authenticate (even carrying the right signature), a second t, odd separators.
_odd_items = st.sampled_from(["raw:v0_right_signature", "raw:t=1", "raw:v2=ab", "raw:", "raw:v1", "raw:="])
forgeries = st.one_of(
    st.builds(Forgery, kind=st.just("none")),
    st.builds(Forgery, kind=st.just("garbage"), text=any_text | st.text(max_size=300)),
    st.builds(
        Forgery,
        kind=st.just("stale"),
        offset=st.integers(min_value=DEFAULT_TOLERANCE_S + 2, max_value=10**9).flatmap(
            lambda age: st.sampled_from([age, -age])
        ),
        secret=st.sampled_from([SECRET, OLD_SECRET]),
    ),
    st.builds(Forgery, kind=st.just("huge_t"), huge_t=st.integers(min_value=10**12, max_value=10**400)),
    st.builds(
        Forgery,
        kind=st.just("forged"),
        text=_forged_t,
        offset=st.integers(min_value=-(10**6), max_value=10**6),
        parts=st.tuples(st.lists(_wrong_v1, max_size=200), st.lists(_odd_items, max_size=3)).flatmap(
            lambda lists: st.permutations(["t", *lists[0], *lists[1]]).map(tuple)
        ),
    ),
)
content_types = st.sampled_from(["application/json", "text/plain"]) | any_text


# --- helpers --------------------------------------------------------------------------------------------


def signed_now(body: bytes, secret: str = SECRET) -> dict[str, str]:
    return {HEADER: sign(body, secret, int(time.time())), "Content-Type": "application/json"}


def stored_rows(receiver: Receiver, event_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    with receiver.engine.connect() as connection:
        events = connection.execute(select(payment_events).where(payment_events.c.event_id == event_id))
        processing = connection.execute(
            select(payment_event_processing).where(payment_event_processing.c.event_id == event_id)
        )
        return [dict(r) for r in events.mappings()], [dict(r) for r in processing.mappings()]


def assert_healthy_and_storing(receiver: Receiver) -> None:
    """The receiver answers /healthz and still stores a fresh event once."""
    assert receiver.client.get("/healthz").status_code == 200
    body = json_bytes(
        {
            "id": f"evt_after_{uuid.uuid4().hex}",
            "type": "charge.succeeded",
            "created": 1,
            "data": {"object": {"object": "charge", "id": "ch_after"}},
        }
    )
    before = counts(receiver.engine)
    response = receiver.client.post(PATH, content=body, headers=signed_now(body))
    assert response.status_code == 200, response.text
    assert counts(receiver.engine) == (before[0] + 1, before[1] + 1)


# --- properties -----------------------------------------------------------------------------------------


@pytest.mark.slow  # Hypothesis: many generated deliveries
def test_a_delivery_that_fails_verification_is_refused_and_stores_nothing(fuzz_receiver: Receiver) -> None:
    @fuzz_settings(max_examples=200)
    @given(
        body=st.one_of(
            st.builds(json_bytes, well_formed_events(), st.booleans()),
            malformed_bodies,
            st.binary(min_size=MAX_BODY - 10, max_size=MAX_BODY + 10),
        ),
        forgery=forgeries,
        content_type=content_types,
    )
    def deliver(body: bytes, forgery: Forgery, content_type: str) -> None:
        values = forgery.header_values(body, int(time.time()))
        headers = [(HEADER.encode(), header_bytes(v)) for v in values]
        headers.append((b"Content-Type", header_bytes(content_type)))
        before = counts(fuzz_receiver.engine)
        response = fuzz_receiver.client.post(PATH, content=body, headers=headers)
        if len(body) > MAX_BODY:
            assert (response.status_code, response.json()) == (413, {"error": "body_too_large"})
        else:
            assert response.status_code == 400, response.text
            reason = forgery.reason
            assert response.json()["error"] in ({reason} if reason else SIGNATURE_REASONS)
        assert counts(fuzz_receiver.engine) == before

    deliver()
    assert_healthy_and_storing(fuzz_receiver)


@pytest.mark.parametrize(
    "header",
    [
        "t=" + long_integer(4_301) + ",v1=00",  # int() refuses more than 4300 digits: was a 500
        "t=" + "9" * 400 + ",v1=00",
        "t=-1760000000,v1=00",
        "t=" + "٣" * 10 + ",v1=00",
        ",".join(["t=1760000000", *["v1=" + "0" * 64] * 500]),
    ],
)
def test_odd_timestamps_and_many_signatures_are_refused(fuzz_receiver: Receiver, header: str) -> None:
    """Fixed regressions beside the drawn examples (the first header crashed parse_header)."""
    before = counts(fuzz_receiver.engine)
    body = json_bytes({"id": "evt_odd", "type": "t", "created": 1, "data": {"object": {}}})
    response = fuzz_receiver.client.post(PATH, content=body, headers={HEADER.encode(): header_bytes(header)})
    assert response.status_code == 400
    assert response.json()["error"] in {"malformed_header", "no_matching_signature"}
    assert counts(fuzz_receiver.engine) == before


def test_an_authentic_delivery_with_a_huge_timestamp_is_refused(fuzz_receiver: Receiver) -> None:
    """Validly signed with t beyond float range (10**309) or Python's 4300-digit int limit: was a 500."""
    body = json_bytes({"id": "evt_huge_t", "type": "t", "created": 1, "data": {"object": {}}})
    for t in (10**309, 10**4000):
        before = counts(fuzz_receiver.engine)
        response = fuzz_receiver.client.post(PATH, content=body, headers={HEADER: sign(body, SECRET, t)})
        assert (response.status_code, response.json()) == (400, {"error": "malformed_header"})
        assert counts(fuzz_receiver.engine) == before


@pytest.mark.slow  # Hypothesis: many generated deliveries
def test_a_signed_body_that_is_not_a_well_formed_event_is_400_and_stores_nothing(
    fuzz_receiver: Receiver,
) -> None:
    @fuzz_settings(max_examples=250)
    @given(body=malformed_bodies, secret=st.sampled_from([SECRET, OLD_SECRET]))
    @example(
        body=f'{_EVENT_HEAD}"data": {{"object": {{"n": {deep_nesting(10_000)}}}}}}}'.encode(), secret=SECRET
    )
    @example(
        body=f'{_EVENT_HEAD}"data": {{"object": {{"n": {long_integer(4_301)}}}}}}}'.encode(), secret=SECRET
    )
    @example(
        body=f'{_EVENT_HEAD}"account": "acct_\\u0000", "data": {{"object": {{}}}}}}'.encode(), secret=SECRET
    )
    @example(body=f'{_EVENT_HEAD}"account": "\\ud800", "data": {{"object": {{}}}}}}'.encode(), secret=SECRET)
    def deliver(body: bytes, secret: str) -> None:
        assert len(body) <= MAX_BODY
        before = counts(fuzz_receiver.engine)
        response = fuzz_receiver.client.post(PATH, content=body, headers=signed_now(body, secret))
        assert (response.status_code, response.json()) == (400, {"error": "malformed_event"}), body[:300]
        assert counts(fuzz_receiver.engine) == before

    deliver()
    assert_healthy_and_storing(fuzz_receiver)


@pytest.mark.slow  # Hypothesis: many generated deliveries
def test_a_signed_well_formed_event_is_stored_exactly_once(fuzz_receiver: Receiver) -> None:
    @fuzz_settings(max_examples=150)
    @given(event=well_formed_events(), ensure_ascii=st.booleans(), indent=st.sampled_from([None, 2]))
    @example(
        event={
            "id": "evt",
            "type": "charge.refunded",
            "created": MAX_CREATED,
            "account": "acct_ü",
            "data": {"object": {"object": "refund", "charge": "ch_1", "amount": 2**64, "x": [10.5, "1000"]}},
            "\ud800": "\udfff",
        },
        ensure_ascii=True,
        indent=None,
    )
    def deliver(event: dict[str, Any], ensure_ascii: bool, indent: int | None) -> None:
        event = {**event, "id": f"{event['id']}_{uuid.uuid4().hex}"}  # new to the shared database
        body = json_bytes(event, ensure_ascii, indent)
        before = counts(fuzz_receiver.engine)
        response = fuzz_receiver.client.post(PATH, content=body, headers=signed_now(body))
        assert (response.status_code, response.json()) == (200, {"received": True, "duplicate": False})
        assert counts(fuzz_receiver.engine) == (before[0] + 1, before[1] + 1)
        again = fuzz_receiver.client.post(PATH, content=body, headers=signed_now(body, OLD_SECRET))
        assert (again.status_code, again.json()) == (200, {"received": True, "duplicate": True})
        stored, processing = stored_rows(fuzz_receiver, event["id"])
        assert len(stored) == 1 and len(processing) == 1
        assert stored[0]["payload"].encode() == body
        assert stored[0]["event_type"] == event["type"]
        assert (processing[0]["status"], processing[0]["attempts"]) == ("pending", 0)
        assert processing[0]["account"] == event.get("account")
        assert counts(fuzz_receiver.engine) == (before[0] + 1, before[1] + 1)

    deliver()
    assert_healthy_and_storing(fuzz_receiver)
