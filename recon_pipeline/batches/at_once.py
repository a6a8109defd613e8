"""A step run at once over a batch's nights that one night's input breaks is run night by night, so that
night fails alone; a night an earlier step failed is kept out of the next, its error in its place."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

logger = logging.getLogger(__name__)

P = TypeVar("P")
R = TypeVar("R")


def beside(
    parts: Sequence[P | BaseException], together: Callable[[Sequence[P]], Sequence[R]], what: str
) -> list[R | BaseException]:
    """``at_once`` over the parts that are not errors (a night an earlier step failed); each error stays
    in its place, so a batch's steps chain night by night."""
    ready = [part for part in parts if not isinstance(part, BaseException)]
    results = iter(at_once(ready, together, what))
    return [part if isinstance(part, BaseException) else next(results) for part in parts]


def at_once(
    parts: Sequence[P], together: Callable[[Sequence[P]], Sequence[R]], what: str
) -> list[R | BaseException]:
    """``together`` over every part at once; should one part's input break it, each part alone, so that
    the part at fault fails alone (with its error) and the others still get their result."""
    if not parts:
        return []
    try:
        return list(together(parts))
    except Exception as error:
        if len(parts) == 1:
            return [error]
        logger.exception("the batch's %s failed at once; computing its nights one by one", what)
    alone: list[R | BaseException] = []
    for part in parts:
        try:
            alone.extend(together([part]))
        except Exception as error:
            alone.append(error)
    return alone


def ok(result: R | BaseException) -> R:
    """A part's result, or its error raised (the night fails with it)."""
    if isinstance(result, BaseException):
        raise result
    return result
