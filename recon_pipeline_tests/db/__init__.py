"""Tests of ``recon_pipeline.db``: migrations and the idempotent writers."""
