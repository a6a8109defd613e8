"""Tests of ``recon_pipeline.reports``: the report files and exports."""
