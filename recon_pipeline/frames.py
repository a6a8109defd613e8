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
    data: dict[str, Any] = {}
    for name, dtype in dtypes.items():
        values = columns.get(name)
        if values is None:
            values = [None] * rows
        if dtype == "object":
            # A bare object array would be inferred as pandas' string dtype: an object Series keeps it.
            data[name] = pd.Series(_object_array(values), dtype=object, copy=False)
        else:
            data[name] = pd.array(values, dtype=dtype)
    return pd.DataFrame(data, copy=False)


def _object_array(values: Sequence[Any]) -> np.ndarray:
    """The values in a one-dimensional object array (``np.array`` would nest sequence values)."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array
