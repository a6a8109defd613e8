"""Tests of ``recon_pipeline.reconcile``: the night diff, its findings and the night report."""
