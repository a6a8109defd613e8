"""Typed frames from plain column lists, in as few pandas calls as the dtypes allow.

A property-night builds dozens of frames of a few dozen rows, where pandas' fixed cost per Series (dtype
inference, sanitising, index alignment) outweighs the data. Each column here is converted once, straight
to its contract dtype, and the frame is assembled without re-checking it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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


def present(value: object) -> bool:
    """Whether a cell value is there: neither None nor a pandas null (NaN, NaT, NA)."""
    return value is not None and not pd.isna(value)


def column_records(frame: pd.DataFrame, columns: Sequence[str]) -> list[dict[str, Any]]:
    """The frame's rows as dicts of ``columns``, as the database drivers take them: each null (None, NaN,
    NaT, NA) as None, numpy scalars as Python's. Taken column by column: ``to_dict("records")`` of a few
    dozen rows costs several times as much, and a batch's writers convert a frame per property-night."""
    lists = [[_driver_value(value) for value in frame[name].tolist()] for name in columns]
    return [dict(zip(columns, row, strict=True)) for row in zip(*lists, strict=True)]


def _driver_value(value: Any) -> Any:
    if not present(value):
        return None
    return value.item() if hasattr(value, "item") else value
