"""Adyen's Settlement details report into the provider-record frame: exact money, time zones, bad lines."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from recon_pipeline.providers.adyen.report import (
    SETTLEMENT_DETAIL_COLUMNS,
    BatchPayout,
    SettlementBatch,
    parse_settlement_report,
    payouts_of,
    records_of,
    report_file_name,
)
from recon_pipeline.providers.errors import ProviderDataError
from recon_pipeline.providers.records import PROVIDER_RECORD_COLUMNS
from recon_pipeline.reconcile.diff import diff_night
from recon_pipeline.simulation.adyen.api import csv_text
from recon_pipeline_tests.support.night_frames import entry, ledger

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


def modification(kind: str, psp: str, reference: str, **money: str) -> dict[str, str]:
    """A modification line of payment ``psp`` (a refund, a chargeback, a reversal...) on Jan 6, 09:30 CET."""
    return line(
        **{
            "Psp Reference": psp,
            "Merchant Reference": f"bk_{psp}",
            "Creation Date": "2026-01-06 09:30:00",
            "TimeZone": "CET",
            "Type": kind,
            "Modification Reference": reference,
            "Gross Currency": "EUR",
            "Exchange Rate": "1",
            "Net Currency": "EUR",
            **money,
        }
    )


def batch_line(kind: str, reference: str, **money: str) -> dict[str, str]:
    """A line of the batch itself (no payment): a fee total, a correction, a payout."""
    return line(
        **{
            "Creation Date": "2026-01-07 06:55:00",
            "TimeZone": "CET",
            "Type": kind,
            "Modification Reference": reference,
            "Net Currency": "EUR",
            **money,
        }
    )


PAYMENT, DISPUTE = "8815000000000001", "8815000000000051"
SECOND = f"{DISPUTE}:second_chargeback"  # the second chargeback of the dispute: a movement of its own


def test_chargebacks_and_their_reversal_become_dispute_rows_with_the_chargeback_fee() -> None:
    batch = parse(
        modification(
            "Chargeback",
            PAYMENT,
            DISPUTE,
            **{"Gross Debit (GC)": "100.50", "Net Debit (NC)": "115.50", "Commission (NC)": "15.00"},
        ),
        modification(
            "ChargebackReversed",
            PAYMENT,
            DISPUTE,
            **{"Gross Credit (GC)": "100.50", "Net Credit (NC)": "100.50"},
        ),
        modification(
            "SecondChargeback",
            PAYMENT,
            DISPUTE,
            **{"Gross Debit (GC)": "100.50", "Net Debit (NC)": "100.60", "Markup (NC)": "0.10"},
        ),
        payout(),
    )
    assert isinstance(batch, SettlementBatch)
    frame = batch.records
    assert {c: str(t) for c, t in frame.dtypes.items()} == PROVIDER_RECORD_COLUMNS
    got = {
        (r.provider_record_id, r.kind): (r.amount_minor, r.currency, r.charge_id, r.status, r.booking_id)
        for r in frame.itertuples()
    }
    booking = f"bk_{PAYMENT}"
    assert got == {
        (DISPUTE, "dispute"): (-10_050, "EUR", PAYMENT, "chargeback", booking),
        (DISPUTE, "fee"): (-1_500, "EUR", PAYMENT, "settled", booking),
        (DISPUTE, "dispute_reversal"): (10_050, "EUR", PAYMENT, "chargeback_reversed", booking),
        (SECOND, "dispute"): (-10_050, "EUR", PAYMENT, "second_chargeback", booking),
        (SECOND, "fee"): (-10, "EUR", PAYMENT, "settled", booking),
    }
    assert frame["property_id"].isna().all() and frame["settled"].all()
    assert set(frame["created_at"]) == {datetime(2026, 1, 6, 8, 30, tzinfo=UTC)}
    assert batch.batch_lines == () and batch.unreconciled_counts == {}


def test_batch_lines_are_kept_and_counted_and_payouts_are_the_batchs() -> None:
    batch = parse(
        settled(PAYMENT, "200.00", **{"Net Credit (NC)": "197.00", "Interchange (NC)": "3.00"}),
        batch_line("Fee", "Transaction Fees", **{"Net Debit (NC)": "1.25"}),
        batch_line("DepositCorrection", "Deposit Correction", **{"Net Debit (NC)": "78.93"}),
        batch_line("InvoiceDeduction", "Invoice 2026-01", **{"Net Credit (NC)": "5.00"}),
        batch_line("Fee", "Transaction Fees"),  # no amount at all: kept, counted, worth nothing
        modification(
            "RefundedReversed",
            PAYMENT,
            "8815000000000061",
            **{"Gross Credit (GC)": "3.00", "Net Credit (NC)": "3.00"},
        ),
        batch_line("MerchantPayout", "TX4711 batch 7", **{"Net Debit (NC)": "124.82"}),
        batch_line("MerchantPayout", "TX4712 batch 7", **{"Net Currency": "GBP", "Net Credit (NC)": "2.50"}),
    )
    assert isinstance(batch, SettlementBatch)
    assert rows_of(batch) == {(PAYMENT, "payment", 20_000), (PAYMENT, "fee", -300)}
    assert batch.unreconciled_counts == {"Fee": 2, "DepositCorrection": 1, "InvoiceDeduction": 1,
                                         "RefundedReversed": 1}  # fmt: skip
    assert [
        (b.record_type, b.reference, b.psp_reference, b.net_minor, b.currency) for b in batch.batch_lines
    ] == [
        ("Fee", "Transaction Fees", None, -125, "EUR"),
        ("DepositCorrection", "Deposit Correction", None, -7_893, "EUR"),
        ("InvoiceDeduction", "Invoice 2026-01", None, 500, "EUR"),
        ("Fee", "Transaction Fees", None, 0, None),
        ("RefundedReversed", "8815000000000061", PAYMENT, 300, "EUR"),
    ]
    # what the bank receives: the movements' net plus the batch lines, per currency
    assert 19_700 - 125 - 7_893 + 500 + 300 == 12_482
    closed = datetime(2026, 1, 7, 5, 55, tzinfo=UTC)
    assert payouts_of([batch]) == [
        BatchPayout(MERCHANT, 7, "TX4711 batch 7", 12_482, "EUR", closed),
        BatchPayout(MERCHANT, 7, "TX4712 batch 7", -250, "GBP", closed),
    ]
    assert batch.closed_at == closed


def rows_of(batch: SettlementBatch) -> set[tuple[str, str, int]]:
    return {(r.provider_record_id, r.kind, r.amount_minor) for r in batch.records.itertuples()}


@pytest.mark.parametrize(
    ("bad_line", "column"),
    [
        (modification("Chargeback", PAYMENT, DISPUTE, **{"Gross Debit (GC)": "1O.00"}), "Gross Debit (GC)"),
        (modification("Chargeback", PAYMENT, DISPUTE), "Gross Debit (GC)"),  # a chargeback of no amount
        (modification("Chargeback", PAYMENT, "", **{"Gross Debit (GC)": "1.00"}), "Modification Reference"),
        (modification("Chargeback", "", DISPUTE, **{"Gross Debit (GC)": "1.00"}), "Psp Reference"),
        (
            modification(
                "Chargeback", PAYMENT, DISPUTE, **{"Gross Debit (GC)": "1.00", "Commission (NC)": "-15"}
            ),
            "Commission (NC)",
        ),
        (
            modification("ChargebackReversed", PAYMENT, DISPUTE, **{"Gross Debit (GC)": "1.00"}),
            "Gross Credit (GC)",  # a reversal credits: its debit column is not its amount
        ),
        (batch_line("Fee", "Transaction Fees", **{"Net Debit (NC)": "1.255"}), "Net Debit (NC)"),
        (
            batch_line("DepositCorrection", "x", **{"Net Currency": "", "Net Debit (NC)": "1.00"}),
            "Net Currency",
        ),
        (batch_line("InvoiceDeduction", "x", **{"Creation Date": "2026-13-01 00:00:00"}), "Creation Date"),
        (batch_line("MerchantPayout", "TX1", **{"Net Debit (NC)": "ten"}), "Net Debit (NC)"),
        (batch_line("MerchantPayout", "TX1", **{"Net Currency": "E"}), "Net Currency"),
    ],
)
def test_a_bad_value_of_any_record_type_names_file_line_and_column(
    bad_line: dict[str, str], column: str
) -> None:
    with pytest.raises(ProviderDataError) as raised:
        parse(settled("8815000000000009", "10.00"), bad_line, payout())
    message = str(raised.value)
    assert message.startswith(f"{FILE} line 3, column {column!r}: ") and "\n" not in message


def test_two_lines_of_one_movement_in_a_report_are_refused() -> None:
    chargeback = modification("Chargeback", PAYMENT, DISPUTE, **{"Gross Debit (GC)": "100.50"})
    with pytest.raises(ProviderDataError) as raised:
        parse(chargeback, chargeback, payout())
    assert str(raised.value) == (
        f"{FILE} line 3, column 'Modification Reference': a second dispute row of {DISPUTE!r} in one report"
    )


def test_a_second_chargeback_in_a_later_batch_is_a_movement_of_its_own() -> None:
    """Chargeback and reversal in batch 7, the second chargeback of the same dispute (same reference) in
    batch 9: a lookup spanning both holds three movements, and a ledger booking each matches each."""
    first = parse(
        modification("Chargeback", PAYMENT, DISPUTE, **{"Gross Debit (GC)": "100.50"}),
        modification("ChargebackReversed", PAYMENT, DISPUTE, **{"Gross Credit (GC)": "100.50"}),
        payout(),
    )
    later = parse_settlement_report(
        csv_text(
            [
                {
                    **modification("SecondChargeback", PAYMENT, DISPUTE, **{"Gross Debit (GC)": "100.50"}),
                    "Batch Number": "9",
                    "Creation Date": "2026-01-20 09:30:00",
                },
                {**payout("2026-01-21 07:00:00"), "Batch Number": "9"},
            ]
        ),
        report_file_name(9),
        MERCHANT,
        9,
    )
    assert isinstance(first, SettlementBatch) and isinstance(later, SettlementBatch)
    records = records_of([first, later])
    keys = list(zip(records["provider_record_id"], records["kind"], strict=True))
    assert keys == [(DISPUTE, "dispute"), (DISPUTE, "dispute_reversal"), (SECOND, "dispute")]
    booked = [
        entry(f"le_{i}", rid, kind, amount)
        for i, (rid, kind, amount) in enumerate(
            zip(*(records[c] for c in ("provider_record_id", "kind", "amount_minor")), strict=True)
        )
    ]
    result = diff_night(records, ledger(*booked))
    assert result.findings.empty and result.matched_count == 3
    # Without the second chargeback's entry the finding names it, not the first chargeback.
    result = diff_night(records, ledger(*booked[:2]))
    assert result.findings[["category", "record_key"]].values.tolist() == [
        ["missing_in_ledger", f"{SECOND}:dispute"]
    ]
