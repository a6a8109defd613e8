"""The pure review rules: status transitions, re-opening, input validation, threshold settings."""

from __future__ import annotations

import pytest

from recon_pipeline.errors import ConfigError, ReviewError
from recon_pipeline.review import render
from recon_pipeline.review.limits import default_threshold_minor, orphan_error_after
from recon_pipeline.review.rules import next_status, status_after, validate_note, validate_reviewer
from recon_pipeline.storage.findings import ACKNOWLEDGE, NOTE, REOPEN, RESOLVE, FindingFilter, reopens


@pytest.mark.parametrize(
    ("action", "current", "expected"),
    [
        (ACKNOWLEDGE, "open", "acknowledged"),
        (ACKNOWLEDGE, "acknowledged", None),
        (RESOLVE, "open", "resolved"),
        (RESOLVE, "acknowledged", "resolved"),
        (RESOLVE, "resolved", None),
        (REOPEN, "acknowledged", "open"),
        (REOPEN, "resolved", "open"),
        (REOPEN, "open", None),
    ],
)
def test_transitions(action: str, current: str, expected: str | None) -> None:
    assert next_status(action, current) == expected


def test_a_note_leaves_the_status_a_review_action_sets_its_own() -> None:
    assert [status_after(NOTE, status) for status in ("open", "resolved")] == ["open", "resolved"]
    assert [status_after(action, "open") for action in (ACKNOWLEDGE, RESOLVE)] == ["acknowledged", "resolved"]
    with pytest.raises(KeyError):
        next_status(NOTE, "open")  # a note is no review action


def test_a_resolved_finding_cannot_be_acknowledged() -> None:
    with pytest.raises(ReviewError, match="already resolved"):
        next_status(ACKNOWLEDGE, "resolved")


def test_a_note_error_names_the_field_it_came_from() -> None:
    with pytest.raises(ReviewError, match="^say why with the comment$"):
        validate_note(" ", "the comment")
    with pytest.raises(ReviewError, match="^the comment must be at most 2000 characters$"):
        validate_note("x" * 2001, "the comment")


@pytest.mark.parametrize(
    ("status", "reviewed", "difference", "expected"),
    [
        ("resolved", 500, 500, False),  # same amount: the review still holds
        ("resolved", 500, 800, True),
        ("acknowledged", -500, 500, True),  # the sign is part of the amount
        ("open", 500, 800, False),  # already open
        ("acknowledged", None, 800, False),  # reviewed before amounts were recorded: nothing to compare
    ],
)
def test_reopening(status: str, reviewed: int | None, difference: int, expected: bool) -> None:
    assert reopens(status, reviewed, difference) is expected


def test_reviewer_and_note_are_validated() -> None:
    assert validate_reviewer("  ana  ") == "ana"
    assert validate_note(" late export ") == "late export"
    for bad in (None, "", "   ", "a\nb", "x" * 201):
        with pytest.raises(ReviewError):
            validate_reviewer(bad)
    for bad in (None, " ", "x" * 2001):
        with pytest.raises(ReviewError):
            validate_note(bad)


def test_filters_and_ids_are_validated() -> None:
    assert FindingFilter("kyoto-gion", "2026-11-30", "amount_mismatch", "open").status == "open"
    for where in (
        {"property_id": "a,b"},
        {"night": "30-11-2026"},
        {"category": "amount"},
        {"status": "Open"},
    ):
        with pytest.raises(ValueError):
            FindingFilter(**where)


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECON_UNEXPLAINED_THRESHOLD_MINOR", raising=False)
    monkeypatch.delenv("RECON_ORPHAN_ERROR_HOURS", raising=False)
    assert default_threshold_minor() == 1_000_000
    assert orphan_error_after().total_seconds() == 24 * 3600
    monkeypatch.setenv("RECON_UNEXPLAINED_THRESHOLD_MINOR", "0")
    assert default_threshold_minor() == 0
    monkeypatch.setenv("RECON_ORPHAN_ERROR_HOURS", "6")
    assert orphan_error_after().total_seconds() == 6 * 3600
    monkeypatch.setenv("RECON_UNEXPLAINED_THRESHOLD_MINOR", "-1")
    with pytest.raises(ConfigError, match="RECON_UNEXPLAINED_THRESHOLD_MINOR"):
        default_threshold_minor()
    monkeypatch.setenv("RECON_ORPHAN_ERROR_HOURS", "0")
    with pytest.raises(ConfigError, match="RECON_ORPHAN_ERROR_HOURS"):
        orphan_error_after()


def test_a_listed_currency_mismatch_names_both_currencies_not_a_zero_difference() -> None:
    row = {
        "discrepancy_id": 18,
        "property_id": "kyoto-gion",
        "night": "2026-12-02",
        "category": "currency_mismatch",
        "record_key": "ch_1:payment",
        "provider_amount_minor": 20_000,
        "ledger_amount_minor": 12_000,
        "difference_minor": 0,
        "currency": "JPY",
        "ledger_currency": "GBP",
        "review_status": "open",
        "cleared_at": None,
        "reviewed_by": None,
        "detail": "in JPY but posted in GBP",
    }
    listed = render.list_text([row], 1)
    assert "JPY ≠ GBP" in listed and "0 JPY" not in listed
    assert render.findings_markdown([row]) == "- #18 `ch_1:payment` JPY ≠ GBP: in JPY but posted in GBP"
    same = row | {"category": "amount_mismatch", "ledger_currency": "JPY", "difference_minor": 8_000}
    assert "8,000 JPY" in render.list_text([same], 1)
