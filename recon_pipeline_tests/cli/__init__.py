"""Tests of the ``recon`` command line."""
