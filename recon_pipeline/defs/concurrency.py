"""Admission control shared by every provider-bound definition (the limits live in dagster.yaml)."""

import dagster as dg

from recon_pipeline.config import seconds_from_env

# Ops that call the provider run in this pool; `concurrency.pools` in dagster.yaml caps it across runs.
PROVIDER_POOL = "provider_api"
# Runs that call the provider carry this tag; `tag_concurrency_limits` in dagster.yaml caps them.
PROVIDER_BOUND_TAG = "recon/provider_bound"


def provider_step_retry_policy() -> dg.RetryPolicy:
    """Step retries of provider-bound ops, after the HTTP client's own bounded retries gave up: a longer
    horizon for a provider outage (exponential, jittered). RECON_STEP_RETRY_DELAY_S sets the first delay."""
    delay = seconds_from_env("RECON_STEP_RETRY_DELAY_S", 5.0)
    return dg.RetryPolicy(
        max_retries=2, delay=delay, backoff=dg.Backoff.EXPONENTIAL, jitter=dg.Jitter.PLUS_MINUS
    )
