"""Tests of ``recon_pipeline.review``: review rules, adjustments and their approvals."""
