"""Benchmark: the review desk's pages and exports over a fleet's worth of findings (issue 16).

    python -m benchmarks.review_desk [--properties 2000] [--nights 14] [--requests 10] \
        [--export-requests 2] [--postgres-url URL] [--json]

Setup (timed apart): a migrated scratch PostgreSQL database seeded through ``db/bulk.py``'s COPY path,
one night at a time: per property-night ``FINDINGS_PER_NIGHT`` findings (open, acknowledged, resolved, some
cleared), ``ADJUSTMENTS_PER_NIGHT`` adjustments (one in five approved, with a ``posting_outbox`` row, half
of those posted) and a ``night_reconciliations`` row; a payout per property every other night; two users
added with ``review_desk.users.add_user``: an admin over every property and an analyst over one.

Timed: the desk on a real loopback server (``ServerThread``), each user signed in through its form, then
``--requests`` sequential GETs of each page (``--export-requests`` of each export, which the admin's
unfiltered findings list takes to its ``EXPORT_LIMIT`` rows). Reported per page and user: p50/p95/max
latency, response size, status codes; for the exports also rows and rows per second. A page slower than
``SLOW_P95_S`` at p95 is named in ``slow_pages``: a finding to fix, not a failure (timings on a shared
machine are measurements). The run fails (exit 1) only if a request was not answered 200.
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import json
import os
import statistics
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import httpx
from openpyxl import load_workbook
from sqlalchemy import Engine, Table, func, select

from benchmarks.environment import add_postgres_url
from recon_pipeline.categories import RECONCILIATION_CATEGORIES
from recon_pipeline.db import migrations
from recon_pipeline.db.bulk import copy_insert_new
from recon_pipeline.db.engine import make_engine
from recon_pipeline.db.schema import (
    adjustments,
    discrepancies,
    night_reconciliations,
    payouts,
    posting_outbox,
    properties,
)
from recon_pipeline.keys import adjustment_id, adjustment_idempotency_key
from recon_pipeline.review_desk.app import DeskSettings, review_desk_app
from recon_pipeline.review_desk.pages.exports import EXPORT_LIMIT
from recon_pipeline.review_desk.users import add_user
from recon_pipeline.serving import ServerThread
from recon_pipeline_tests.support.desk_fixtures import PASSWORD, sign_in
from recon_pipeline_tests.support.scratch import scratch_database

FINDINGS_PER_NIGHT = 20
ADJUSTMENTS_PER_NIGHT = 5
LAST_NIGHT = date(2026, 11, 30)
NOW = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
SLOW_P95_S = 1.0
ADMIN = "bench_admin"
ANALYST = "bench_analyst"
REVIEW_STATES = ("open", "open", "open", "acknowledged", "resolved")
EXPORTS = ("/findings/export.csv", "/findings/export.xlsx")
PAGE_ORDER = (
    "nights",
    "findings",
    "findings filtered",
    "findings by difference",
    "findings searched by booking",
    "findings by card brand",
    "finding",
    "adjustments proposed",
    "adjustments to decide",
    "legend",
    "payouts",
    "night",
    "findings.csv",
    "findings.xlsx",
)


@dataclass(frozen=True)
class Fleet:
    """What was seeded: its property ids (sorted) and nights (oldest first)."""

    property_ids: tuple[str, ...]
    nights: tuple[str, ...]


def fleet(properties_count: int, nights_count: int) -> Fleet:
    return Fleet(
        tuple(f"hotel_{index:05d}" for index in range(properties_count)),
        tuple((LAST_NIGHT - timedelta(days=back)).isoformat() for back in reversed(range(nights_count))),
    )


# --- seeding ---------------------------------------------------------------------------------------------


def seed(engine: Engine, seeded: Fleet) -> dict[str, int]:
    """The fleet's rows, a night per transaction through COPY; the row count of each table."""
    counts = {"findings": 0, "adjustments": 0, "postings": 0, "night_reconciliations": 0, "payouts": 0}
    with engine.begin() as connection:
        _copy(
            connection,
            properties,
            [
                {"property_id": p, "name": f"Hotel {p}", "timezone": "Europe/Paris", "currency": "EUR"}
                for p in seeded.property_ids
            ],
            "property_id",
        )
    for night_index, night in enumerate(seeded.nights):
        rows = _night_rows(seeded.property_ids, night, night_index)
        with engine.begin() as connection:
            counts["findings"] += _copy(connection, discrepancies, rows["findings"], "record_key")
            counts["adjustments"] += _copy(connection, adjustments, rows["adjustments"], "adjustment_id")
            counts["postings"] += _copy(connection, posting_outbox, rows["postings"], "adjustment_id")
            counts["night_reconciliations"] += _copy(
                connection, night_reconciliations, rows["runs"], "run_id"
            )
            counts["payouts"] += _copy(connection, payouts, rows["payouts"], "payout_id")
    with engine.begin() as connection:
        add_user(connection, ADMIN, "admin", seeded.property_ids, PASSWORD, NOW)
        add_user(connection, ANALYST, "analyst", seeded.property_ids[:1], PASSWORD, NOW)
    return counts


