"""Tests of ``recon_pipeline.metrics``: the operational metrics and their checks."""
