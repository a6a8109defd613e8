"""Reading provider JSON safely, whatever the provider: validated fields, the frame, a bounded fan-out.

Stripe and Razorpay send different shapes but fail the same ways (a missing id, an amount as a string, a
bad currency), and a wrong value must never reach the diff as a plausible record. So every adapter reads
fields through these helpers, which raise ``ProviderDataError`` naming the record and the field.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Executor, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from threading import Event
from typing import Any, TypeVar

import pandas as pd

from recon_pipeline.frames import typed_frame
from recon_pipeline.money import MAX_AMOUNT_MINOR, normalize_currency
from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.http import ProviderHttp
from recon_pipeline.providers.records import (
    OPTIONAL_PROVIDER_RECORD_COLUMNS,
    PROVIDER_RECORD_COLUMNS,
    empty_provider_records,
)

ProviderObject = dict[str, Any]
Row = dict[str, Any]
T = TypeVar("T")

# datetime64[ns] ends in 2262; no provider record is created after 2200 or before 1970.
MAX_CREATED_S = 7_258_118_400  # 2200-01-01T00:00:00Z


@dataclass(frozen=True)
class PropertyAccount:
    """Where a property's records live at the provider: a connected account, or the platform (None).

    ``account_properties``: every property on the same ``provider_account`` (this one included), sorted;
    empty when unknown, which counts as alone. Attribution (``attribution.py``) reads it.

    ``pulled_for``: the properties one shared pull serves (a batch's properties on this account, this
    one first): the pull keeps every payment any of them claims, and attribution splits it per property.
    Empty: the pull serves ``property_id`` alone.
    """

    property_id: str
    provider_account: str | None = None
    account_properties: tuple[str, ...] = ()
    pulled_for: tuple[str, ...] = ()

    def serves(self, claim: str) -> bool:
        """Whether a payment claimed by ``claim`` belongs in a pull made for this account scope."""
        return claim == self.property_id or claim in self.pulled_for


def _name(obj: ProviderObject) -> Any:
    """How an error names the object: its ``id``, or for an entry about another object (a settlement recon
    item) that object's ``entity_id``."""
    return obj.get("id", obj.get("entity_id"))


def field_value(obj: ProviderObject, name: str, types: type | tuple[type, ...], what: str) -> Any:
    value = obj.get(name)
    if type(value) is types:  # the common case, a bool asked for as a bool included: one comparison
        return value
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _as_tuple(types)):
        expected = " or ".join(t.__name__ for t in _as_tuple(types))
        raise ProviderDataError(f"{what} {_name(obj)!r}: field {name!r} is {value!r}, expected {expected}")
    return value


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def amount_field(obj: ProviderObject, name: str, what: str) -> int:
    """A non-negative amount in minor units within the contract's bound (the same bound as the ledger's):
    a larger one is a corrupt response, and would make the diff propose a correction as absurd."""
    value: int = field_value(obj, name, int, what)
    if value < 0:
        raise ProviderDataError(f"{what} {_name(obj)!r}: field {name!r} is negative ({value})")
    if value > MAX_AMOUNT_MINOR:
        raise ProviderDataError(
            f"{what} {_name(obj)!r}: field {name!r} is {str(value)[:40]}, beyond the contract's "
            f"{MAX_AMOUNT_MINOR:,} minor units"
        )
    return value


def signed_amount_field(obj: ProviderObject, name: str, what: str) -> int:
    """An amount in minor units that carries its direction (a balance transaction's ``amount`` or ``fee``:
    negative when money leaves the balance or a fee is returned), within the contract's bound either way."""
    value: int = field_value(obj, name, int, what)
    if abs(value) > MAX_AMOUNT_MINOR:
        raise ProviderDataError(
            f"{what} {_name(obj)!r}: field {name!r} is {str(value)[:40]}, beyond the contract's "
            f"{MAX_AMOUNT_MINOR:,} minor units"
        )
    return value


def currency_field(obj: ProviderObject, what: str) -> str:
    raw: str = field_value(obj, "currency", str, what)
    try:
        return normalize_currency(raw)
    except ValueError as error:
        raise ProviderDataError(f"{what} {_name(obj)!r}: field 'currency': {error}") from None


def id_field(obj: ProviderObject, name: str, what: str) -> str:
    """A required id: a non-empty printable string. A NUL or a lone surrogate would otherwise fail far from
    the response that carried it (PostgreSQL refuses NUL in text, a by-id URL cannot encode a surrogate)."""
    value: str = field_value(obj, name, str, what)
    if not value or not value.isprintable():
        raise ProviderDataError(f"{what} {_name(obj)!r}: field {name!r} is {value!r}, not a printable id")
    return value