def _copy(connection: Any, table: Table, rows: list[dict[str, Any]], key_column: str) -> int:
    return len(copy_insert_new(connection, table, rows, key_column)) if rows else 0


def _night_rows(
    property_ids: tuple[str, ...], night: str, night_index: int
) -> dict[str, list[dict[str, Any]]]:
    """One night's rows for every property (record keys, run and payout ids unique across the fleet)."""
    rows: dict[str, list[dict[str, Any]]] = {
        "findings": [],
        "adjustments": [],
        "postings": [],
        "runs": [],
        "payouts": [],
    }
    detected = datetime.fromisoformat(night).replace(tzinfo=UTC) + timedelta(days=1, hours=3)
    for number, property_id in enumerate(property_ids):
        for index in range(FINDINGS_PER_NIGHT):
            rows["findings"].append(_finding(property_id, night, index, detected))
        for index in range(ADJUSTMENTS_PER_NIGHT):
            adjustment, posting = _adjustment(property_id, night, index, detected)
            rows["adjustments"].append(adjustment)
            if posting is not None:
                rows["postings"].append(posting)
        run_id = f"run_{night}_{number // 250:03d}"
        rows["runs"].append(
            {
                "property_id": property_id,
                "night": night,
                "run_id": f"{run_id}_{property_id}",  # unique: the key the COPY path skips duplicates by
                "batch_key": f"{night}/{number // 250:03d}",
                "status": "succeeded",
                "findings": FINDINGS_PER_NIGHT,
                "adjustments_proposed": ADJUSTMENTS_PER_NIGHT,
                "started_at": detected,
                "finished_at": detected + timedelta(seconds=40),
            }
        )
        if (number + night_index) % 2 == 0:
            rows["payouts"].append(_payout(property_id, night, detected))
    return rows


def _finding(property_id: str, night: str, index: int, detected: datetime) -> dict[str, Any]:
    state = REVIEW_STATES[index % len(REVIEW_STATES)]
    reviewed = state != "open"
    difference = (index + 1) * 137 * (-1 if index % 3 else 1)
    return {
        "property_id": property_id,
        "night": night,
        "category": RECONCILIATION_CATEGORIES[index % len(RECONCILIATION_CATEGORIES)],
        "record_key": f"{property_id}/{night}/ch_{index:04d}",
        "provider_record_id": f"ch_{property_id}_{night}_{index:04d}",
        "ledger_entry_id": f"le_{property_id}_{night}_{index:04d}",
        "booking_id": _booking(property_id, night, index),
        "provider_amount_minor": 10_000 + difference,
        "ledger_amount_minor": 10_000,
        "difference_minor": difference,
        "currency": "EUR",
        "detail": f"benchmark finding {index} of {property_id} on {night}",
        "detected_at": detected,
        "run_id": f"run_{night}",
        "review_status": state,
        "reviewed_by": "analyst" if reviewed else None,
        "reviewed_at": detected + timedelta(hours=2) if reviewed else None,
        "review_note": "checked against the folio" if reviewed else None,
        "reviewed_difference_minor": difference if reviewed else None,
        "cleared_at": detected + timedelta(hours=5) if index % 10 == 9 else None,
    }


def _booking(property_id: str, night: str, index: int) -> str:
    """A booking of two findings (a payment and its refund, say), as a search by booking finds them."""
    return f"bk_{property_id}_{night}_{index // 2:04d}"


