"""Stripe's webhook signature scheme, checked without any I/O."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from recon_pipeline.providers.stripe.webhook import (
    SignatureError,
    compute_signature,
    parse_header,
    sign,
    verify,
)

BODY = b'{"id": "evt_1", "type": "charge.succeeded"}'
SECRET = "whsec_current"
OLD_SECRET = "whsec_previous"
T = 1_760_000_000


def _reason(
    body: bytes, header: str | None, secrets: list[str], now: float = T, tolerance_s: int = 300
) -> str:
    with pytest.raises(SignatureError) as raised:
        verify(body, header, secrets, tolerance_s=tolerance_s, now=now)
    return raised.value.reason


def test_signature_is_stripes_hmac_of_timestamp_dot_body() -> None:
    expected = hmac.new(SECRET.encode(), f"{T}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert compute_signature(BODY, SECRET, T) == expected
    assert sign(BODY, SECRET, T) == f"t={T},v1={expected}"


def test_valid_signature_returns_the_signed_timestamp() -> None:
    assert verify(BODY, sign(BODY, SECRET, T), [SECRET], now=T) == T


def test_tampered_body_is_refused() -> None:
    assert _reason(BODY + b" ", sign(BODY, SECRET, T), [SECRET]) == "no_matching_signature"


def test_wrong_secret_is_refused() -> None:
    assert _reason(BODY, sign(BODY, "whsec_attacker", T), [SECRET]) == "no_matching_signature"


def test_rotation_accepts_either_of_two_secrets() -> None:
    for signing_secret in (SECRET, OLD_SECRET):
        assert verify(BODY, sign(BODY, signing_secret, T), [SECRET, OLD_SECRET], now=T) == T
    assert _reason(BODY, sign(BODY, OLD_SECRET, T), [SECRET]) == "no_matching_signature"


def test_any_of_several_v1_values_may_match() -> None:
    good = compute_signature(BODY, SECRET, T)
    bogus = "0" * 64
    for header in (f"t={T},v1={bogus},v1={good}", f"t={T},v1={good},v1={bogus}", f"v1={good}, t={T}"):
        assert verify(BODY, header, [SECRET], now=T) == T
    assert _reason(BODY, f"t={T},v1={bogus},v1={bogus[:-1]}1", [SECRET]) == "no_matching_signature"


def test_v0_only_is_not_enough() -> None:
    legacy = compute_signature(BODY, SECRET, T)
    assert _reason(BODY, f"t={T},v0={legacy}", [SECRET]) == "no_v1_signature"
    assert _reason(BODY, f"t={T}", [SECRET]) == "no_v1_signature"


def test_v0_beside_v1_is_ignored() -> None:
    header = f"{sign(BODY, SECRET, T)},v0={'f' * 64}"
    assert verify(BODY, header, [SECRET], now=T) == T


@pytest.mark.parametrize("offset", [-300, 300, 0])
def test_timestamp_at_the_tolerance_boundary_is_accepted(offset: int) -> None:
    assert verify(BODY, sign(BODY, SECRET, T + offset), [SECRET], now=T) == T + offset


@pytest.mark.parametrize("offset", [-301, 301, -86_400])
def test_stale_and_future_timestamps_are_refused(offset: int) -> None:
    assert _reason(BODY, sign(BODY, SECRET, T + offset), [SECRET]) == "timestamp_outside_tolerance"


def test_tolerance_is_configurable_and_fractional_now_counts() -> None:
    header = sign(BODY, SECRET, T)
    assert verify(BODY, header, [SECRET], tolerance_s=10, now=T + 10) == T
    assert _reason(BODY, header, [SECRET], now=T + 10.001, tolerance_s=10) == "timestamp_outside_tolerance"


def test_forged_signature_with_stale_timestamp_says_no_match() -> None:
    # The signature is checked first: "outside tolerance" is only ever said of an authentic delivery.
    assert _reason(BODY, sign(BODY, "whsec_attacker", T - 10_000), [SECRET]) == "no_matching_signature"


@pytest.mark.parametrize("header", [None, "", "   "])
def test_missing_header(header: str | None) -> None:
    assert _reason(BODY, header, [SECRET]) == "missing_header"


@pytest.mark.parametrize(
    "header",
    [
        "garbage",
        "v1=abc",  # no timestamp
        f"t=,v1={'a' * 64}",
        f"t=abc,v1={'a' * 64}",
        f"t=-5,v1={'a' * 64}",
        f"t=+{T},v1={'a' * 64}",
        f"t=1_000,v1={'a' * 64}",
        f"t={T},t={T},v1={'a' * 64}",  # two timestamps
        f"t={T},v1",
        f"t={T},v1=",
        f"t={T},,v1={'a' * 64}",
        f"t={T},=x",
        f"t={T},v1={'é' * 64}",  # not ASCII
    ],
)
def test_malformed_headers(header: str) -> None:
    assert _reason(BODY, header, [SECRET]) == "malformed_header"


def test_parse_header_keeps_every_v1_in_order() -> None:
    parsed = parse_header(f"t={T},v1=aa,v0=cc,v1=bb,x9=future")
    assert parsed.timestamp == T
    assert parsed.signatures == ("aa", "bb")


def test_no_secrets_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="secret"):
        verify(BODY, sign(BODY, SECRET, T), [], now=T)


def test_error_reason_never_contains_the_secret() -> None:
    with pytest.raises(SignatureError) as raised:
        verify(BODY, sign(BODY, "whsec_other", T), [SECRET], now=T)
    assert SECRET not in str(raised.value) and SECRET not in repr(raised.value)
