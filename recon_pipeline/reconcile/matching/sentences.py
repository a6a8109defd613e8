"""What an analyst reads about a match: the keys that agree, those that differ, and one sentence saying why.

Runs per match and per held-back group only, on rows already read out of the frames. Amounts are in major
units (``format_minor``): the analyst compares them with the folio and the provider's dashboard.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from recon_pipeline.frames import present
from recon_pipeline.money import minor_unit_exponent
from recon_pipeline.reconcile.matching.policy import CARD_WINDOW, CONFIRMED, PERSON, SUGGESTED
from recon_pipeline.reconcile.matching.tiers import reference_tokens

Row = Any  # a namedtuple of sides.record_keys / sides.entry_keys columns


def figure(record: Row, currency: str) -> int | None:
    """The record's amount in ``currency`` (its presentment or, for a conversion, settlement figure)."""
    if record.currency == currency:
        return int(record.amount)
    if record.converted and record.settlement_currency == currency:
        return int(record.settlement_amount)
    return None


def listed(words: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} and {words[-1]}"


def _card(brand: Any, last4: Any) -> str:
    return " ".join(str(part) for part in (brand, last4) if present(part))


@dataclass
class Keys:
    """Words for the keys the two sides agree on, differ on, and the one a side does not know."""

    agree: list[str] = field(default_factory=list)
    differ: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def compare(records: Sequence[Row], absent: Sequence[str], entries: Sequence[Row], rule: str) -> Keys:
    """The keys of a pairing as words: ``booking B-17``, ``amount 120.00 EUR vs 115.00 EUR``..."""
    if len(records) == 1 and len(entries) == 1 and not absent:
        return _pair_keys(records[0], entries[0], rule)
    keys = Keys()
    if not entries:
        return keys
    currency = entries[0].currency
    _compare_set(keys, "booking", [r.booking for r in records], [e.booking for e in entries])
    figures = [figure(record, currency) for record in records]
    posted = sum(int(entry.amount) for entry in entries)
    if None in figures:
        theirs = "/".join(sorted({r.currency for r in records}))
        keys.differ.append(f"currency {theirs} vs {currency}")
    elif not absent:
        total = sum(f for f in figures if f is not None)
        if total == posted:
            keys.agree.append(f"amount {money(total, currency)}")
        else:
            keys.differ.append(f"amount {money(total, currency)} vs {money(posted, currency)}")
    _compare_cards(keys, records, entries)
    _compare_set(keys, "approval code", [r.approval for r in records], [e.approval for e in entries])
    named = _named_in_reference(records, entries)
    if named:
        keys.agree.append(f"reference naming {listed(named)}")
    if rule == CARD_WINDOW and len(records) == 1 and len(entries) == 1:
        minutes = abs(int(entries[0].posted) - int(records[0].created)) // 60_000_000_000
        keys.agree.append(f"time ({minutes} min apart)")
        if "card" not in " ".join(keys.agree + keys.differ):
            keys.unknown.append("the card")
    return keys


def _pair_keys(record: Row, entry: Row, rule: str) -> Keys:
    """``compare`` of one record and one entry: the same words, at a fraction of the cost (a night of
    10^5 unkeyed entries states 10^5 of these)."""
    keys = Keys()
    _compare_one(keys, "booking", record.booking, entry.booking)
    currency = entry.currency
    value = figure(record, currency)
    if value is None:
        keys.differ.append(f"currency {record.currency} vs {currency}")
    elif value == entry.amount:
        keys.agree.append(f"amount {money(value, currency)}")
    else:
        keys.differ.append(f"amount {money(value, currency)} vs {money(int(entry.amount), currency)}")
    if (record.last4 is not None or record.brand is not None) and (
        entry.last4 is not None or entry.brand is not None
    ):
        _compare_cards(keys, [record], [entry])
    _compare_one(keys, "approval code", record.approval, entry.approval)
    if entry.reference is not None:
        named = _named_in_reference([record], [entry])
        if named:
            keys.agree.append(f"reference naming {listed(named)}")
    if rule == CARD_WINDOW:
        minutes = abs(int(entry.posted) - int(record.created)) // 60_000_000_000
        keys.agree.append(f"time ({minutes} min apart)")
        if "card" not in " ".join(keys.agree + keys.differ):
            keys.unknown.append("the card")
    return keys


