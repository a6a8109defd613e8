"""RECON_REVIEW_BASE_URL: a night's materializations link to the review desk, read back from the Dagster
instance; unset, nothing links; a bad value fails the run with one line naming the variable."""

from __future__ import annotations

import dagster as dg
import pytest
from sqlalchemy import func, select

from recon_pipeline.db.schema import night_reconciliations
from recon_pipeline.defs.assets import ADJUSTMENTS, DISCREPANCY_REPORT, FINDINGS
from recon_pipeline.errors import ConfigError
from recon_pipeline.review.links import BASE_URL_ENV, night_link, nights_link, parse_web_root
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT, SeededPipeline

BASE = "https://desk.example.test/recon"
PROPERTY = "lisbon-riverside"


def latest_metadata(instance: dg.DagsterInstance, key: dg.AssetKey) -> dict[str, object]:
    """The plain metadata of the asset's latest materialization, as the instance stores it."""
    event = instance.get_latest_materialization_event(key)
    assert event is not None and event.asset_materialization is not None
    return {name: value.value for name, value in event.asset_materialization.metadata.items()}


def test_a_nights_materializations_link_to_the_desk_only_when_its_address_is_set(
    seeded_pipeline: SeededPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = seeded_pipeline
    monkeypatch.delenv("RECON_REVIEW_BASE_URL", raising=False)
    assert pipeline.materialize(PROPERTY).success
    for key in (ADJUSTMENTS, FINDINGS, DISCREPANCY_REPORT):
        assert "review_desk" not in latest_metadata(pipeline.instance, key)
    assert f"| {PROPERTY} | ok |" in str(
        latest_metadata(pipeline.instance, DISCREPANCY_REPORT)["per_property"]
    )

    monkeypatch.setenv("RECON_REVIEW_BASE_URL", BASE + "/")  # read when the run starts, not at import
    assert pipeline.materialize(PROPERTY).success
    night = NIGHT.isoformat()
    for key in (ADJUSTMENTS, FINDINGS, DISCREPANCY_REPORT):
        link = latest_metadata(pipeline.instance, key)["review_desk"]
        assert link == f"{BASE}/nights?night_from={night}&night_to={night}"
    event = pipeline.instance.get_latest_materialization_event(DISCREPANCY_REPORT)
    assert event is not None and event.asset_materialization is not None
    assert isinstance(event.asset_materialization.metadata["review_desk"], dg.UrlMetadataValue)
    per_property = str(latest_metadata(pipeline.instance, DISCREPANCY_REPORT)["per_property"])
    assert f"| [{PROPERTY}]({BASE}/nights/{PROPERTY}/{night}) | ok |" in per_property


@pytest.mark.parametrize(
    "value",
    [
        "ftp://desk.example.test",
        "desk.example.test",
        "https://desk.example.test/?a=1",
        "https://u:p@desk.test",
    ],
)
def test_a_bad_desk_address_fails_the_run_before_any_work_with_one_line(
    seeded_pipeline: SeededPipeline, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    pipeline = seeded_pipeline
    monkeypatch.setenv("RECON_REVIEW_BASE_URL", value)
    result = pipeline.materialize(PROPERTY, raise_on_error=False)
    assert not result.success
    [failure] = result.get_step_failure_events()  # no step retry: the next attempt would read the same
    assert failure.step_failure_data.error is not None
    message = failure.step_failure_data.error.message
    assert "RECON_REVIEW_BASE_URL" in message and "\n" not in message.strip()
    assert "u:p" not in message  # a URL's credentials are never repeated
    with pipeline.engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(night_reconciliations)).scalar() == 0


def test_links_are_built_from_the_base_with_quoted_path_segments() -> None:
    base = parse_web_root("http://127.0.0.1:12114/", BASE_URL_ENV)
    assert base == "http://127.0.0.1:12114"
    assert nights_link(base, "2026-11-30") == f"{base}/nights?night_from=2026-11-30&night_to=2026-11-30"
    assert night_link(base, "a b/c", "2026-11-30") == f"{base}/nights/a%20b%2Fc/2026-11-30"
    for bad in ("", "https://", "https://desk.test/#top", "javascript:alert(1)"):
        with pytest.raises(ConfigError, match="^RECON_REVIEW_BASE_URL "):
            parse_web_root(bad, BASE_URL_ENV)
