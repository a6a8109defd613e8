"""The matches frame's columns: one row per match or suggestion the matcher found (not exact-id ones).

``match_key`` is stable across runs, from the sides only: ``<sorted record ids joined by +>=<sorted entry
ids joined by +>``; ``provider_record_ids`` / ``ledger_entry_ids``: the ids joined by a single space;
``status``: matched (score at or above the threshold), suggested (below), confirmed (rule person);
``keys_agree`` / ``keys_differ``: words an analyst reads ("booking B-17, amount 120.00 EUR, card visa 4242").
"""

from __future__ import annotations

MATCH_COLUMNS = (
    "match_key",
    "rule",
    "score",
    "status",
    "kind",
    "provider_record_ids",
    "ledger_entry_ids",
    "booking_id",
    "provider_amount_minor",
    "ledger_amount_minor",
    "currency",
    "keys_agree",
    "keys_differ",
    "detail",
)