def _compare_one(keys: Keys, name: str, theirs: Any, ours: Any) -> None:
    if theirs is None or ours is None:
        return
    if theirs == ours:
        keys.agree.append(f"{name} {theirs}")
    else:
        keys.differ.append(f"{name} {theirs} vs {ours}")


@functools.cache
def _exponent(currency: str) -> int:
    return minor_unit_exponent(currency)


def money(amount: int, currency: str) -> str:
    """``format_minor``, its currency's exponent looked up once per currency."""
    exponent = _exponent(currency)
    major = abs(int(amount)) / (10**exponent)
    sign = "-" if amount < 0 else ""
    return f"{sign}{major:,.{exponent}f} {currency.upper()}"


def _compare_set(keys: Keys, name: str, theirs: Sequence[Any], ours: Sequence[Any]) -> None:
    left = sorted({str(value) for value in theirs if present(value)})
    right = sorted({str(value) for value in ours if present(value)})
    if not left or not right:
        return
    if left == right and len(left) == 1:
        keys.agree.append(f"{name} {left[0]}")
    elif left != right:
        keys.differ.append(f"{name} {'/'.join(left)} vs {'/'.join(right)}")


def _compare_cards(keys: Keys, records: Sequence[Row], entries: Sequence[Row]) -> None:
    theirs = [(r.brand, r.last4) for r in records if present(r.last4) or present(r.brand)]
    ours = [(e.brand, e.last4) for e in entries if present(e.last4) or present(e.brand)]
    if not theirs or not ours:
        return
    differs = any(
        (present(b1) and present(b2) and b1 != b2) or (present(l1) and present(l2) and l1 != l2)
        for b1, l1 in theirs
        for b2, l2 in ours
    )
    comparable = any(present(l1) and present(l2) for _, l1 in theirs for _, l2 in ours)
    left = "/".join(sorted({_card(*card) for card in theirs}))
    right = "/".join(sorted({_card(*card) for card in ours}))
    if differs:
        keys.differ.append(f"card {left} vs {right}")
    elif comparable:
        keys.agree.append(f"card {left if len(left) >= len(right) else right}")


def _named_in_reference(records: Sequence[Row], entries: Sequence[Row]) -> list[str]:
    text = " ".join(str(e.reference) for e in entries if present(e.reference))
    if not text:
        return []
    tokens = set(reference_tokens(text))
    ids = [value for r in records for value in (r.record_id, r.charge_id, r.intent_id) if present(value)]
    return list(dict.fromkeys(value for value in ids if value in tokens))


def _entries_phrase(entries: Sequence[Row]) -> str:
    if len(entries) == 1:
        entry = entries[0]
        return f"ledger entry {entry.entry_id} of {money(int(entry.amount), entry.currency)}"
    amounts = " + ".join(money(int(e.amount), e.currency) for e in entries)
    return f"ledger entries {listed([str(e.entry_id) for e in entries])} ({amounts})"


def _records_phrase(records: Sequence[Row], absent: Sequence[str], kind: str) -> str:
    ids = [str(r.record_id) for r in records] + [f"{rid} (not in this night's pull)" for rid in absent]
    noun = f"provider {kind}" if len(ids) == 1 else f"provider {kind}s"
    if len(records) == 1 and not absent:
        return f"{noun} {ids[0]} of {money(int(records[0].amount), records[0].currency)}"
    if records and not absent:
        amounts = " + ".join(money(int(r.amount), r.currency) for r in records)
        return f"{noun} {listed(ids)} ({amounts})"
    return f"{noun} {listed(ids)}"


