"""The findings list's card-brand filter on a real server over SQLite and PostgreSQL: a finding is of a brand
when its provider record (as the night's run kept it) or its ledger entry (as the PMS wrote the card type:
``VA``, `` Visa Credit ``, ``Master-Card``...) says so; ``unknown`` is a finding neither side names a brand
of; another property's record of the same id never counts; the list and its export hold the same rows."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import insert

from recon_pipeline.db.schema import discrepancies, ledger_entries, provider_records
from recon_pipeline_tests.support.desk_fixtures import NIGHT, NOW, add_user, finding, served_desk, sign_in
from recon_pipeline_tests.support.loopback import loopback_client

# p1's findings by record key: (provider record id, ledger entry id)
FINDINGS: dict[str, tuple[str | None, str | None]] = {
    "visa-record": ("ch_v", None),
    "visa-code": (None, "le_va"),
    "visa-spelled": (None, "le_vc"),
    "mastercard-hyphen": (None, "le_mc"),
    "amex-both": ("ch_ax", "le_ax"),
    "brand-nobody-knows": (None, "le_foo"),
    "no-card": (None, "le_none"),
    "record-not-kept": ("ch_gone", None),
    "other-propertys-record": ("ch_p2", None),  # p2 keeps a Visa record of this id; p1 none
}
# The card types as the PMS wrote them on p1's entries.
WRITTEN = {"le_va": "VA", "le_vc": " Visa Credit ", "le_mc": "Master-Card", "le_ax": "AX", "le_foo": "Foo"}
BY_BRAND = {
    "visa": {"visa-record", "visa-code", "visa-spelled"},
    "mastercard": {"mastercard-hyphen"},
    "amex": {"amex-both"},
    "jcb": set(),
    "unknown": {"brand-nobody-knows", "no-card", "record-not-kept", "other-propertys-record"},
}


def record(property_id: str, record_id: str, brand: str | None) -> dict[str, Any]:
    return {
        "property_id": property_id,
        "provider_record_id": record_id,
        "kind": "payment",
        "night": NIGHT,
        "provider": "stripe",
        "settled": True,
        "amount_minor": 10_000,
        "currency": "EUR",
        "card_brand": brand,
        "seen_at": NOW,
    }


def entry(entry_id: str, brand: str | None) -> dict[str, Any]:
    return {
        "entry_id": entry_id,
        "property_id": "p1",
        "kind": "payment",
        "amount_minor": 10_000,
        "currency": "EUR",
        "posted_at": NOW,
        "card_brand": brand,
    }


@pytest.fixture
def client(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[httpx.Client]:
    with served_desk(database_url, monkeypatch) as desk:
        with desk.engine.begin() as connection:
            connection.execute(
                insert(discrepancies),
                [
                    finding("p1", key, 100 + n, provider_record_id=record_id, ledger_entry_id=entry_id)
                    for n, (key, (record_id, entry_id)) in enumerate(FINDINGS.items())
                ],
            )
            connection.execute(
                insert(provider_records),
                [record("p1", "ch_v", "visa"), record("p1", "ch_ax", "amex"), record("p2", "ch_p2", "visa")],
            )
            connection.execute(
                insert(ledger_entries),
                [entry(entry_id, WRITTEN.get(entry_id)) for entry_id in ("le_none", *WRITTEN)],
            )
        add_user("ana", "analyst", "p1")
        with loopback_client(base_url=desk.base_url) as signed_in:
            assert sign_in(signed_in).status_code == 303
            yield signed_in


def listed(page: httpx.Response) -> set[str]:
    assert page.status_code == 200, page.text
    return set(re.findall(r'<a href="/findings/\d+(?:\?[^"]*)?">([^<]+)</a>', page.text))


def exported(response: httpx.Response) -> set[str]:
    assert response.status_code == 200, response.text
    lines = list(csv.reader(io.StringIO(response.content.decode("utf-8"), newline="")))
    header, *rest = lines
    data = rest[: rest.index([])] if [] in rest else rest
    return {dict(zip(header, line, strict=True))["Record"] for line in data}


@pytest.mark.parametrize("brand", sorted(BY_BRAND))
def test_a_brand_lists_the_findings_either_side_names_it_of_and_the_export_agrees(
    client: httpx.Client, brand: str
) -> None:
    params = {"property": "p1", "night_from": NIGHT, "night_to": NIGHT, "brand": brand}
    assert listed(client.get("/findings", params=params)) == BY_BRAND[brand]
    assert exported(client.get("/findings/export.csv", params=params)) == BY_BRAND[brand]


def test_a_brand_is_read_as_the_pms_writes_it_and_a_spelling_nobody_knows_is_refused(
    client: httpx.Client,
) -> None:
    assert listed(client.get("/findings", params={"brand": "VA"})) == BY_BRAND["visa"]
    assert listed(client.get("/findings", params={"brand": "Unknown"})) == BY_BRAND["unknown"]
    refused = client.get("/findings", params={"brand": "Foo"})
    assert refused.status_code == 400 and "unknown card brand &#39;Foo&#39;" in refused.text
    assert listed(client.get("/findings")) == set(FINDINGS)  # no brand: every finding
