"""Adyen's Settlement details report into the provider-record frame: exact money, time zones, bad lines."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from recon_pipeline.providers.adyen.report import SETTLEMENT_DETAIL_COLUMNS, parse_settlement_report
from recon_pipeline.providers.adyen.simulator import csv_text
from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.records import PROVIDER_RECORD_COLUMNS

MERCHANT = "HotelAmsterdamECOM"
FILE = "settlement_detail_report_batch_7.csv"


def line(**values: str) -> dict[str, str]:
    base = {"Company Account": "HotelsCo", "Merchant Account": MERCHANT, "Batch Number": "7"}
    return {**base, **values}


def settled(psp: str, gross: str, currency: str = "EUR", **extra: str) -> dict[str, str]:
    return line(
        **{
            "Psp Reference": psp,
            "Merchant Reference": f"bk_{psp}",
            "Creation Date": "2026-01-05 10:00:00",
            "TimeZone": "CET",
            "Type": "Settled",
            "Modification Reference": psp,
            "Gross Currency": currency,
            "Gross Credit (GC)": gross,
            "Net Currency": currency,
            **extra,
        }
    )


def payout(created: str = "2026-01-07 07:00:00", zone: str = "CET") -> dict[str, str]:
    return line(
        **{"Creation Date": created, "TimeZone": zone, "Type": "MerchantPayout", "Net Currency": "EUR"}
    )


def parse(*lines: dict[str, str], text: str | None = None) -> object:
    return parse_settlement_report(text if text is not None else csv_text(lines), FILE, MERCHANT, 7)


def test_settled_refunded_and_fees_become_exact_signed_rows() -> None:
    batch = parse_settlement_report(
        csv_text(
            [
                settled(
                    "8815000000000001",
                    "10.50",
                    **{"Commission (NC)": "0.01", "Markup (NC)": "0.10", "Scheme Fees (NC)": "0.02"},
                    **{"Interchange (NC)": "0.07"},
                ),
                settled("8815000000000002", "1000", currency="JPY"),
                settled("8815000000000003", "1.234", currency="KWD"),
                line(
                    **{
                        "Psp Reference": "8815000000000001",
                        "Creation Date": "2026-01-05 12:30:00",
                        "TimeZone": "CET",
                        "Type": "Refunded",
                        "Modification Reference": "8815000000000009",
                        "Gross Currency": "EUR",
                        "Gross Debit (GC)": "0.30",
                        "Net Currency": "EUR",
                    }
                ),
                line(**{"Creation Date": "2026-01-07 07:00:00", "TimeZone": "CET", "Type": "Fee"}),
                payout(),
            ]
        ),
        FILE,
        MERCHANT,
        7,
    )
    frame = batch.records
    assert list(frame.columns) == list(PROVIDER_RECORD_COLUMNS)
    assert {c: str(t) for c, t in frame.dtypes.items()} == PROVIDER_RECORD_COLUMNS
    got = {
        (r.provider_record_id, r.kind): (r.amount_minor, r.currency, r.charge_id) for r in frame.itertuples()
    }
    assert got == {
        ("8815000000000001", "payment"): (1050, "EUR", "8815000000000001"),
        ("8815000000000001", "fee"): (-20, "EUR", "8815000000000001"),
        ("8815000000000002", "payment"): (1000, "JPY", "8815000000000002"),
        ("8815000000000003", "payment"): (1234, "KWD", "8815000000000003"),
        ("8815000000000009", "refund"): (-30, "EUR", "8815000000000001"),
    }
    assert frame["property_id"].isna().all() and frame["settled"].all()
    first = frame[frame["provider_record_id"].eq("8815000000000001")].iloc[0]
    assert first["booking_id"] == "bk_8815000000000001"
    assert first["created_at"] == datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # 10:00 CET
    assert batch.closed_at == datetime(2026, 1, 7, 6, 0, tzinfo=UTC)


def test_columns_are_read_by_name_in_any_order_with_extra_columns() -> None:
    text = csv_text([settled("8815000000000001", "10.00"), payout()])
    header, *rest = text.splitlines()
    columns = header.split(",")
    order = list(reversed(range(len(columns))))
    moved = [",".join([row.split(",")[i] for i in order] + ["x"]) for row in [header, *rest]]
    moved[0] = moved[0].rsplit(",", 1)[0] + ",Reserved4"
    batch = parse_settlement_report("\n".join(moved) + "\n", FILE, MERCHANT, 7)
    assert batch.records["amount_minor"].tolist() == [1000]


@pytest.mark.parametrize(
    ("bad", "column"),
    [
        ({"Gross Credit (GC)": "10.5x"}, "Gross Credit (GC)"),
        ({"Gross Credit (GC)": "10.505"}, "Gross Credit (GC)"),  # more decimals than EUR has
        ({"Gross Credit (GC)": "-1.00"}, "Gross Credit (GC)"),
        ({"Gross Credit (GC)": "1e12"}, "Gross Credit (GC)"),  # beyond the contract's bound
        ({"Gross Credit (GC)": "NaN"}, "Gross Credit (GC)"),
        ({"Gross Credit (GC)": ""}, "Gross Credit (GC)"),  # a settled payment of no amount
        ({"Merchant Reference": "bk\x00"}, "Merchant Reference"),
        ({"Gross Currency": "EURO"}, "Gross Currency"),
        ({"Creation Date": "05/01/2026 10:00"}, "Creation Date"),
        ({"TimeZone": "XYZT"}, "TimeZone"),
        ({"Psp Reference": ""}, "Psp Reference"),
        ({"Merchant Account": "OtherECOM"}, "Merchant Account"),
        ({"Batch Number": "8"}, "Batch Number"),
        ({"Markup (NC)": "0.1.0"}, "Markup (NC)"),
    ],
)
def test_a_bad_value_names_file_line_and_column(bad: dict[str, str], column: str) -> None:
    with pytest.raises(ProviderDataError) as raised:
        parse(settled("8815000000000001", "10.00"), settled("8815000000000002", "1.00", **bad), payout())
    assert str(raised.value).startswith(f"{FILE} line 3, column {column!r}")


def test_a_missing_column_a_short_line_and_a_batch_without_payout_fail() -> None:
    text = csv_text([settled("8815000000000001", "10.00"), payout()])
    without = text.replace(",Interchange (NC)", ",Something Else", 1)
    with pytest.raises(ProviderDataError, match=r"line 1, column 'Interchange \(NC\)': missing"):
        parse(text=without)
    header, first, last = text.splitlines()
    with pytest.raises(ProviderDataError, match="line 2, column '\\*'"):
        parse(text="\n".join([header, first.rsplit(",", 3)[0], last]))
    with pytest.raises(ProviderDataError, match="no MerchantPayout line"):
        parse(settled("8815000000000001", "10.00"))


def test_header_is_adyens_documented_order() -> None:
    assert SETTLEMENT_DETAIL_COLUMNS[:9] == (
        "Company Account",
        "Merchant Account",
        "Psp Reference",
        "Merchant Reference",
        "Payment Method",
        "Creation Date",
        "TimeZone",
        "Type",
        "Modification Reference",
    )
    assert csv_text([]).strip() == ",".join(SETTLEMENT_DETAIL_COLUMNS)