def _clause(keys: Keys) -> str:
    parts = []
    if keys.agree:
        parts.append(f"{listed(keys.agree)} {'agrees' if len(keys.agree) == 1 else 'agree'}")
    if keys.differ:
        parts.append(f"{listed(keys.differ)} {'differs' if len(keys.differ) == 1 else 'differ'}")
    if keys.unknown:
        parts.append(f"{listed(keys.unknown)} is unknown on a side")
    return ": " + ", ".join(parts) if parts else ""


@dataclass(frozen=True)
class Said:
    """A pairing as an analyst reads it."""

    keys_agree: str
    keys_differ: str
    detail: str


def say_match(
    records: Sequence[Row],
    absent: Sequence[str],
    entries: Sequence[Row],
    kind: str,
    rule: str,
    score: float,
    status: str,
    threshold: float,
    *,
    earlier: bool = False,
) -> Said:
    """A match, confirmed match or suggestion: what pairs with what, by which rule, and the keys."""
    keys = compare(records, absent, entries, rule)
    them, us = _records_phrase(records, absent, kind), _entries_phrase(entries)
    verb = "books" if len(entries) == 1 else "together book"
    clause = _clause(keys)
    if status == CONFIRMED or rule == PERSON:
        detail = f"{us} {verb} {them}, as a person confirmed{clause}"
    elif status == SUGGESTED:
        detail = (
            f"{us} may book {them} by {rule} (score {score:.2f}, below the threshold {threshold:.2f}, so "
            f"nothing is proposed until a person confirms it){clause}"
        )
    elif earlier:
        detail = f"{us} {verb} {them} by {rule}, as an earlier run matched them (score {score:.2f}){clause}"
    else:
        detail = f"{us} {verb} {them} by {rule} (score {score:.2f}){clause}"
    return Said(", ".join(keys.agree), ", ".join(keys.differ), _sentence(detail))


def say_held(record_ids: Sequence[str], entry_ids: Sequence[str], kind: str) -> Said:
    """A person's match part of which lies outside the night's window: its rows here are held back."""
    noun = "ledger entry" if len(entry_ids) == 1 else "ledger entries"
    them = f"provider {kind}" if len(record_ids) == 1 else f"provider {kind}s"
    return Said(
        "",
        "",
        _sentence(
            f"a person paired {noun} {listed(list(entry_ids))} with {them} {listed(list(record_ids))}; "
            "part of it lies outside this night's window, so its rows here are held back from the diff"
        ),
    )


def say_ambiguity(
    records: Sequence[Row],
    entries: Sequence[Row],
    held_records: Sequence[Row],
    held_entries: Sequence[Row],
    kind: str,
    rules: Sequence[str],
) -> str:
    """Several equally good candidates: who they are, what stays unpaired, and that nothing is proposed."""
    sides = []
    if records:
        noun = f"provider {kind}" if len(records) == 1 else f"provider {kind}s"
        sides.append(f"{noun} {listed([_with_amount(r.record_id, r) for r in records])}")
    if entries:
        noun = "ledger entry" if len(entries) == 1 else "ledger entries"
        sides.append(f"{noun} {listed([_with_amount(e.entry_id, e) for e in entries])}")
    held = [str(r.record_id) for r in held_records] + [str(e.entry_id) for e in held_entries]
    bookings = sorted(
        {str(b) for b in [*(r.booking for r in records), *(e.booking for e in entries)] if present(b)}
    )
    within = f" of booking {bookings[0]}" if len(bookings) == 1 else ""
    stay = "stays" if len(held) == 1 else "stay"
    them = "it" if len(held) == 1 else "them"
    return _sentence(
        f"{' and '.join(sides)}{within} are equally good candidates by {'/'.join(rules)}: {listed(held)} "
        f"{stay} unpaired, and nothing is proposed until a person pairs {them} by hand"
    )


def _with_amount(name: Any, row: Row) -> str:
    return f"{name} ({money(int(row.amount), row.currency)})"


def _sentence(text: str) -> str:
    """As the diff's findings say theirs: one clause, lower case, no full stop."""
    return text
