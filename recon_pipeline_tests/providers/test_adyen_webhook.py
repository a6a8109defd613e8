"""Adyen notification HMAC and items: Adyen's own test vector, the official library both ways, parsing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from Adyen.util import generate_notification_sig, is_valid_hmac_notification

from recon_pipeline.providers.adyen import PROVIDER
from recon_pipeline.providers.adyen.webhook import compute_signature, verify_item
from recon_pipeline.providers.errors import SignatureError
from recon_pipeline.providers.events import EventFormatError
from recon_pipeline.simulation.adyen.api import notification_item, report_available_item, signed
from recon_pipeline_tests.support.provider_fixtures import notification_body

KEY = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
OLD_KEY = "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00"


def test_adyens_published_vector() -> None:
    """The vector of Adyen's PHP library test (HmacSignatureTest::testNotificationRequestItemHmac)."""
    item = {
        "pspReference": "7914073381342284",
        "merchantAccountCode": "TestMerchant",
        "merchantReference": "TestPayment-1407325143704",
        "amount": {"value": 1130, "currency": "EUR"},
        "eventCode": "AUTHORISATION",
        "success": "true",
    }
    assert compute_signature(item, OLD_KEY) == "Ny9gS2veKo5E4w8/OL6xz1/wvT/hYkAXy1xNc/QvO4I="


def refund_item(**changes: Any) -> dict[str, Any]:
    item = notification_item(
        "REFUND",
        "8815000000000009",
        original_reference="8815000000000001",
        amount_minor=3000,
        merchant_reference="bk_1",
        event_date="2026-01-05T12:30:00+01:00",
    )
    return {**item, **changes}


def test_our_signature_is_valid_for_the_official_library_and_its_for_us() -> None:
    ours = signed(refund_item(), KEY)
    assert is_valid_hmac_notification(json.loads(notification_body([ours])), KEY)
    assert not is_valid_hmac_notification(
        json.loads(notification_body([signed(refund_item(), OLD_KEY)])), KEY
    )
    theirs = refund_item(
        additionalData={"hmacSignature": generate_notification_sig(refund_item(), KEY).decode()}
    )
    verify_item(theirs, [KEY])
    assert theirs["additionalData"]["hmacSignature"] == ours["additionalData"]["hmacSignature"]


def test_rotation_tampering_and_missing_signature() -> None:
    item = signed(refund_item(), OLD_KEY)
    verify_item(item, [KEY, OLD_KEY])  # the old key still verifies while it is being rotated out
    with pytest.raises(SignatureError, match="no_matching_signature"):
        verify_item(item, [KEY])
    with pytest.raises(SignatureError, match="no_matching_signature"):
        verify_item({**item, "amount": {"value": 30000, "currency": "EUR"}}, [KEY, OLD_KEY])
    with pytest.raises(SignatureError, match="missing_header"):
        verify_item(refund_item(), [KEY])
    with pytest.raises(ValueError, match="hexadecimal"):
        compute_signature(refund_item(), "not-hex")


def test_a_delivery_is_read_item_by_item_and_acknowledged() -> None:
    authorisation = notification_item(
        "AUTHORISATION", "8815000000000001", amount_minor=10_000, event_date="2026-01-05T10:00:00+01:00"
    )
    report = report_available_item(
        "https://ca-test.adyen.com", "SimulatorHotelsECOM", 7, event_date="2026-01-07T07:00:00+01:00"
    )
    body = notification_body([signed(authorisation, KEY), signed(refund_item(), KEY), signed(report, KEY)])
    events = PROVIDER.read_delivery(body, {}, [KEY], now=0)
    assert [(e.event.event_id, e.event.provider_payment_id, e.event.account) for e in events] == [
        ("AUTHORISATION:8815000000000001:true", "8815000000000001", "SimulatorHotelsECOM"),
        ("REFUND:8815000000000009:true", "8815000000000001", "SimulatorHotelsECOM"),
        ("REPORT_AVAILABLE:settlement_detail_report_batch_7.csv:true", None, "SimulatorHotelsECOM"),
    ]
    assert events[0].event.created == 1_767_603_600  # 2026-01-05T09:00:00Z
    assert json.loads(events[2].payload)["NotificationRequestItem"]["reason"] == (
        "https://ca-test.adyen.com/reports/download/MerchantAccount/SimulatorHotelsECOM/"
        "settlement_detail_report_batch_7.csv"
    )
    assert PROVIDER.acknowledgement([True, False, True]) == ("[accepted]", "text/plain")
    failed = signed(notification_item("AUTHORISATION", "8815000000000001", success=False), KEY)
    again = PROVIDER.read_delivery(notification_body([failed]), {}, [KEY], now=0)
    assert again[0].event.event_id == "AUTHORISATION:8815000000000001:false"


def test_dispute_events_are_about_the_disputed_payment_and_distinct_per_event() -> None:
    """Every event of one dispute shares the dispute's pspReference; originalReference is the payment."""
    dispute = "8815000000000071"
    items = [
        signed(
            notification_item(code, dispute, original_reference="8815000000000001", amount_minor=10_050), KEY
        )
        for code in ("CHARGEBACK", "CHARGEBACK_REVERSED", "SECOND_CHARGEBACK")
    ]
    events = PROVIDER.read_delivery(notification_body(items), {}, [KEY], now=0)
    assert [(e.event.event_id, e.event.event_type, e.event.provider_payment_id) for e in events] == [
        (f"CHARGEBACK:{dispute}:true", "CHARGEBACK", "8815000000000001"),
        (f"CHARGEBACK_REVERSED:{dispute}:true", "CHARGEBACK_REVERSED", "8815000000000001"),
        (f"SECOND_CHARGEBACK:{dispute}:true", "SECOND_CHARGEBACK", "8815000000000001"),
    ]


def test_one_bad_item_refuses_the_whole_delivery() -> None:
    good = signed(refund_item(), KEY)
    with pytest.raises(SignatureError):
        PROVIDER.read_delivery(notification_body([good, refund_item()]), {}, [KEY], now=0)
    with pytest.raises(EventFormatError, match="eventCode"):
        PROVIDER.read_delivery(
            notification_body([signed(refund_item(eventCode="PAYOUT"), KEY)]), {}, [KEY], 0
        )
    no_original = {k: v for k, v in refund_item().items() if k != "originalReference"}
    with pytest.raises(EventFormatError, match="originalReference"):
        PROVIDER.read_delivery(notification_body([signed(no_original, KEY)]), {}, [KEY], 0)
    with pytest.raises(EventFormatError, match="eventDate"):
        PROVIDER.read_delivery(
            notification_body([signed(refund_item(eventDate="yesterday"), KEY)]), {}, [KEY], 0
        )
    for body in (b"{", b"[]", b'{"notificationItems": []}', b'{"notificationItems": [{"x": 1}]}'):
        with pytest.raises(EventFormatError):
            PROVIDER.read_delivery(body, {}, [KEY], 0)


def test_api_key_shape() -> None:
    assert PROVIDER.check_api_key("ws@Company.Hotels:s3cret") is None
    reason = PROVIDER.check_api_key("s3cret")
    assert reason is not None and "s3cret" not in reason
