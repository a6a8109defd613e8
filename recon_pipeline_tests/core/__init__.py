"""Tests of the vocabulary modules at the package root (money, nights, frames, ...), the test tiers and the
tests' own layout."""
