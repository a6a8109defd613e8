"""The matcher's policy as a property states it (JSON), and the decided matches it is handed."""

from __future__ import annotations

from datetime import timedelta

import pytest

from recon_pipeline.reconcile.matching import TIERS, KnownMatch, MatchPolicy, match_key


def test_no_policy_is_the_default() -> None:
    assert MatchPolicy.parse(None) == MatchPolicy.parse("") == MatchPolicy.parse("  ") == MatchPolicy()
    assert MatchPolicy().tiers == TIERS
    assert MatchPolicy().threshold == 0.8
    assert MatchPolicy().window == timedelta(hours=3)
    assert MatchPolicy().max_split == 8


def test_a_policy_orders_and_drops_tiers_and_sets_its_figures() -> None:
    policy = MatchPolicy.parse(
        '{"tiers": ["booking_amount", "reference"], "threshold": 0.9, "window_minutes": 90, "max_split": 4}'
    )
    assert policy == MatchPolicy(("booking_amount", "reference"), 0.9, timedelta(minutes=90), 4)
    assert MatchPolicy.parse(policy.as_json()) == policy
    assert MatchPolicy.parse('{"tiers": []}').tiers == ()  # only the exact id


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "match_policy is not JSON"),
        ("[1]", "must be a JSON object, not list"),
        ('{"tier": []}', "unknown keys ['tier']"),
        ('{"tiers": ["fuzzy"]}', "unknown match tiers ['fuzzy']"),
        ('{"tiers": "reference"}', "must be a list of tier names"),
        ('{"tiers": ["split", "split"]}', "name a tier twice"),
        ('{"threshold": 0}', "above 0 and at most 1"),
        ('{"threshold": 1.5}', "above 0 and at most 1"),
        ('{"threshold": "high"}', "threshold must be a number"),
        ('{"threshold": true}', "threshold must be a number"),
        ('{"window_minutes": -5}', "must not be negative"),
        ('{"max_split": 1}', "from 2 to 12"),
        ('{"max_split": 40}', "from 2 to 12"),
        ('{"max_split": 2.5}', "must be a whole number"),
    ],
)
def test_a_policy_is_refused_in_one_line_naming_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")) as raised:
        MatchPolicy.parse(text)
    assert "\n" not in str(raised.value)


def test_a_known_match_is_keyed_by_its_sides_whatever_their_order() -> None:
    known = KnownMatch(("ch_2", "ch_1"), ("le_9",), "payment", "person")
    assert known.match_key == "ch_1+ch_2=le_9" == match_key(["ch_1", "ch_2"], ["le_9"])
    with pytest.raises(ValueError, match="at least one provider record and one ledger entry"):
        KnownMatch((), ("le_1",), "payment", "person")
