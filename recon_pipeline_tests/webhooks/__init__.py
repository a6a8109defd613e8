"""Tests of ``recon_pipeline.webhooks``: the webhook receiver."""
