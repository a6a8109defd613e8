"""The distributed executors' deployment files (deploy/celery, deploy/k8s) are valid for the libraries we
pin: each is checked against dagster-celery's, dagster-k8s' or Dagster's own config schema, so a renamed
or mistyped field fails here rather than on a cluster. (The Celery files also run for real in
test_celery_executor.py; no Kubernetes cluster runs here.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from dagster._config import process_config, resolve_to_config_type
from dagster._core.instance.config import dagster_instance_config_schema
from dagster._utils.merger import deep_merge_dicts
from dagster_celery.cli import get_validated_config
from dagster_k8s import K8sRunLauncher, k8s_job_executor
from sqlalchemy.engine import make_url

from recon_pipeline.defs.executor import CELERY_BROKER_VARIABLE
from recon_pipeline_tests.support.dagster_processes import DEPLOY_DIR, dagster_pg_env


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def processed(schema: Any, value: Any) -> Any:
    """``value`` as Dagster processes it against ``schema`` (defaults filled in), or the errors."""
    result = process_config(resolve_to_config_type(schema), value)
    assert result.success, [error.message for error in result.errors or []]
    return result.value


def test_celery_worker_config_takes_the_broker_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    broker = "pyamqp://guest:guest@127.0.0.1:5672//"
    monkeypatch.setenv(CELERY_BROKER_VARIABLE, broker)
    config = get_validated_config(str(DEPLOY_DIR / "celery" / "celery.yaml"))  # what the worker CLI does
    assert config["broker"] == broker
    assert config["backend"] == "rpc://"


def test_k8s_instance_fragment_is_a_valid_k8s_run_launcher_on_the_deploy_instance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in dagster_pg_env(make_url("postgresql://postgres@127.0.0.1:5432/dagster")).items():
        monkeypatch.setenv(name, value)  # deploy/dagster.yaml's storage reads them
    fragment = load(DEPLOY_DIR / "k8s" / "dagster.yaml")
    merged = deep_merge_dicts(load(DEPLOY_DIR / "dagster.yaml"), fragment)
    instance = processed(dagster_instance_config_schema(), merged)
    launcher = instance["run_launcher"]
    assert (launcher["module"], launcher["class"]) == ("dagster_k8s", "K8sRunLauncher")
    config = processed(K8sRunLauncher.config_type(), launcher["config"])
    assert config["instance_config_map"] == "dagster-instance"
    assert config["env_config_maps"] == ["recon-env"]
    assert "storage" in instance and "concurrency" in instance  # the deploy instance's blocks survive


def test_k8s_run_config_is_valid_k8s_job_executor_config() -> None:
    execution = load(DEPLOY_DIR / "k8s" / "run_config.yaml")["execution"]["config"]
    config = processed(k8s_job_executor.config_schema.config_type, execution)
    assert config["max_concurrent"] == 4
    assert config["step_k8s_config"]["container_config"]["resources"]["requests"]["cpu"] == "250m"
