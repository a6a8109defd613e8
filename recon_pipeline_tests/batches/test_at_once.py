"""A batch's step computed for every night at once (``batches/at_once.py``): one night whose input
breaks the step fails alone, and every other night gets what the step gives it alone; a night an earlier
step failed is kept out of the next (``beside``)."""

from __future__ import annotations

from collections.abc import Sequence

from recon_pipeline.batches.at_once import at_once, beside


def doubled(parts: Sequence[str]) -> list[int]:
    """A step over many parts at once that one bad part breaks for all (as ``int`` would)."""
    return [2 * int(part) for part in parts]


def test_every_part_at_once_when_none_breaks_the_step() -> None:
    calls: list[int] = []

    def counted(parts: Sequence[str]) -> list[int]:
        calls.append(len(parts))
        return doubled(parts)

    assert at_once(["1", "2", "3"], counted, "doubling") == [2, 4, 6]
    assert calls == [3]  # one call for the batch


def test_a_part_that_breaks_the_step_fails_alone_and_the_others_get_their_results() -> None:
    results = at_once(["1", "x", "3"], doubled, "doubling")
    assert results[0] == 2 and results[2] == 6
    assert isinstance(results[1], ValueError) and "'x'" in str(results[1])


def test_no_parts_is_no_call() -> None:
    def never(parts: Sequence[str]) -> list[int]:
        raise AssertionError("called without parts")

    assert at_once([], never, "nothing") == []


def test_a_step_beside_an_earlier_failure_skips_that_night_and_keeps_its_error_in_place() -> None:
    earlier = ValueError("night 2's ledger")
    given: list[list[str]] = []

    def doubled_and_seen(parts: Sequence[str]) -> list[int]:
        given.append(list(parts))
        return doubled(parts)

    assert beside(["1", earlier, "3"], doubled_and_seen, "doubling") == [2, earlier, 6]
    assert given == [["1", "3"]]  # one call, without the failed night
