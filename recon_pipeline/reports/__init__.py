"""Analyst reports: per-partition exports (CSV, Parquet, HTML) and the cross-night overviews.

Pure rendering and file writing, no Dagster: the assets in ``recon_pipeline.defs`` call these.
"""
