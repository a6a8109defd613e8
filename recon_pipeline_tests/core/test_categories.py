"""Finding frames built for a batch at once: each part is the frame it would be alone."""

from __future__ import annotations

import pandas as pd

from recon_pipeline.categories import (
    AMOUNT_MISMATCH,
    AUTHORIZATION_EXPIRING,
    FINDING_COLUMNS,
    empty_findings,
    finding_frame,
    finding_frames,
)


def _part(keys: list[str], category: str = AMOUNT_MISMATCH) -> dict[str, list[object]]:
    return {
        "category": [category] * len(keys),
        "record_key": keys,
        "provider_amount_minor": [None if "x:" in key else 100 for key in keys],
        "difference_minor": [7] * len(keys),
        "detail": [f"about {key}" for key in keys],
    }


def test_each_part_of_a_batch_is_the_frame_it_would_be_alone() -> None:
    """Parts with rows, without, and with columns another part lacks come back in their order, each equal
    (dtypes, index, columns and values) to its own ``finding_frame``; a batch of one or of none is too."""
    parts = [
        _part(["a:payment", "bx:refund"]),
        {},
        _part(["c:payment"], AUTHORIZATION_EXPIRING) | {"booking_id": ["bk_1"], "currency": ["EUR"]},
        _part([]),
        _part(["dx:fee", "e:fee", "f:fee"]),
    ]
    built = finding_frames(parts)
    assert len(built) == len(parts)
    for frame, part in zip(built, parts, strict=True):
        pd.testing.assert_frame_equal(frame, finding_frame(part), check_exact=True)
        assert list(frame.columns) == list(FINDING_COLUMNS) and frame.index.equals(pd.RangeIndex(len(frame)))
    assert built[2]["booking_id"].tolist() == ["bk_1"] and built[4]["booking_id"].isna().all()
    amounts = built[0]["provider_amount_minor"]
    assert amounts.isna().tolist() == [False, True] and amounts.iloc[0] == 100
    pd.testing.assert_frame_equal(finding_frames([parts[0]])[0], finding_frame(parts[0]))
    assert finding_frames([]) == []
    assert [frame.empty for frame in finding_frames([{}, {}])] == [True, True]


def test_an_empty_finding_frame_is_its_holders_own() -> None:
    """What one holder of an empty finding frame writes to it (a row, a column, its index) is in no other
    empty finding frame, nor in a batch's empty part."""
    mine = empty_findings()
    mine.loc[0] = ["amount_mismatch", "a:payment", "payment", "ch_1", None, None, 1, 1, 0, "EUR", None, "x"]
    mine["extra"] = [1]
    mine.index = pd.Index([9])
    mine.iloc[0, 0] = "changed"
    for other in (empty_findings(), finding_frame({}), finding_frames([{}, _part(["b:fee"])])[0]):
        assert other.empty and list(other.columns) == list(FINDING_COLUMNS)
        assert other.index.equals(pd.RangeIndex(0))
    pd.testing.assert_frame_equal(empty_findings(), finding_frame({"category": []}), check_exact=True)
