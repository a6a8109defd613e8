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


PAIR_RECORD_FIELDS = (
    "record_id",
    "charge_id",
    "intent_id",
    "kind",
    "booking",
    "brand",
    "last4",
    "approval",
    "created",
    "currency",
    "amount",
    "converted",
    "settlement_currency",
    "settlement_amount",
)
PAIR_ENTRY_FIELDS = (
    "entry_id",
    "booking",
    "brand",
    "last4",
    "approval",
    "reference",
    "posted",
    "currency",
    "amount",
)


def state_pairs(
    records: Sequence[Sequence[Any]],
    entries: Sequence[Sequence[Any]],
    rules: Sequence[str],
    scores: Sequence[float],
    statuses: Sequence[str],
    earlier: Sequence[bool],
    threshold: float,
) -> tuple[list[str], list[str], list[str]]:
    """keys_agree, keys_differ and detail of one-to-one pairs, in one lean pass (a night of 10^5 unkeyed
    entries states 10^5 of these). ``records``/``entries``: columns of PAIR_RECORD_FIELDS /
    PAIR_ENTRY_FIELDS, aligned with the rules."""
    agreed: list[str] = []
    differed: list[str] = []
    details: list[str] = []
    for record, entry, rule, score, status, before in zip(
        zip(*records, strict=True), zip(*entries, strict=True), rules, scores, statuses, earlier, strict=True
    ):
        rid, charge, intent, kind, booking, brand, last4, approval, created, currency, amount = record[:11]
        converted, settles, settled = record[11:]
        eid, e_booking, e_brand, e_last4, e_approval, reference, posted, e_currency, e_amount = entry
        agree: list[str] = []
        differ: list[str] = []
        if booking is not None and e_booking is not None:
            if booking == e_booking:
                agree.append(f"booking {booking}")
            else:
                differ.append(f"booking {booking} vs {e_booking}")
        if currency == e_currency:
            value: int | None = amount
        elif converted and settles == e_currency:
            value = settled
        else:
            value = None
        posted_as = money(e_amount, e_currency)  # each amount formatted once: most pairs agree on it
        paid_as = posted_as if amount == e_amount and currency == e_currency else money(amount, currency)
        if value is None:
            differ.append(f"currency {currency} vs {e_currency}")
        elif value == e_amount:
            agree.append(f"amount {posted_as}")
        else:
            figure_as = paid_as if currency == e_currency else money(value, e_currency)
            differ.append(f"amount {figure_as} vs {posted_as}")
        if (last4 is not None or brand is not None) and (e_last4 is not None or e_brand is not None):
            theirs, ours = _card(brand, last4), _card(e_brand, e_last4)
            if (brand is not None and e_brand is not None and brand != e_brand) or (
                last4 is not None and e_last4 is not None and last4 != e_last4
            ):
                differ.append(f"card {theirs} vs {ours}")
            elif last4 is not None and e_last4 is not None:
                agree.append(f"card {theirs if len(theirs) >= len(ours) else ours}")
        if approval is not None and e_approval is not None:
            if approval == e_approval:
                agree.append(f"approval code {approval}")
            else:
                differ.append(f"approval code {approval} vs {e_approval}")
        unknown = []
        if reference is not None:
            tokens = set(reference_tokens(str(reference)))
            named = list(dict.fromkeys(v for v in (rid, charge, intent) if v is not None and v in tokens))
            if named:
                agree.append(f"reference naming {listed(named)}")
        if rule == CARD_WINDOW:
            agree.append(f"time ({abs(int(posted) - int(created)) // 60_000_000_000} min apart)")
            if "card" not in " ".join(agree + differ):
                unknown.append("the card")
        clause = _clause(Keys(agree, differ, unknown))
        us = f"ledger entry {eid} of {posted_as}"
        them = f"provider {kind} {rid} of {paid_as}"
        agreed.append(", ".join(agree))
        differed.append(", ".join(differ))
        details.append(_detail(us, "books", them, rule, score, status, threshold, before, clause))
    return agreed, differed, details


def _detail(
    us: str,
    verb: str,
    them: str,
    rule: str,
    score: float,
    status: str,
    threshold: float,
    earlier: bool,
    clause: str,
) -> str:
    if status == CONFIRMED or rule == PERSON:
        return f"{us} {verb} {them}, as a person confirmed{clause}"
    if status == SUGGESTED:
        return (
            f"{us} may book {them} by {rule} (score {score:.2f}, below the threshold {threshold:.2f}, so "
            f"nothing is proposed until a person confirms it){clause}"
        )
    if earlier:
        return f"{us} {verb} {them} by {rule}, as an earlier run matched them (score {score:.2f}){clause}"
    return f"{us} {verb} {them} by {rule} (score {score:.2f}){clause}"


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
    if len(records) == 1 and len(entries) == 1 and not absent:
        record, entry = records[0], entries[0]
        agreed, differed, details = state_pairs(
            [[getattr(record, name)] for name in PAIR_RECORD_FIELDS],
            [[getattr(entry, name)] for name in PAIR_ENTRY_FIELDS],
            [rule],
            [score],
            [status],
            [earlier],
            threshold,
        )
        return Said(agreed[0], differed[0], details[0])
    keys = compare(records, absent, entries, rule)
    them, us = _records_phrase(records, absent, kind), _entries_phrase(entries)
    verb = "books" if len(entries) == 1 else "together book"
    detail = _detail(us, verb, them, rule, score, status, threshold, earlier, _clause(keys))
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
