"""typed_frame: one pass to the contract dtypes, without pandas 3 inferring its string dtype for text; a
batch's frames stacked and handed back (stack, pieces); their rows as records."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pandas as pd
import pytest

from recon_pipeline.frames import SCOPE, Cut, pieces, present, records, rows_at, stack, typed_frame
from recon_pipeline.providers.records import PROVIDER_RECORD_COLUMNS

DTYPES = {"name": "object", "amount": "Int64", "count": "int64", "ok": "bool", "at": "datetime64[ns, UTC]"}


def test_each_column_gets_its_dtype_and_a_missing_one_is_null() -> None:
    at = datetime(2026, 11, 30, 12, tzinfo=UTC)
    frame = typed_frame(
        {"name": ["a", None], "amount": [5, None], "count": [1, 2], "at": [at, at]},
        DTYPES | {"note": "object"},
        2,
    )
    per_series = pd.DataFrame(
        {
            "name": pd.Series(["a", None], dtype="object"),
            "amount": pd.Series([5, None], dtype="Int64"),
            "count": pd.Series([1, 2], dtype="int64"),
            "ok": pd.Series([None, None], dtype="bool"),
            "at": pd.Series([at, at], dtype="datetime64[ns, UTC]"),
            "note": pd.Series([None, None], dtype="object"),
        }
    )
    pd.testing.assert_frame_equal(frame, per_series, check_exact=True)
    assert list(frame.columns) == [*DTYPES, "note"]
    assert frame["name"].dtype == object and frame["note"].tolist() == [None, None]


def test_a_zero_row_frame_keeps_the_contract_dtypes() -> None:
    frame = typed_frame({}, PROVIDER_RECORD_COLUMNS, 0)
    assert {name: str(dtype) for name, dtype in frame.dtypes.items()} == PROVIDER_RECORD_COLUMNS


def test_columns_of_unequal_length_are_refused() -> None:
    with pytest.raises(ValueError, match="same length"):
        typed_frame({"name": ["a"], "count": [1, 2]}, {"name": "object", "count": "int64"}, 2)


def test_present_tells_values_from_every_pandas_null() -> None:
    assert [present(v) for v in ("", 0, "x", None, float("nan"), pd.NA, pd.NaT)] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]


def test_frames_of_different_columns_stack_in_their_order_and_come_back_as_they_were() -> None:
    """Frames with and without a column (the nights of a batch, some with groups, some without) stack in
    their order, each row scoped by its frame, the missing column null; ``pieces`` gives each its rows."""
    with_group = pd.DataFrame({"id": ["a", "b"], "amount": [1, 2], "group": ["g", None]})
    without = pd.DataFrame({"id": ["c"], "amount": [3]})
    empty = without.iloc[0:0]
    frames = [with_group, without, empty, with_group.assign(amount=[4, 5])]
    stacked = stack(frames)
    assert stacked["id"].tolist() == ["a", "b", "c", "a", "b"]
    assert stacked["amount"].tolist() == [1, 2, 3, 4, 5]
    assert stacked[SCOPE].tolist() == [0, 0, 1, 3, 3]
    assert stacked["group"].isna().tolist() == [False, True, True, False, True]
    back = pieces(stacked, stacked[SCOPE].to_numpy(), len(frames))
    assert [piece["id"].tolist() for piece in back] == [["a", "b"], ["c"], [], ["a", "b"]]
    assert [list(piece.index) for piece in back] == [[0, 1], [0], [], [0, 1]]
    assert SCOPE not in back[0].columns
    own = pieces(stacked, stacked[SCOPE].to_numpy(), len(frames), [frame.columns for frame in frames])
    for piece, frame in zip(own, frames, strict=True):  # each with its own columns, in its order
        pd.testing.assert_frame_equal(piece, frame.reset_index(drop=True), check_dtype=False)
    reordered = [without[["amount", "id"]], without]
    same = pieces(stack(reordered), stack(reordered)[SCOPE].to_numpy(), 2, [f.columns for f in reordered])
    assert [list(piece.columns) for piece in same] == [["amount", "id"], ["id", "amount"]]


def test_pieces_of_one_stack_stack_again_as_that_stack_s_rows_not_a_new_concatenation() -> None:
    """Pieces that name their place in one stack (``Cut``, as the matcher's outcomes do) stack as that
    stack's rows: every scope in its order is the stack itself; some scopes, in another order, are its
    rows of those scopes renumbered; a piece of another stack, or one of unknown place, stacks them anew.
    Each scope's rows are what ``stack`` of the pieces gives it, whichever way."""
    source = pd.DataFrame(  # a matcher's stack: two nights' rows interleaved
        {"id": ["a", "x", "b", "y", "z"], "amount": [1, 7, 2, 8, 9], SCOPE: [0, 2, 0, 2, 2]}
    )
    parts = pieces(source, source[SCOPE].to_numpy(), 3)
    cuts = [Cut(source, scope) for scope in range(3)]
    assert stack(parts, cuts) is source

    def rows_by_scope(frame: pd.DataFrame) -> dict[int, list[tuple[str, int]]]:
        found: dict[int, list[tuple[str, int]]] = {}
        for scope, row_id, amount in zip(frame[SCOPE], frame["id"], frame["amount"], strict=True):
            found.setdefault(int(scope), []).append((str(row_id), int(amount)))
        return found

    some = [parts[2], parts[0]]
    again = stack(some, [cuts[2], cuts[0]])
    expected = {0: [("x", 7), ("y", 8), ("z", 9)], 1: [("a", 1), ("b", 2)]}
    assert rows_by_scope(again) == rows_by_scope(stack(some)) == expected
    assert list(again.index) == list(range(len(again)))
    other = Cut(source.copy(), 1)
    for mixed in ([cuts[0], other], [cuts[0], None], [cuts[0], cuts[0]]):
        anew = stack([parts[0], parts[1]], mixed)
        assert anew is not source
        assert rows_by_scope(anew) == {0: [("a", 1), ("b", 2)]}
    assert stack(parts[:2], cuts[:2])[SCOPE].tolist() == [0, 0]  # the third night's rows left out


def test_rows_at_every_position_in_order_is_the_frame_itself_and_any_other_a_renumbered_copy() -> None:
    frame = typed_frame(
        {"name": ["a", "b", "c"], "count": [1, 2, 3]}, {"name": "object", "count": "int64"}, 3
    )
    assert rows_at(frame, [0, 1, 2]) is frame
    picked = rows_at(frame, [2, 0])
    assert picked["name"].tolist() == ["c", "a"] and list(picked.index) == [0, 1]
    none = rows_at(shifted := frame.set_axis([5, 6, 7]), [])
    assert none.empty and list(none.columns) == ["name", "count"] and none.dtypes.equals(frame.dtypes)
    assert isinstance(none.index, pd.RangeIndex) and none.index.equals(pd.RangeIndex(0))
    none.loc[0] = ["d", 4]  # its own frame: what is added to it is not added to the frame
    assert len(frame) == 3 and len(shifted) == 3
    again = rows_at(shifted, [0, 1, 2])
    assert again is not shifted and list(again.index) == [0, 1, 2] and again["count"].tolist() == [1, 2, 3]


def test_records_are_the_rows_each_columns_values_give_value_for_value_and_type_for_type() -> None:
    """Every dtype a contract frame holds, nulls of each kind included (a nullable integer's is NA, as its
    Series gives it, not None as ``to_dict`` does), in the frame's order or the columns asked for (a
    subset, reordered); no row, no record."""
    frame = typed_frame(
        {
            "name": ["a", None, "c"],
            "amount": [1, None, -3],
            "count": [4, 5, 6],
            "settled": [True, False, True],
            "at": [pd.Timestamp("2026-01-02T03:04:05Z"), None, pd.Timestamp("2026-01-03T00:00:00Z")],
            "rate": [1.5, float("nan"), 0.25],
        },
        {
            "name": "object",
            "amount": "Int64",
            "count": "int64",
            "settled": "bool",
            "at": "datetime64[ns, UTC]",
            "rate": "float64",
        },
        3,
    )

    def typed(rows: list[dict[str, Any]]) -> list[list[tuple[str, type, str]]]:
        return [[(name, type(value), repr(value)) for name, value in row.items()] for row in rows]

    def by_column(names: list[str]) -> list[dict[str, Any]]:
        columns = [frame[name].tolist() for name in names]
        return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]

    assert typed(records(frame)) == typed(by_column(list(frame.columns)))
    assert records(frame)[1]["amount"] is pd.NA and records(frame)[1]["at"] is pd.NaT
    asked = ["count", "name", "at"]
    assert typed(records(frame, asked)) == typed(by_column(asked))
    assert records(frame.iloc[0:0]) == []
