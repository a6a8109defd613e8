"""Tests of the simulated world: the provider simulators, the demo and its fleet."""
