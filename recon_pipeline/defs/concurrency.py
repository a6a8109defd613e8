"""Admission control and retries shared by every provider-bound definition (the limits live in
dagster.yaml)."""

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from recon_pipeline.config import seconds_from_env
from recon_pipeline.errors import ConfigError

# Ops that call the provider run in this pool; `concurrency.pools` in dagster.yaml caps it across runs.
PROVIDER_POOL = "provider_api"
# Runs that call the provider carry this tag; `tag_concurrency_limits` in dagster.yaml caps them.
PROVIDER_BOUND_TAG = "recon/provider_bound"
# Dagster's run tag that keeps `run_retries` from re-executing a run failed by a step: the run worker reads
# the run's tags when it stores the run's failure and tags the run `dagster/will_retry`, which is what the
# daemon's auto re-execution follows.
RETRY_ON_STEP_FAILURE_TAG = "dagster/retry_on_asset_or_op_failure"
# A run failed by its configuration says why in this tag, so the runs list shows the reason, not a count.
ERROR_TAG = "recon/error"


def provider_step_retry_policy() -> dg.RetryPolicy:
    """Step retries of provider-bound ops, after the HTTP client's own bounded retries gave up: a longer
    horizon for a provider outage (exponential, jittered). RECON_STEP_RETRY_DELAY_S sets the first delay."""
    delay = seconds_from_env("RECON_STEP_RETRY_DELAY_S", 5.0)
    return dg.RetryPolicy(
        max_retries=2, delay=delay, backoff=dg.Backoff.EXPONENTIAL, jitter=dg.Jitter.PLUS_MINUS
    )


def refuse_run_retries(context: dg.AssetExecutionContext | dg.OpExecutionContext) -> None:
    """Keep the run-retry daemon from re-executing this run when its step fails: for a failure no retry
    changes (a request the provider refused for good), raised with ``dg.Failure(allow_retries=False)`` so
    that no step retry re-sends it either. Transient failures keep both bounded retries."""
    context.instance.add_run_tags(context.run_id, {RETRY_ON_STEP_FAILURE_TAG: "false"})


@contextmanager
def failing_once_on_config_error(context: dg.AssetExecutionContext | dg.OpExecutionContext) -> Iterator[None]:
    """A setting that is missing or bad (a ConfigError) fails the step once, neither step- nor run-retried
    (every attempt would read the same environment), with the error's one line as the step's failure and
    in the run's ``recon/error`` tag."""
    try:
        yield
    except ConfigError as error:
        reason = str(error)
        refuse_run_retries(context)
        context.instance.add_run_tags(context.run_id, {ERROR_TAG: reason})
        raise dg.Failure(description=reason, allow_retries=False) from None
