"""The words of the codes: every category has a label, a sentence and a sign, each said once."""

from __future__ import annotations

import pytest

from recon_pipeline.categories import ALL_CATEGORIES
from recon_pipeline.providers.cards import CARD_BRANDS
from recon_pipeline.reconcile.takings import UNKNOWN_BRAND
from recon_pipeline.words import (
    CARD_BRAND_WORDS,
    CATEGORY_WORDS,
    KIND_WORDS,
    brand_label,
    category_label,
    category_meaning,
    tender_label,
)

pytestmark = pytest.mark.fast


def test_every_category_has_distinct_words_that_end_as_sentences() -> None:
    assert tuple(CATEGORY_WORDS) == ALL_CATEGORIES
    labels = [words.label for words in CATEGORY_WORDS.values()]
    assert len(set(labels)) == len(labels)
    for words in CATEGORY_WORDS.values():
        assert words.label and "_" not in words.label
        assert words.meaning.endswith(".") and words.sign.endswith(".")


def test_an_unknown_code_is_shown_as_it_is() -> None:
    assert category_label("missing_in_ledger") == "Missing in the ledger"
    assert category_label("from_a_newer_build") == "from_a_newer_build"
    assert category_meaning("from_a_newer_build") == ""
    assert category_meaning("amount_mismatch").startswith("Both sides have the money movement")


def test_an_adjustments_kind_reads_as_its_action_on_its_record() -> None:
    assert KIND_WORDS["post_missing_fee"] == "Post the missing fee"
    assert KIND_WORDS["reverse_duplicate_payment"] == "Reverse the duplicate payment"
    assert KIND_WORDS["refund"] == "Refund"


def test_every_card_brand_and_tender_has_its_distinct_words() -> None:
    assert set(CARD_BRAND_WORDS) == {*CARD_BRANDS, UNKNOWN_BRAND}
    assert len(set(CARD_BRAND_WORDS.values())) == len(CARD_BRAND_WORDS)
    assert [tender_label(code) for code in ("cash", "bank_transfer", "ota_collect", "not_recorded")] == [
        "Cash",
        "Bank transfer",
        "OTA-collected",
        "Not recorded",
    ]
    assert (brand_label("amex"), brand_label("unknown"), brand_label("newer_brand")) == (
        "American Express",
        "Brand unknown",
        "newer_brand",
    )
