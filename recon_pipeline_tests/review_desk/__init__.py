"""Tests of ``recon_pipeline.review_desk``: the review desk web application."""
