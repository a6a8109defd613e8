"""What the codes of the data contract mean, in words an analyst reads: each finding category's name and
one-sentence meaning with what the sign of its difference says, the names of review and queue states, and
of tenders and card brands.

Vocabulary on the ground floor, beside ``categories.py``: the review desk's lists, legend and finding
pages, its exports' headers and cells, and any report show the same words. The codes stay the contract's
(stored, filtered and linked by code); only what a person reads changes.

The difference of a finding is always the provider's amount less the ledger's (a missing side counts as
0): **positive** means the provider moved more money than the ledger books, **negative** that the ledger
books more than the provider moved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from recon_pipeline import categories as c
from recon_pipeline import tenders as t

SIGN_CONVENTION: Final = (
    "A difference is the provider's amount less the ledger's: positive when the provider moved more money "
    "than the ledger books, negative when the ledger books more than the provider moved."
)


@dataclass(frozen=True)
class CategoryWords:
    """A category as a person reads it: ``label`` (a few words), ``meaning`` (one sentence) and ``sign``
    (what a positive or negative difference says for it, or that it carries none)."""

    code: str
    label: str
    meaning: str
    sign: str


CATEGORY_WORDS: Final[Mapping[str, CategoryWords]] = {
    words.code: words
    for words in (
        CategoryWords(
            c.MISSING_IN_LEDGER,
            "Missing in the ledger",
            "The provider moved this money but the PMS ledger has no entry for it.",
            "Positive: money received that the ledger does not show; negative: a refund, dispute or fee the "
            "ledger does not show.",
        ),
        CategoryWords(
            c.MISSING_AT_PROVIDER,
            "Missing at the provider",
            "The ledger books a payment, refund or fee that the provider has no record of.",
            "Negative: the ledger books money the provider never moved; positive: a refund or fee booked "
            "that the provider never made.",
        ),
        CategoryWords(
            c.AMOUNT_MISMATCH,
            "Amount differs",
            "Both sides have the money movement but book different amounts.",
            "Positive: the provider moved more than the ledger books; negative: the ledger books more.",
        ),
        CategoryWords(
            c.CURRENCY_MISMATCH,
            "Currency differs",
            "Both sides have the money movement but in different currencies, so the amounts cannot be "
            "compared.",
            "No difference is computed: the two sides' currencies are shown instead.",
        ),
        CategoryWords(
            c.DUPLICATE_IN_LEDGER,
            "Booked twice in the ledger",
            "The ledger books the same money movement more than once.",
            "Negative: the amount the extra entries book beyond what the provider moved.",
        ),
        CategoryWords(
            c.STATUS_MISMATCH,
            "Failed payment booked as paid",
            "The ledger books a payment that failed or was never captured at the provider.",
            "Negative: the ledger books money the provider never collected.",
        ),
        CategoryWords(
            c.ORPHANED_CAPTURED_PAYMENT,
            "Payment without a confirmed booking",
            "The provider captured money for a booking the PMS has not confirmed (pending, or cancelled).",
            "Positive: the money captured for the unconfirmed booking.",
        ),
        CategoryWords(
            c.INVALID_LEDGER_ENTRY,
            "Invalid ledger entry",
            "A ledger entry breaks the data contract (amount out of range, unknown currency or kind) and "
            "was left out of the comparison.",
            "No difference: the entry is reported as written, nothing is proposed.",
        ),
        CategoryWords(
            c.UNATTRIBUTED_PAYMENT,
            "Payment of no known property",
            "A payment on an account several properties share that no property's metadata or payment "
            "orders claim.",
            "Positive: the unclaimed amount; nothing is proposed until it is attributed.",
        ),
        CategoryWords(
            c.FX_DIFFERENCE,
            "Currency conversion differs",
            "The ledger books a converted payment in the settlement currency at an amount off the "
            "provider's balance transaction by more than the property's tolerance.",
            "Positive: the provider settled more than the ledger books; negative: less.",
        ),
        CategoryWords(
            c.AUTHORIZATION_EXPIRING,
            "Card hold about to lapse",
            "A confirmed booking's card authorization will expire before the next night ends and has not "
            "been captured.",
            "Positive: the amount held that will be lost if it is not captured in time.",
        ),
        CategoryWords(
            c.AMBIGUOUS_MATCH,
            "Several equally good matches",
            "Records without the provider's id could be paired in more than one equally good way; the "
            "certain pairs were made and these wait for a person.",
            "The difference is what stays unpaired; nothing is proposed until a person pairs them.",
        ),
        CategoryWords(
            c.SUGGESTED_MATCH,
            "Suggested match to confirm",
            "A likely pairing of a provider record and a ledger entry, scored below the property's "
            "threshold: a person confirms or rejects it.",
            "The difference is the two sides' amounts apart; nothing is proposed until it is confirmed.",
        ),
        CategoryWords(
            c.PAYOUT_FAILED,
            "Payout failed",
            "The provider's payout to the bank failed; the money is back in the provider balance.",
            "Positive: the payout's amount that did not reach the bank.",
        ),
        CategoryWords(
            c.PAYOUT_NOT_DEPOSITED,
            "Payout not in the bank",
            "The provider says the payout was paid, but no imported bank statement shows the credit.",
            "Positive: the payout's amount not found in the bank.",
        ),
        CategoryWords(
            c.PAYOUT_FEE_MISMATCH,
            "Payout fees differ",
            "The ledger's fee entry for a payout differs from the fees the provider took in it.",
            "Negative: the provider took more fees than the ledger books; positive: fewer.",
        ),
        CategoryWords(
            c.PAYOUT_FEE_MISSING,
            "Payout fees not booked",
            "The property books provider fees per payout, but the ledger has no fee entry for this payout.",
            "Negative: the fees the provider took that the ledger does not show.",
        ),
    )
}
assert tuple(CATEGORY_WORDS) == c.ALL_CATEGORIES, "every category has its words, in the contract's order"

# Review states of a finding, and of an adjustment in the desk's queue (its posting's state once approved).
REVIEW_STATE_WORDS: Final[Mapping[str, str]] = {
    "open": "Open",
    "acknowledged": "Acknowledged",
    "resolved": "Resolved",
}
QUEUE_STATE_WORDS: Final[Mapping[str, str]] = {
    "proposed": "Needs a decision",
    "approved": "Approved, waiting to post",
    "posting": "Posting to the PMS",
    "unknown": "Posting outcome unknown",
    "posted": "Posted",
    "failed": "Posting failed",
    "rejected": "Rejected",
    "withdrawn": "Withdrawn (no longer needed)",
    "superseded": "Superseded by a newer amount",
}
# A match's status (the matches table), as the finding page says how its two sides match.
MATCH_STATE_WORDS: Final[Mapping[str, str]] = {
    "matched": "Matched",
    "suggested": "Suggested, waiting for a person",
    "confirmed": "Confirmed by a person",
    "rejected": "Rejected by a person",
}
# What each state means, for the legend.
REVIEW_STATE_MEANINGS: Final[Mapping[str, str]] = {
    "open": "No one has said they are on it; a reviewed finding whose difference changed comes back here.",
    "acknowledged": "Someone knows and is on it; the finding still counts as unexplained.",
    "resolved": "Dealt with; reopen it, saying why, if it was not.",
}
QUEUE_STATE_MEANINGS: Final[Mapping[str, str]] = {
    "proposed": "A correction of the ledger waits for an approver (or a second one, above the four-eyes "
    "threshold).",
    "approved": "Approved; the posting worker has not begun posting it to the PMS.",
    "posting": "Being posted to the PMS now.",
    "unknown": "The PMS did not say whether the posting took; it is checked before anything is retried.",
    "posted": "The PMS booked the correction.",
    "failed": "The PMS refused the posting.",
    "rejected": "An approver decided against it.",
    "withdrawn": "The finding it corrected went away, so it is no longer needed.",
    "superseded": "The finding's amount changed: a newer revision proposes the new amount.",
}
RECORD_KIND_WORDS: Final[Mapping[str, str]] = {
    "payment": "Payment",
    "refund": "Refund",
    "fee": "Fee",
    "dispute": "Dispute",
    "dispute_reversal": "Dispute reversal",
    "adjustment": "Adjustment",
}
# An adjustment's kind names its action and the record's kind (reconcile/adjustments.py: post_missing_fee).
ADJUSTMENT_ACTION_WORDS: Final[Mapping[str, str]] = {
    "post_missing": "Post the missing",
    "reverse_unmatched": "Reverse the unmatched",
    "correct_amount": "Correct the amount of the",
    "correct_fx": "Correct the converted amount of the",
    "reverse_duplicate": "Reverse the duplicate",
}
# Every kind a person reads: a record's (payment, refund...) and an adjustment's (post_missing_payment...).
KIND_WORDS: Final[Mapping[str, str]] = {
    **RECORD_KIND_WORDS,
    **{
        f"{action}_{kind}": f"{words} {kind_words.lower()}"
        for action, words in ADJUSTMENT_ACTION_WORDS.items()
        for kind, kind_words in RECORD_KIND_WORDS.items()
    },
}

# How a guest paid (``tenders.py``), as the night's takings name each tender; NOT_RECORDED is a NULL tender.
TENDER_WORDS: Final[Mapping[str, str]] = {
    t.CARD: "Card",
    t.CASH: "Cash",
    t.BANK_TRANSFER: "Bank transfer",
    t.OTA_COLLECT: "OTA-collected",
    t.VOUCHER: "Voucher",
    t.OTHER: "Other",
    t.NOT_RECORDED: "Not recorded",
}
assert set(TENDER_WORDS) == {*t.TENDERS, t.NOT_RECORDED}, "every tender has its words"
# A card's brand in the one vocabulary (``providers/cards.py``: ``CARD_BRANDS``), as the cards-by-brand
# comparison names it; "unknown" is a card whose brand nobody recorded or nobody can read.
CARD_BRAND_WORDS: Final[Mapping[str, str]] = {
    "visa": "Visa",
    "mastercard": "Mastercard",
    "amex": "American Express",
    "discover": "Discover",
    "jcb": "JCB",
    "diners": "Diners Club",
    "unionpay": "UnionPay",
    "maestro": "Maestro",
    "cartes_bancaires": "Cartes Bancaires",
    "eftpos_au": "eftpos Australia",
    "interac": "Interac",
    "rupay": "RuPay",
    "bajaj": "Bajaj Finserv",
    "unknown": "Brand unknown",
}


def tender_label(code: str) -> str:
    """The tender's words; an unknown code is shown as it is."""
    return TENDER_WORDS.get(code, code)


def brand_label(code: str) -> str:
    """The card brand's words; an unknown code is shown as it is."""
    return CARD_BRAND_WORDS.get(code, code)


def category_label(code: str) -> str:
    """The category's few words; an unknown code is shown as it is (a newer build's category)."""
    words = CATEGORY_WORDS.get(code)
    return code if words is None else words.label


def category_meaning(code: str) -> str:
    """The category's one sentence and what its sign says; empty for an unknown code."""
    words = CATEGORY_WORDS.get(code)
    return "" if words is None else f"{words.meaning} {words.sign}"
