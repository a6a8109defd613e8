"""Tests of ``recon_pipeline.ledger``: reading the PMS ledger."""
