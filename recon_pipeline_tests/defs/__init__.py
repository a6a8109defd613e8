"""Tests of ``recon_pipeline.defs`` and the code location: assets, checks, sensors, schedules, executors,
deployment."""
