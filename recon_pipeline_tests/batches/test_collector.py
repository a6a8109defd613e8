"""The garbage collector while a batch computes (``batches/collector.py``): the young generation's
threshold raised and the process's objects frozen for the batch's span, a threshold kept where a process
set it higher and a freeze of its own left alone, and the process's own thresholds back and its objects
unfrozen when its last running batch ends, an error included."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from recon_pipeline.batches.collector import YOUNG_THRESHOLD, fewer_collections
from recon_pipeline.batches.work import BatchRequest, reconcile_batch
from recon_pipeline.simulation.demo.properties import demo_properties
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, seeded


@pytest.fixture(autouse=True)
def thresholds() -> Iterator[tuple[int, int, int]]:
    """The process's thresholds, put back after the test whatever it did."""
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*before)
    gc.unfreeze()


def _frozen(obj: object) -> bool:
    """Whether the collector froze ``obj``: tracked, yet in none of its three generations."""
    return gc.is_tracked(obj) and not any(o is obj for g in range(3) for o in gc.get_objects(g))


def test_a_batch_s_span_freezes_what_the_process_held_and_unfreezes_it_after() -> None:
    held: list[object] = []  # a tracked container alive before the batch
    with fewer_collections():
        made: list[object] = []  # one of the batch's own
        assert _frozen(held) and not _frozen(made)
        gc.collect()
        assert _frozen(held)  # a full collection leaves it where it is
    assert not _frozen(held) and gc.get_freeze_count() == 0


def test_a_freeze_the_process_made_itself_is_left_alone() -> None:
    held: list[object] = []
    gc.freeze()
    with fewer_collections():
        assert _frozen(held)
    assert _frozen(held) and gc.get_freeze_count() > 0  # not unfrozen by the batch


def test_a_batch_s_span_collects_the_young_generation_less_often_and_puts_the_thresholds_back() -> None:
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_a_process_set_higher_keeps_its_own_threshold() -> None:
    gc.set_threshold(YOUNG_THRESHOLD * 2, 20, 30)
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD * 2, 20, 30)
    assert gc.get_threshold() == (YOUNG_THRESHOLD * 2, 20, 30)


def test_batches_running_at_once_share_one_raise_and_the_last_to_end_puts_it_back() -> None:
    first, second = fewer_collections(), fewer_collections()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first batch ends while the second still runs
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD and gc.get_freeze_count() > 0
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


def test_a_batch_that_raises_puts_the_thresholds_back() -> None:
    with pytest.raises(RuntimeError, match="the batch broke"), fewer_collections():
        raise RuntimeError("the batch broke")
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0


def test_a_batch_run_computes_under_the_raised_threshold_and_leaves_the_process_s_own(
    database_url: str,
) -> None:
    seen: list[int] = []
    with seeded(database_url, properties=demo_properties("stripe")) as pipeline:
        everyone = tuple(p.property_id for p in pipeline.properties)
        client = pipeline.resources["provider"].adapter()
        batch = reconcile_batch(
            pipeline.engine,
            client,
            BatchRequest(NIGHT.isoformat(), everyone),
            "collector",
            lambda _: seen.append(gc.get_threshold()[0] if gc.get_freeze_count() else 0),
        )
    assert {o.status for o in batch.outcomes} == {"succeeded"}
    assert seen and set(seen) == {YOUNG_THRESHOLD}  # every property's progress, under the raise, frozen
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0
