"""The matcher's benchmark runs at a small size and reports both shapes of the night; its timings are
printed by the suite, never asserted here."""

from __future__ import annotations

from benchmarks.match_night import measure, shapes


def test_both_shapes_are_measured_and_the_keyed_night_is_handed_on_as_it_came() -> None:
    figures = measure(2_000, repeat=1)  # measure itself asserts the keyed frames come back unchanged
    assert set(figures["keyed"]) == {"diff_seconds", "match_seconds"}
    unkeyed = figures["unkeyed"]
    assert "exact_id" not in unkeyed["matches_by_rule"]  # rules with no match are left out
    assert unkeyed["matches_by_rule"]["booking_amount"] > 0.9 * figures["ledger_rows"]


def test_the_unkeyed_ledger_names_no_provider_record() -> None:
    _, keyed, unkeyed = shapes(500)
    counted = unkeyed["kind"] != "adjustment"
    assert unkeyed.loc[counted, "provider_record_id"].isna().all()
    assert keyed["provider_record_id"].notna()[keyed["kind"] != "adjustment"].all()
