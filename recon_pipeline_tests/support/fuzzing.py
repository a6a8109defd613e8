"""Shared pieces of the fuzz suites (``test_fuzz_webhooks.py``, ``test_fuzz_provider.py``): the Hypothesis
profiles and the JSON strategies that both the webhook bodies and the provider responses are made of.

Profiles are applied per test through ``fuzz_settings`` rather than loaded globally, so a fuzz test runs the
same way whichever tests are collected with it. ``ci`` (the default) is derandomized and keeps no example
database: the same examples on every run and machine, so a CI failure reproduces locally as is.
``RECON_FUZZ_PROFILE=explore`` draws fresh random examples, ten times as many, and remembers failures in
``.hypothesis/``: for hunting locally, not for CI.
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

PROFILE_ENV = "RECON_FUZZ_PROFILE"
_EXPLORE_SCALE = 10
# Examples talk to real servers and databases: timing varies with the machine's load, so no deadline.
_COMMON: dict[str, Any] = {
    "deadline": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
settings.register_profile("ci", derandomize=True, database=None, **_COMMON)
settings.register_profile("explore", **_COMMON)


def fuzz_settings(max_examples: int) -> settings:
    """The active profile (``RECON_FUZZ_PROFILE``, default ``ci``) with this test's example budget."""
    name = os.environ.get(PROFILE_ENV, "ci")
    scale = _EXPLORE_SCALE if name == "explore" else 1
    return settings(settings.get_profile(name), max_examples=max_examples * scale)


class _Absent:
    """A field left out of an object: drawn like any other replacement value, and printed readably in a
    falsifying example."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()

# Integers around every boundary that matters here: int64 (the database, pandas), float precision (2**53),
# the float range (10**309 overflows a float comparison), and ordinary small values.
huge_integers = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**6),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.sampled_from([2**53 + 1, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 10**100, 10**400]),
)
# Any code point, lone surrogates included (json.dumps escapes them; a decoder then yields them back).
any_text = st.text(st.characters(exclude_categories=()), max_size=20)
json_scalars = st.one_of(
    st.none(), st.booleans(), huge_integers, st.floats(), st.sampled_from([10.5, 1e3, -0.0]), any_text
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(any_text, children, max_size=4),
    max_leaves=12,
)


def json_bytes(value: Any, ensure_ascii: bool = True, indent: int | None = None) -> bytes:
    """``value`` as JSON bytes; a lone surrogate that UTF-8 cannot carry is escaped instead (``\\udXXX``)."""
    text = json.dumps(value, ensure_ascii=ensure_ascii, indent=indent)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, indent=indent).encode("ascii")


def deep_nesting(depth: int) -> str:
    """A JSON array nested ``depth`` deep: Python's decoder recurses once per level."""
    return "[" * depth + "]" * depth


def long_integer(digits: int) -> str:
    """A JSON integer literal of ``digits`` digits (Python refuses to convert more than 4300 by default)."""
    return "1" * digits
