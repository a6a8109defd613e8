"""The simulated world is a wing of its own: production imports nothing from ``recon_pipeline.simulation``.

Each check imports a production module in a fresh interpreter (this process has long since loaded the
simulator through other tests) and lists the simulation modules it pulled in. The simulation registry
covers every registered provider.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from recon_pipeline.providers import PROVIDER_NAMES
from recon_pipeline.simulation.registry import SIMULATIONS, simulation_named


def simulation_modules_loaded_by(module: str) -> list[str]:
    """The simulation modules in ``sys.modules`` once a fresh ``python`` imports ``module``."""
    prefix = "recon_pipeline.simulation"
    code = (
        f"import json, sys; import {module}; "
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({prefix!r}))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize("module", ["recon_pipeline.providers", "recon_pipeline.definitions"])
def test_production_loads_no_simulation_code(module: str) -> None:
    assert simulation_modules_loaded_by(module) == []


def test_every_provider_is_simulated() -> None:
    assert set(SIMULATIONS) == set(PROVIDER_NAMES)
    for name in PROVIDER_NAMES:
        assert simulation_named(name).name == name
