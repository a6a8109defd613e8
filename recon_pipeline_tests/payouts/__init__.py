"""Tests of ``recon_pipeline.payouts``: payouts traced to nights and matched to the bank."""
