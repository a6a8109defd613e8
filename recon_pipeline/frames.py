"""Typed frames from plain column lists, in as few pandas calls as the dtypes allow.

A property-night builds dozens of frames of a few dozen rows, where pandas' fixed cost per Series (dtype
inference, sanitising, index alignment) outweighs the data. Each column here is converted once, straight
to its contract dtype, and the frame is assembled without re-checking it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd


def typed_frame(columns: Mapping[str, Sequence[Any]], dtypes: Mapping[str, str], rows: int) -> pd.DataFrame:
    """A ``rows``-row frame with the columns of ``dtypes`` in its order, each of its dtype; a column that
    ``columns`` does not give is null in every row (None is null)."""
    objects: dict[str, np.ndarray] = {}
    typed: list[tuple[int, Any]] = []
    for position, (name, dtype) in enumerate(dtypes.items()):
        values = columns.get(name)
        if values is None:
            values = [None] * rows
        if dtype == "object":
            objects[name] = _object_array(values)
        else:
            objects[name] = np.empty(rows, dtype=object)  # holds the column's place until it is set
            typed.append((position, pd.array(values, dtype=dtype)))
    # One object block (the explicit dtype keeps pandas from inferring its string dtype), then the few
    # typed columns set in place: a Series per column would cost more than all the rows.
    frame = pd.DataFrame(objects, dtype=object, copy=False)
    for position, array in typed:
        frame.isetitem(position, array)
    return frame


def _object_array(values: Sequence[Any]) -> np.ndarray:
    """The values in a one-dimensional object array (``np.array`` would nest sequence values)."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def sorted_by(frame: pd.DataFrame, *names: str) -> pd.DataFrame:
    """The frame's rows in the stable order of the named columns' values, numbered from 0: for the few
    dozen rows of a night, Python's sort of the keys costs a fraction of ``sort_values``'s."""
    keys = list(zip(*(frame[name].tolist() for name in names), strict=True))
    return rows_at(frame, sorted(range(len(keys)), key=keys.__getitem__))


def rows_at(frame: pd.DataFrame, positions: Sequence[int]) -> pd.DataFrame:
    """The frame's rows at ``positions``, numbered from 0; the frame itself when that is every row in its
    order and numbering (frames are copy-on-write: sharing one is safe, and a take costs a copy per
    block; none is a slice of none, which copies nothing)."""
    if not len(positions):
        return _renumbered(frame.iloc[0:0])
    if list(positions) != list(range(len(frame))):
        return _renumbered(frame.take(positions))
    if isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0 and frame.index.step == 1:
        return frame
    return _renumbered(frame.iloc[:])


