"""Tests of ``recon_pipeline.batches``: planning, running and committing batches of property-nights."""
