"""The simulator's folios and charges, and the record of every idempotency key it has answered.

Thread-safe: the server's event loop writes while a test or benchmark thread reads the counters.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StoredCharge:
    """One posted charge and the request body that created it (the idempotency record)."""

    charge_id: str
    folio_id: str
    body: dict[str, Any]


class ChargeStore:
    """Folios (opened by their first charge, as an external day folio is) and charges by idempotency key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[str, StoredCharge] = {}
        self._folios: dict[str, list[StoredCharge]] = {}
        self._unkeyed = 0
        self._duplicates_refused = 0

    def add(self, folio_id: str, key: str | None, body: dict[str, Any]) -> tuple[StoredCharge, bool]:
        """Store a charge unless ``key`` was seen; returns the charge under the key and whether it is new.

        A charge without a key is always new (Apaleo's header is optional; nothing can recognise a repeat)."""
        with self._lock:
            if key is not None and key in self._by_key:
                self._duplicates_refused += 1
                return self._by_key[key], False
            charges = self._folios.setdefault(folio_id, [])
            charge = StoredCharge(f"{folio_id}-{len(charges) + 1}", folio_id, body)
            charges.append(charge)
            if key is None:
                self._unkeyed += 1
            else:
                self._by_key[key] = charge
            return charge, True

    def previous(self, key: str) -> StoredCharge | None:
        with self._lock:
            return self._by_key.get(key)

    def refuse_duplicate(self) -> None:
        """Count a repeated key answered without storing (a 409)."""
        with self._lock:
            self._duplicates_refused += 1

    def folio(self, folio_id: str) -> list[StoredCharge] | None:
        with self._lock:
            charges = self._folios.get(folio_id)
            return None if charges is None else list(charges)

    def folio_currency(self, folio_id: str) -> str | None:
        """The currency of the folio's first charge (a folio books one currency, the property's)."""
        with self._lock:
            charges = self._folios.get(folio_id)
            return str(charges[0].body["amount"]["currency"]) if charges else None

    def counts(self) -> dict[str, int]:
        """``postings_stored``: charges held; ``duplicates_refused``: repeated keys that stored nothing."""
        with self._lock:
            return {
                "postings_stored": sum(len(charges) for charges in self._folios.values()),
                "duplicates_refused": self._duplicates_refused,
            }