def records(frame: pd.DataFrame, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The frame's rows as dicts (of ``columns`` only, if given), each value as its column's ``tolist``
    gives it (a nullable integer's null is NA, not None as ``to_dict`` has it), read through one object
    array: for the few dozen rows of a night, a third of what a Series per column costs."""
    names = [str(name) for name in (frame.columns if columns is None else columns)]
    chosen = frame if columns is None else _selected(frame, tuple(columns))
    return [dict(zip(names, row, strict=True)) for row in chosen.to_numpy(dtype=object).tolist()]


def for_database(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record's values as the database drivers take them: each null (None, NaN, NaT, NA) as None, numpy
    scalars as Python's."""
    return {name: _driver_value(value) for name, value in record.items()}


def _driver_value(value: Any) -> Any:
    if not present(value):
        return None
    return value.item() if hasattr(value, "item") else value


def present(value: object) -> bool:
    """Whether a cell value is there: neither None nor a pandas null (NaN, NaT, NA)."""
    return value is not None and not pd.isna(value)


# A stacked frame's column naming the part each row came from (a night of a batch): steps that key on it
# never let rows of two parts meet, so a batch computed at once is each part computed alone, row for row.
SCOPE: Final = "match_scope"


@dataclass(frozen=True, eq=False)
class Cut:
    """Where a piece was cut from (``pieces``): its stack, scope column included, and its scope there. A
    stack of pieces that all name one stack is taken from that stack again (``stack``'s ``cuts``)."""

    stack: pd.DataFrame
    scope: int


def stack(frames: Sequence[pd.DataFrame], cuts: Sequence[Cut | None] = ()) -> pd.DataFrame:
    """The frames one under another, each row with the position of its frame as its scope (a column some
    frame lacks is null in its rows).

    Frames of the same columns are concatenated together first: ``pd.concat`` aligns the columns of each
    frame that differs from the first, which over a batch's hundreds of small frames costs more than the
    work done on the stack. ``cuts``: each frame's place in a stack it was cut from, when known; frames
    that are all pieces of one stack are its rows again, not a new concatenation of hundreds of frames
    (a scope's rows in their order; the scopes may lie interleaved)."""
    again = _restacked(cuts) if len(cuts) == len(frames) and frames else None
    if again is not None:
        return again
    sizes = [len(frame) for frame in frames]
    scopes = np.repeat(np.arange(len(frames), dtype=np.int64), sizes)
    kinds: dict[tuple[object, ...], list[int]] = {}
    for at, frame in enumerate(frames):
        if len(frame) or at == 0:
            kinds.setdefault(tuple(frame.columns), []).append(at)
    parts = [_concat([frames[at] for at in members]) for members in kinds.values()]
    if len(parts) == 1:
        return parts[0].assign(**{SCOPE: scopes})
    order = np.concatenate([np.repeat(members, [sizes[at] for at in members]) for members in kinds.values()])
    stacked = pd.concat(parts, ignore_index=True)
    return stacked.take(np.argsort(order, kind="stable")).reset_index(drop=True).assign(**{SCOPE: scopes})


def _restacked(cuts: Sequence[Cut | None]) -> pd.DataFrame | None:
    """The stack every cut names, its scopes renumbered in the cuts' order and the rows of other scopes
    left out; None unless every cut names the same stack, each scope once."""
    first = cuts[0]
    if first is None or any(cut is None or cut.stack is not first.stack for cut in cuts):
        return None
    wanted = np.array([cut.scope for cut in cuts if cut is not None], dtype=np.int64)
    if len(np.unique(wanted)) != len(wanted):
        return None
    source = first.stack[SCOPE].to_numpy(dtype=np.int64)
    if np.array_equal(wanted, np.arange(len(wanted))) and (len(source) == 0 or source.max() < len(wanted)):
        return first.stack
    position = np.full(max(int(wanted.max()), int(source.max(initial=0))) + 1, -1, dtype=np.int64)
    position[wanted] = np.arange(len(wanted), dtype=np.int64)
    renumbered = position[source]
    rows = np.flatnonzero(renumbered >= 0)
    taken = first.stack.take(rows).reset_index(drop=True)
    taken[SCOPE] = renumbered[rows]
    return taken


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].reset_index(drop=True)


def pieces(
    frame: pd.DataFrame, scopes: np.ndarray, count: int, columns: Sequence[pd.Index] | None = None
) -> list[pd.DataFrame]:
    """The frame's rows per scope (``scopes``: each row's, from 0 to ``count`` - 1), in their order and
    without the scope column: what each part of a stack would have had alone. ``columns``: each part's
    own columns, in its order (a column another part of the stack had is not its); the parts that share
    a set are cut from one selection of those columns, not reordered one by one."""
    if SCOPE in frame.columns:
        frame = frame.drop(columns=SCOPE)
    if columns is None:
        return _cut(frame, scopes, count)
    kinds: dict[tuple[object, ...], list[int]] = {}
    for at, names in enumerate(columns):
        kinds.setdefault(tuple(names), []).append(at)
    if len(kinds) == 1:
        return _cut(_selected(frame, next(iter(kinds))), scopes, count)
    cut: dict[int, pd.DataFrame] = {}
    for names, members in kinds.items():
        rows = np.flatnonzero(np.isin(scopes, members))
        local = np.searchsorted(np.asarray(members), scopes[rows])
        cut.update(zip(members, _cut(_selected(frame, names).take(rows), local, len(members)), strict=True))
    return [cut[at] for at in range(count)]


def _selected(frame: pd.DataFrame, names: tuple[object, ...]) -> pd.DataFrame:
    """The frame's columns ``names``, in that order (the frame itself when it has just those)."""
    if tuple(frame.columns) == names:
        return frame
    return frame.iloc[:, frame.columns.get_indexer(list(names))]  # by position: names cost 20x


def _cut(frame: pd.DataFrame, scopes: np.ndarray, count: int) -> list[pd.DataFrame]:
    """``pieces`` of a frame without the scope column."""
    order = np.argsort(scopes, kind="stable")
    # One copy of the stack, its columns consolidated into a block per dtype: every later selection of a
    # piece then takes a few blocks rather than one per column.
    frame = frame.copy()
    if len(order) and (np.diff(order) != 1).any():
        frame = frame.take(order)
    bounds = np.searchsorted(scopes[order], np.arange(count + 1))
    return [
        _renumbered(frame.iloc[start:end])
        for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)
    ]


def _renumbered(piece: pd.DataFrame) -> pd.DataFrame:
    """The piece (a new frame, its rows a view of the stack's) with its rows numbered from 0: set in
    place, which ``reset_index`` would do by copying every block of the piece."""
    piece.index = pd.RangeIndex(len(piece))
    return piece
