"""The code location: every Dagster definition of recon-pipeline, bound to its resources."""

from __future__ import annotations

import os

import dagster as dg

from recon_pipeline.defs.assets import reconciliation_assets
from recon_pipeline.defs.checks import (
    discrepancy_checks,
    payment_events_backlog,
    slo_checks,
    slo_checks_job,
    slo_checks_schedule,
)
from recon_pipeline.defs.events import event_jobs, event_sensors, recovery_schedules
from recon_pipeline.defs.executor import executor_from_env
from recon_pipeline.defs.jobs import reconcile_night_job
from recon_pipeline.defs.resources import ProviderResource, ReconDatabase
from recon_pipeline.defs.schedules import nightly_reconciliation_schedule
from recon_pipeline.defs.sensors import property_partitions_sensor
from recon_pipeline.defs.summary import reports_automation_sensor, summary_assets


def _from_env(name: str) -> dg.EnvVar | None:
    """An EnvVar (resolved when a run starts, never stored in run config) if the variable is set."""
    return dg.EnvVar(name) if os.environ.get(name) else None


def build_definitions() -> dg.Definitions:
    return dg.Definitions(
        assets=[*reconciliation_assets, *summary_assets, payment_events_backlog],
        asset_checks=[*slo_checks, *discrepancy_checks],
        jobs=[reconcile_night_job, slo_checks_job, *event_jobs],
        sensors=[property_partitions_sensor, *event_sensors, reports_automation_sensor],
        schedules=[nightly_reconciliation_schedule, slo_checks_schedule, *recovery_schedules],
        executor=executor_from_env(),
        resources={
            "recon_db": ReconDatabase(database_url=_from_env("RECON_DATABASE_URL")),
            "provider": ProviderResource(api_key=_from_env("RECON_PROVIDER_API_KEY")),
        },
    )


defs = build_definitions()
