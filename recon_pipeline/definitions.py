"""The code location: every Dagster definition of recon-pipeline, loaded from ``recon_pipeline/defs/``.

Importing this module reads no environment and imports none of ``defs/``: ``@dg.definitions`` defers the
work to when Dagster loads the code location (``dagster dev``, the code server, a run worker). Settings
that shape the definitions themselves (RECON_FIRST_NIGHT, RECON_EXECUTOR, RECON_STEP_RETRY_DELAY_S,
RECON_EVENTS_SENSOR_INTERVAL_S, RECON_RUN_MAX_RUNTIME_S) are read then, and a bad one fails the load
naming it; the resources' settings are read when a run starts, and a bad one fails the run naming it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import dagster as dg

# Dagster 1.13 passes its beta `owners` parameter whenever it copies a sensor (binding the resources of
# every sensor, each time a process loads the code): a warning per sensor and load that no one can act on.
OWNERS_BETA_WARNING = r"Parameter `owners` of initializer `SensorDefinition\.__init__` is currently in beta"


def build_definitions() -> dg.Definitions:
    """Every definition of ``defs/`` (``[tool.dg]`` in pyproject.toml names the folder); from then on
    the process ignores Dagster's own warning about its sensors' ``owners`` (that warning alone)."""
    warnings.filterwarnings("ignore", OWNERS_BETA_WARNING, dg.BetaWarning)
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions()
