"""Tests that the benchmark scripts (``benchmarks/``) still run and their checks hold."""
