"""Tests of ``recon_pipeline.events``: parsing, storing, processing and recovering provider events."""