def optional_id_field(obj: ProviderObject, name: str, what: str) -> str | None:
    """An id that may be missing (absent, null or empty: None); anything else must be a valid id."""
    if obj.get(name) is None or obj.get(name) == "":
        return None
    return id_field(obj, name, what)


def record_id(obj: ProviderObject, what: str) -> str:
    return id_field(obj, "id", what)


def created_at_field(obj: ProviderObject, what: str, name: str = "created") -> datetime:
    value: int = field_value(obj, name, int, what)
    if not 0 <= value < MAX_CREATED_S:  # fromtimestamp or the frame's datetime64[ns] would raise
        raise ProviderDataError(f"{what} {_name(obj)!r}: field {name!r} is {value}, not a unix time")
    return datetime.fromtimestamp(value, tz=UTC)


def metadata_field(obj: ProviderObject, what: str, name: str = "metadata") -> dict[str, Any]:
    metadata = obj.get(name)
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise ProviderDataError(f"{what} {_name(obj)!r}: field {name!r} is {metadata!r}")
    return metadata


def records_frame(rows: Sequence[Row], distinct: bool = False) -> pd.DataFrame:
    """The contract frame of ``rows`` (exact dtypes), ordered by (created_at, record id, kind). ``distinct``:
    without a row whose every column repeats an earlier one's (one record reached by two ids), as the
    frame's ``drop_duplicates`` would leave it out, compared in plain Python at a fraction of its cost."""
    if not rows:
        return empty_provider_records()
    ordered = sorted(rows, key=lambda row: (row["created_at"], row["provider_record_id"], row["kind"]))
    columns = {
        name: [row.get(name) if name in OPTIONAL_PROVIDER_RECORD_COLUMNS else row[name] for row in ordered]
        for name in PROVIDER_RECORD_COLUMNS
    }
    if distinct:
        first: dict[tuple[Any, ...], int] = {}
        for at, values in enumerate(zip(*columns.values(), strict=True)):
            first.setdefault(values, at)
        columns = {name: [values[at] for at in first.values()] for name, values in columns.items()}
    return typed_frame(columns, PROVIDER_RECORD_COLUMNS, len(columns["kind"]))


def gather(
    tasks: Sequence[Callable[[], T]],
    max_workers: int,
    abort: Event | None = None,
    pool: Executor | None = None,
) -> list[T]:
    """Run tasks on a pool and return their results in order; on the first failure, set ``abort`` (so that
    multi-request tasks stop at their next request), cancel what has not started, and raise that failure
    once the started ones have ended. ``pool``: threads that outlive the call (a client's ``workers``),
    else a pool of ``max_workers`` of its own; a task must never wait for another task of its pool."""
    if pool is not None:
        return _gathered(pool, tasks, abort)
    with ThreadPoolExecutor(max_workers=max_workers) as own:
        return _gathered(own, tasks, abort)


def _gathered(pool: Executor, tasks: Sequence[Callable[[], T]], abort: Event | None) -> list[T]:
    futures = [pool.submit(task) for task in tasks]
    done, _ = wait(futures, return_when=FIRST_EXCEPTION)
    failure = next((f.exception() for f in futures if f in done and f.exception() is not None), None)
    if failure is not None:
        if abort is not None:
            abort.set()
        for future in futures:
            future.cancel()
        wait(futures)  # as a pool of their own would on its way out
        raise failure
    return [future.result() for future in futures]


def fetch_each(
    object_ids: Sequence[str], fetch_one: Callable[[str], ProviderObject | None], http: ProviderHttp
) -> dict[str, ProviderObject | None]:
    """``fetch_one`` (one request of ``http``) per id, concurrently on the client's threads (bounded by its
    concurrency), None for an unknown id; the requests' rate slots are reserved at once."""
    if not object_ids:
        return {}
    http.reserve_slots(len(object_ids))
    results = gather(
        [functools.partial(fetch_one, object_id) for object_id in object_ids],
        max_workers=min(len(object_ids), http.max_concurrency),
        pool=http.workers,
    )
    return dict(zip(object_ids, results, strict=True))


def unix_seconds(moment: datetime) -> int:
    """A timezone-aware instant as unix seconds, rounded up (``created`` is whole seconds, so
    ``created >= t`` is ``created >= ceil(t)`` and ``created < t`` is ``created < ceil(t)``)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"window bound must be timezone-aware: {moment!r}")
    return math.ceil(moment.timestamp())
