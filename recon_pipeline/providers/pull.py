"""The windowed pull, written once for every provider that lists payments and refunds by creation time.

A provider client says how to read one page and how its records look (``RecordShape``); this module owns
what must be the same for all of them, because each is a correctness rule of the frame:

- the window ``[start, end)`` in whole unix seconds, never empty;
- a list is read to its end or not at all: a page that repeats a record (a cursor or ``skip`` the provider
  ignores, a list that shifted mid-pull) fails at once, as do more than ``max_pages`` pages, and a pull
  aborted by a sibling list's failure stops at its next page;
- payments are parsed only when they name no other property (``attribution.claimable``);
- a refund follows its payment's claim, and a payment created in an earlier night is fetched by id; a
  refund whose payment the provider does not know is a data error, never a dropped row.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from recon_pipeline.providers.attribution import claimable
from recon_pipeline.providers.errors import IncompletePullError, PagingError, ProviderDataError
from recon_pipeline.providers.objects import PropertyAccount, ProviderObject, Row, id_field, unix_seconds

Fetched = Mapping[str, ProviderObject | None]  # id -> object, None when the provider does not know it


@dataclass(frozen=True)
class Page:
    """One page of a list: its items (not yet validated) and whether another page follows."""

    items: list[object]
    more: bool


@dataclass(frozen=True)
class RecordShape:
    """How one provider's payments and refunds read: the payment a refund belongs to, the property a
    payment claims, and the rows of each (``claim`` is the payment's claim, None when it names none)."""

    refund_payment_id: Callable[[ProviderObject], str]
    claim_of: Callable[[ProviderObject], str | None]
    payment_rows: Callable[[ProviderObject, str | None], list[Row]]
    refund_row: Callable[[ProviderObject, ProviderObject, str | None], Row]


def window_seconds(window_start: datetime, window_end: datetime) -> tuple[int, int]:
    """``[window_start, window_end)`` as unix seconds ``(gte, lt)``; an empty window is a ValueError."""
    gte, lt = unix_seconds(window_start), unix_seconds(window_end)
    if gte >= lt:
        raise ValueError(f"empty window [{window_start}, {window_end})")
    return gte, lt


def pull_name(account: PropertyAccount, window_start: datetime, window_end: datetime) -> str:
    """How an incomplete pull names what failed."""
    return f"pull of {account.property_id} [{window_start.isoformat()}, {window_end.isoformat()})"


def list_all(
    path: str,
    read_page: Callable[[int, ProviderObject | None], Page],
    abort: threading.Event,
    max_pages: int,
    id_name: str = "id",
) -> list[ProviderObject]:
    """Every item of a list, page by page: ``read_page(page_number, last item of the previous page)``.

    Items are told apart by ``id_name``; a record that comes back fails with PagingError at once, and so
    does a list still going after ``max_pages`` pages."""
    records: list[ProviderObject] = []
    seen: set[str] = set()
    last: ProviderObject | None = None
    for page_number in range(max_pages):
        if abort.is_set():
            raise IncompletePullError(f"{path}: pull aborted")
        page = read_page(page_number, last)
        for record in page.items:
            if not isinstance(record, dict):
                raise ProviderDataError(f"{path}: list item is not an object: {record!r}")
            object_id = id_field(record, id_name, path)
            if object_id in seen:
                raise PagingError(
                    f"{path}: record {object_id!r} returned twice on page {page_number + 1}: the pages "
                    "repeat or a record created mid-pull shifted them"
                )
            seen.add(object_id)
            records.append(record)
        if not page.more:
            return records
        last = records[-1]
    raise PagingError(f"{path}: more than {max_pages} pages, the list does not end")


def claimed_payment_rows(
    shape: RecordShape, account: PropertyAccount, payments: Sequence[ProviderObject]
) -> list[Row]:
    """Rows of the payments naming no other property, each with its claim."""
    return [
        row
        for payment in payments
        if claimable(claim := shape.claim_of(payment), account)
        for row in shape.payment_rows(payment, claim)
    ]


def claimed_refund_rows(
    shape: RecordShape,
    account: PropertyAccount,
    refunds: Sequence[ProviderObject],
    known_payments: Fetched,
    fetch_payments: Callable[[list[str]], Fetched],
) -> list[Row]:
    """Rows of the refunds whose payment names no other property, with that payment's claim; payments not
    in ``known_payments`` (created in an earlier night) are fetched by id."""
    missing = sorted({shape.refund_payment_id(r) for r in refunds} - known_payments.keys())
    payments = {**known_payments, **fetch_payments(missing)}
    rows = []
    for refund in refunds:
        payment_id = shape.refund_payment_id(refund)
        payment = payments[payment_id]
        if payment is None:
            raise ProviderDataError(f"refund {refund.get('id')!r}: its payment {payment_id!r} is unknown")
        if claimable(claim := shape.claim_of(payment), account):
            rows.append(shape.refund_row(refund, payment, claim))
    return rows
