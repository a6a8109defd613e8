"""The words of the codes: every category has a label, a sentence and a sign, each said once."""

from __future__ import annotations

import pytest

from recon_pipeline.categories import ALL_CATEGORIES
from recon_pipeline.words import CATEGORY_WORDS, KIND_WORDS, category_label, category_meaning

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
