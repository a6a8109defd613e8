"""Tests of ``recon_pipeline.postings``: the outbox, its drain and the posting adapters."""
