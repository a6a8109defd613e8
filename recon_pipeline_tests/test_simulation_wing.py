"""The simulated world is a wing of its own: production imports nothing from ``recon_pipeline.simulation``.

Each check imports a production module in a fresh interpreter (this process has long since loaded the
simulator through other tests) and lists the simulation modules it pulled in, and any module still at a
path the simulator used to live under. The simulation registry covers every registered provider.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from recon_pipeline.providers import PROVIDER_NAMES
from recon_pipeline.simulation.registry import SIMULATIONS, simulation_named

# Where simulator code lived inside production folders before it moved to ``recon_pipeline.simulation``.
OLD_SIMULATOR_MODULES = (
    "recon_pipeline.providers.simulator",
    "recon_pipeline.providers.stripe.simulator",
    "recon_pipeline.providers.stripe.rendering",
    "recon_pipeline.providers.razorpay.simulator",
    "recon_pipeline.providers.adyen.simulator",
    "recon_pipeline.postings.pms_simulator",
    "recon_pipeline.demo",
)


def simulation_modules_loaded_by(module: str) -> list[str]:
    """The simulation (or old simulator) modules in ``sys.modules`` once a fresh ``python`` imports
    ``module``."""
    prefixes = ("recon_pipeline.simulation", *OLD_SIMULATOR_MODULES)
    code = (
        f"import json, sys; import {module}; "
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({prefixes!r}))))"
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
