"""The executor of every job, chosen by RECON_EXECUTOR so a deployment scales out without code changes.

- ``in_process`` (default): all steps of a run in its run worker; a property-night is six short steps,
  and a process per step cost more than the work (about 70 s against 10 s per run under load).
- ``multiprocess``: Dagster's default, a process per step.
- ``k8s``: a Kubernetes job per step (``dagster-k8s``' ``k8s_job_executor``; install dagster-k8s).
- ``celery``: steps on Celery workers (``dagster-celery``' ``celery_executor``), configured from the
  environment (``celery_config``) so that runs a schedule, sensor or ``recon reconcile-night`` submits,
  which carry no ``execution:`` run config, still reach the workers (deploy/celery/).
Pools and run tag limits in dagster.yaml bound provider traffic whichever executor runs the steps. Steps
pass nothing through an IO manager, so no executor needs storage shared between hosts.
"""

import importlib
import os
from typing import Any

import dagster as dg

from recon_pipeline.config import text_from_env
from recon_pipeline.errors import ConfigError

EXTERNAL_EXECUTORS = {
    "k8s": ("dagster_k8s", "k8s_job_executor"),
    "celery": ("dagster_celery", "celery_executor"),
}
CELERY_BROKER_VARIABLE = "RECON_CELERY_BROKER_URL"
CELERY_QUEUE_VARIABLE = "RECON_CELERY_QUEUE"
CELERY_DEFAULT_QUEUE = "dagster"  # dagster-celery's, which `dagster-celery worker start` serves unless -q


def celery_config() -> dict[str, Any]:
    """The ``celery_executor`` config of every run: the broker from RECON_CELERY_BROKER_URL, resolved by
    Dagster when a run starts (the URL may hold the broker's password: it never enters run config or
    the UI), results back over the broker (``rpc://``: nothing else to share), and the queue the
    workers serve, RECON_CELERY_QUEUE (default ``dagster``)."""
    return {
        "broker": {"env": CELERY_BROKER_VARIABLE},
        "backend": "rpc://",
        "config_source": {"task_default_queue": text_from_env(CELERY_QUEUE_VARIABLE, CELERY_DEFAULT_QUEUE)},
    }


def executor_from_env() -> dg.ExecutorDefinition:
    """The executor named by RECON_EXECUTOR, or a ConfigError naming what is missing."""
    name = text_from_env("RECON_EXECUTOR", "in_process")
    if name == "in_process":
        return dg.in_process_executor
    if name == "multiprocess":
        return dg.multiprocess_executor
    if name not in EXTERNAL_EXECUTORS:
        raise ConfigError(f"RECON_EXECUTOR must be in_process, multiprocess, k8s or celery, not {name!r}")
    module_name, attribute = EXTERNAL_EXECUTORS[name]
    try:
        executor: dg.ExecutorDefinition = getattr(importlib.import_module(module_name), attribute)
    except ImportError:
        package = module_name.replace("_", "-")
        raise ConfigError(f"RECON_EXECUTOR={name} needs the {package} package") from None
    if name == "celery":
        if not os.environ.get(CELERY_BROKER_VARIABLE):  # dagster-celery would fall back to localhost
            raise ConfigError(f"RECON_EXECUTOR=celery needs {CELERY_BROKER_VARIABLE}, the broker's URL")
        return executor.configured(celery_config(), name=executor.name)
    return executor


@dg.definitions
def executor() -> dg.Definitions:
    """The code location's executor, chosen when it loads (never at import)."""
    return dg.Definitions(executor=executor_from_env())