def _adjustment(
    property_id: str, night: str, index: int, detected: datetime
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """An adjustment and, for one in five (approved), its outbox row: posted for every other property."""
    kind = "post_missing_charge"
    key = adjustment_idempotency_key(property_id, night, kind, f"ch_{index:04d}")
    approved = index == ADJUSTMENTS_PER_NIGHT - 1
    row = {
        "adjustment_id": adjustment_id(key),
        "idempotency_key": key,
        "property_id": property_id,
        "night": night,
        "kind": kind,
        "provider_record_id": f"ch_{property_id}_{night}_{index:04d}",
        "amount_minor": 2_500 + 100 * index,
        "currency": "EUR",
        "reason": "charge captured by the provider, missing in the ledger",
        "status": "approved" if approved else "proposed",
        "created_at": detected,
        "run_id": f"run_{night}",
        "category": "missing_in_ledger",
        "record_key": f"{property_id}/{night}/ch_{index:04d}",
        "revision": 1,
        "updated_at": detected,
    }
    if not approved:
        return row, None
    posted = int(property_id[-1]) % 2 == 0  # every other property
    return row, {
        "adjustment_id": row["adjustment_id"],
        "idempotency_key": key,
        "state": "posted" if posted else "approved",
        "attempts": 1 if posted else 0,
        "lookups": 0,
        "next_attempt_at": detected,
        "pms_reference": f"folio_{row['adjustment_id']}" if posted else None,
        "created_at": detected,
        "updated_at": detected,
    }


def _payout(property_id: str, night: str, detected: datetime) -> dict[str, Any]:
    return {
        "payout_id": f"po_{property_id}_{night}",
        "provider": "stripe",
        "provider_account": None,
        "amount_minor": 125_000,
        "currency": "EUR",
        "status": "paid",
        "arrival_night": night,
        "automatic": True,
        "statement_descriptor": f"PO {property_id} {night}",
        "created_at": detected,
        "traced": True,
        "transactions": 40,
        "sum_difference_minor": 0,
        "holder_property_id": property_id,
        "last_seen_at": detected,
    }


# --- timing ----------------------------------------------------------------------------------------------


def pages(engine: Engine, property_id: str, night: str) -> dict[str, str]:
    """The pages timed for a user whose first property is ``property_id``: name → path."""
    with engine.connect() as connection:
        finding_id = connection.execute(
            select(func.min(discrepancies.c.discrepancy_id)).where(
                discrepancies.c.property_id == property_id, discrepancies.c.night == night
            )
        ).scalar_one()
    paths = (
        "/nights",
        "/findings",
        f"/findings?property={property_id}&night_from={night}&night_to={night}",
        "/findings?sort=-difference",
        f"/findings?q={_booking(property_id, night, 0)}",
        "/findings?brand=visa",
        f"/findings/{finding_id}",
        "/adjustments?state=proposed",
        "/adjustments",
        "/legend",
        "/payouts",
        f"/nights/{property_id}/{night}",
        *EXPORTS,
    )
    return dict(zip(PAGE_ORDER, paths, strict=True))


def time_page(client: httpx.Client, path: str, requests: int) -> dict[str, Any]:
    """``requests`` sequential GETs of ``path``: latency percentiles, size, statuses (and rows: exports)."""
    seconds: list[float] = []
    statuses: dict[str, int] = {}
    response: httpx.Response | None = None
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(path)
        seconds.append(time.perf_counter() - started)
        statuses[str(response.status_code)] = statuses.get(str(response.status_code), 0) + 1
    assert response is not None
    figures: dict[str, Any] = {
        "path": path,
        "requests": requests,
        "statuses": statuses,
        "p50_s": round(statistics.median(seconds), 3),
        "p95_s": round(_percentile(seconds, 0.95), 3),
        "max_s": round(max(seconds), 3),
        "bytes": len(response.content),
    }
    if path in EXPORTS and response.status_code == 200:
        rows = _exported_rows(path, response.content)
        figures["rows"] = rows
        figures["rows_per_s"] = round(rows / statistics.median(seconds))
    return figures


def _percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (with few requests p95 is the slowest but one or the slowest)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def _exported_rows(path: str, body: bytes) -> int:
    """The data rows of an export: its header row and the totals after the first empty row not counted."""
    if path.endswith(".csv"):
        lines: Iterable[Sequence[Any]] = csv.reader(io.StringIO(body.decode("utf-8-sig")))
        return _before_empty(lines) - 1
    workbook = load_workbook(io.BytesIO(body), read_only=True)
    try:
        return _before_empty(workbook.active.iter_rows(values_only=True)) - 1
    finally:
        workbook.close()


def _before_empty(lines: Iterable[Sequence[Any]]) -> int:
    """How many lines come before the first empty one (the line between an export's data and its totals)."""
    filled = itertools.takewhile(lambda line: any(cell not in (None, "") for cell in line), lines)
    return sum(1 for _ in filled)


@contextmanager
def seeded_database(
    admin_url: str, name: str, seeded: Fleet, figures: dict[str, Any]
) -> Iterator[tuple[str, Engine]]:
    """A scratch database, migrated and seeded with the fleet (its counts and seconds in ``figures``):
    its URL and an engine on it, dropped afterwards."""
    with scratch_database(admin_url, name) as url:
        engine = make_engine(url)
        try:
            started = time.perf_counter()
            migrations.upgrade(engine)
            figures["seeded"] = seed(engine, seeded)
            figures["seed_s"] = round(time.perf_counter() - started, 1)
            yield url, engine
        finally:
            engine.dispose()


def run(
    admin_url: str, properties_count: int, nights_count: int, requests: int, export_requests: int
) -> dict[str, Any]:
    seeded = fleet(properties_count, nights_count)
    figures: dict[str, Any] = {
        "properties": properties_count,
        "nights": nights_count,
        "requests": requests,
        "export_requests": export_requests,
        "export_limit": EXPORT_LIMIT,
        "cores": os.cpu_count(),
        "load_before": os.getloadavg()[0],
    }
    with ExitStack() as stack:
        _url, engine = stack.enter_context(seeded_database(admin_url, "recon_desk_bench", seeded, figures))
        server = stack.enter_context(ServerThread(review_desk_app(engine, DeskSettings("b" * 40))))
        figures["users"] = {}
        started = time.perf_counter()
        for user in (ADMIN, ANALYST):
            figures["users"][user] = _time_user(
                server.base_url, engine, user, seeded, requests, export_requests
            )
        figures["timed_s"] = round(time.perf_counter() - started, 1)
    figures["load_after"] = os.getloadavg()[0]
    figures["all_200"] = all(
        set(page["statuses"]) == {"200"} for user in figures["users"].values() for page in user.values()
    )
    figures["slow_pages"] = [
        f"{name} ({user}): p95 {page['p95_s']} s"
        for user, timed in figures["users"].items()
        for name, page in timed.items()
        if page["p95_s"] > SLOW_P95_S
    ]
    return figures


def _time_user(
    base_url: str, engine: Engine, user: str, seeded: Fleet, requests: int, export_requests: int
) -> dict[str, Any]:
    with httpx.Client(base_url=base_url, timeout=600) as client:
        signed_in = sign_in(client, user)
        if signed_in.status_code != 303:
            raise RuntimeError(f"sign-in of {user} answered {signed_in.status_code}")
        return {
            name: time_page(client, path, export_requests if path in EXPORTS else requests)
            for name, path in pages(engine, seeded.property_ids[0], seeded.nights[-1]).items()
        }


# --- output ----------------------------------------------------------------------------------------------


def markdown(figures: dict[str, Any]) -> str:
    """The per-page table, then the export throughput and the pages slower than ``SLOW_P95_S``."""
    lines = [
        "| page | user | requests | p50 s | p95 s | max s | bytes | rows | rows/s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for user, timed in figures["users"].items():
        # in the order the pages were timed (a JSON round trip with sorted keys loses it)
        for name, page in sorted(timed.items(), key=lambda item: PAGE_ORDER.index(item[0])):
            lines.append(
                f"| {name} | {user} | {page['requests']} | {page['p50_s']} | {page['p95_s']} | "
                f"{page['max_s']} | {page['bytes']:,} | {_thousands(page.get('rows'))} | "
                f"{_thousands(page.get('rows_per_s'))} |"
            )
    lines += [
        "",
        f"Seeded {figures['properties']:,} properties × {figures['nights']} nights: "
        + ", ".join(f"{count:,} {table}" for table, count in figures["seeded"].items())
        + f" in {figures['seed_s']} s; timed {figures['timed_s']} s; load {figures['load_before']:.1f} → "
        f"{figures['load_after']:.1f}; every response 200: {figures['all_200']}.",
        "",
        "Slower than 1 s at p95: " + ("; ".join(figures["slow_pages"]) or "none") + ".",
    ]
    return "\n".join(lines)


def _thousands(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--properties", type=int, default=2_000)
    parser.add_argument("--nights", type=int, default=14)
    parser.add_argument("--requests", type=int, default=10, help="GETs of each page per user")
    parser.add_argument("--export-requests", type=int, default=2, help="GETs of each export per user")
    add_postgres_url(parser, "the scratch database")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the table")
    args = parser.parse_args(argv)
    if min(args.properties, args.nights, args.requests, args.export_requests) < 1:
        parser.error("--properties, --nights, --requests and --export-requests must be positive")
    figures = run(args.postgres_url, args.properties, args.nights, args.requests, args.export_requests)
    print(json.dumps(figures, sort_keys=True) if args.json else markdown(figures))
    return 0 if figures["all_200"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
