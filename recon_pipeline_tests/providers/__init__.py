"""Tests of ``recon_pipeline.providers``: the clients, adapters, reports, webhook signatures and rate limits
of each provider."""
