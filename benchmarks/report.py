"""``benchmarks/results.md`` from the figures of ``run_all``: machine, versions, targets, one section a suite.

Two kinds of verdict: the issue's performance targets (judged only at the sizes they name, so never in
``--quick`` mode) and correctness checks that every run must pass at any size (both diffs saw the same
mismatches, a replay inserted nothing, no 429 at the set limit, every pull complete, every partition's
findings as planted, every webhook stored once). Only the checks decide ``run_all``'s exit status: a
timing on a shared machine is a measurement, not a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DIFF_TARGET_N = 1_000_000
DIFF_TARGET_RATIO = 3.0
WRITER_TARGET_ROWS = 100_000
WRITER_TARGET_RPS = 20_000
SECTION_TITLES = {
    "diff": "(a) Diff against datacompy",
    "writer": "(b) Idempotent adjustment writer (PostgreSQL)",
    "pull": "(c) Provider pull under a rate limit",
    "pipeline": "(d) End to end through Dagster",
    "webhooks": "Webhook intake (benchmarks/webhooks.py)",
    "processor": "Event processor (benchmarks/processor.py)",
}


@dataclass(frozen=True)
class Verdict:
    what: str
    measured: str
    status: str  # "pass", "FAIL" or "not judged: <why>"

    @property
    def failed(self) -> bool:
        return self.status == "FAIL"


def render(results: dict[str, Any]) -> tuple[str, bool]:
    """The markdown report, and whether every correctness check held."""
    suites = results["suites"]
    targets = _targets(results)
    checks = [check for name, suite in suites.items() if "figures" in suite for check in CHECKS[name](suite)]
    mode = (
        "**quick (CI) sizes**: these prove the suites run, they are not performance figures"
        if results["quick"]
        else "full sizes"
    )
    lines = [
        "# Benchmark results",
        "",
        f"`{results['command']}`, started {results['started_at']}; {mode}; "
        f"{results['repeat']} run(s) per measurement, medians shown.",
        "",
        *_load_note(results),
        "## Machine and versions",
        "",
        _table(
            ["", ""],
            [[key, value] for key, value in results["machine"].items()]
            + [["load average (1 min) at start / end", _load(results)]]
            + [[name, value] for name, value in results["versions"].items()],
        ),
        "",
        "## Targets",
        "",
        _table(["target", "measured", "verdict"], [[v.what, v.measured, v.status] for v in targets]),
        "",
        "## Checks",
        "",
        _table(["check", "measured", "verdict"], [[v.what, v.measured, v.status] for v in checks])
        if checks
        else "No suite produced figures.",
        "",
    ]
    for name, title in SECTION_TITLES.items():
        lines += [f"## {title}", ""]
        suite = suites.get(name)
        if suite is None:
            lines += ["Not run (`--only`).", ""]
        elif "error" in suite:
            lines += [f"**Failed** after {suite['seconds']} s: `{suite['error']}`", ""]
        else:
            lines += [*SECTIONS[name](suite["figures"]), "", f"Suite wall time: {suite['seconds']} s.", ""]
    return "\n".join(lines), not any(check.failed for check in checks)


# --- targets and checks ---------------------------------------------------------------------------


def _targets(results: dict[str, Any]) -> list[Verdict]:
    suites = results["suites"]
    diff_cases = suites.get("diff", {}).get("figures", {}).get("cases", [])
    at_target = [case for case in diff_cases if case["n"] == DIFF_TARGET_N]
    if at_target:
        case = at_target[0]
        bound = "≥ " if case["datacompy_over_limit"] else ""
        diff_verdict = Verdict(
            f"diff ≥ {DIFF_TARGET_RATIO:g}× faster than datacompy at N = 10^6",
            f"{bound}{case['ratio']}× ({case['diff_median_s']} s vs {_seconds(case['datacompy_median_s'])})",
            _passed(case["ratio"] >= DIFF_TARGET_RATIO),
        )
    else:
        diff_verdict = Verdict(
            f"diff ≥ {DIFF_TARGET_RATIO:g}× faster than datacompy at N = 10^6",
            _largest_ratio(diff_cases),
            "not judged: N = 10^6 not run",
        )
    writer_figures = suites.get("writer", {}).get("figures")
    if writer_figures is None:
        writer_verdict = Verdict(f"writer ≥ {WRITER_TARGET_RPS:,} rows/s", "not run", "not judged: not run")
    else:
        measured = f"{writer_figures['first_rows_per_second']:,} rows/s at {writer_figures['rows']:,} rows"
        at_size = writer_figures["rows"] >= WRITER_TARGET_ROWS
        writer_verdict = Verdict(
            f"writer ≥ {WRITER_TARGET_RPS:,} rows/s (first write of {WRITER_TARGET_ROWS:,} adjustments)",
            measured,
            _passed(writer_figures["first_rows_per_second"] >= WRITER_TARGET_RPS)
            if at_size
            else f"not judged: {writer_figures['rows']:,} rows",
        )
    return [diff_verdict, writer_verdict]


def _diff_checks(suite: dict[str, Any]) -> list[Verdict]:
    return [
        Verdict(
            f"diff and datacompy see the same amount, currency and status mismatches, N = {case['n']:,}",
            _mismatch_counts(case),
            "not judged: datacompy over its time limit"
            if case["counts_agree"] is None
            else _passed(case["counts_agree"]),
        )
        for case in suite["figures"]["cases"]
    ]


def _mismatch_counts(case: dict[str, Any]) -> str:
    """``column ours/theirs`` for each compared column."""
    theirs = case["datacompy_counts"]
    return ", ".join(
        f"{column} {ours}/{theirs.get(column, '?')}" for column, ours in case["diff_mismatches"].items()
    )


def _writer_checks(suite: dict[str, Any]) -> list[Verdict]:
    figures = suite["figures"]
    return [
        Verdict(
            "first write inserts every row",
            f"{figures['rows']:,} rows",
            _passed(figures["every_first_write_inserted_all"]),
        ),
        Verdict(
            "replay of the same rows inserts 0",
            f"new rows per replay: {sorted({run['replay_new'] for run in figures['runs']})}",
            _passed(figures["every_replay_inserted_none"]),
        ),
    ]


def _pull_checks(suite: dict[str, Any]) -> list[Verdict]:
    figures = suite["figures"]
    return [
        Verdict(
            f"zero 429s at the set limit ({figures['rate_limit_rps']:g} rps)",
            f"{figures['responses_429']} in {figures['repeat']} paced run(s)",
            _passed(figures["responses_429"] == 0),
        ),
        Verdict(
            "every paced pull complete",
            f"{figures['records']:,} of {figures['records_expected']:,} records",
            _passed(figures["every_pull_complete"]),
        ),
    ]


def _pipeline_checks(suite: dict[str, Any]) -> list[Verdict]:
    night, backfill = suite["figures"]["night"], suite["figures"]["backfill"]
    return [
        Verdict(
            "one night: findings as planted, re-run writes no adjustment",
            f"re-run new adjustments: {night['rerun_adjustments_new']}",
            _passed(night["findings_as_planted"] and night["rerun_adjustments_new"] == [0]),
        ),
        Verdict(
            "backfill: every property-night's findings as planted",
            f"{backfill['findings_as_planted']} of {backfill['property_nights']}",
            _passed(backfill["findings_as_planted"] == backfill["property_nights"]),
        ),
    ]


def _webhook_checks(suite: dict[str, Any]) -> list[Verdict]:
    figures = suite["figures"]
    return [
        Verdict(
            "every webhook event stored exactly once, none refused",
            f"{figures['refused']} refused",
            _passed(figures["every_event_stored_once"] and figures["refused"] == 0),
        )
    ]


def _processor_checks(suite: dict[str, Any]) -> list[Verdict]:
    workers = suite["figures"]["workers"]
    return [
        Verdict(
            "every event processed",
            ", ".join(f"{w['workers']} worker(s)" for w in workers),
            _passed(all(w["every_event_processed"] for w in workers)),
        )
    ]


CHECKS: dict[str, Callable[[dict[str, Any]], list[Verdict]]] = {
    "diff": _diff_checks,
    "writer": _writer_checks,
    "pull": _pull_checks,
    "pipeline": _pipeline_checks,
    "webhooks": _webhook_checks,
    "processor": _processor_checks,
}


# --- sections --------------------------------------------------------------------------------------


def _diff_section(figures: dict[str, Any]) -> list[str]:
    rows = [
        [
            f"{case['n']:,}",
            f"{case['ledger_rows']:,}",
            f"{case['diff_median_s']}",
            _seconds(case["datacompy_median_s"], case["datacompy_limit_s"]),
            f"{'≥ ' if case['datacompy_over_limit'] else ''}{case['ratio']}×",
            f"{case['diff_rows_per_second']:,}",
            f"{case['diff_findings']:,}",
        ]
        for case in figures["cases"]
    ]
    return [
        "Same generated night (1% injected findings) for both, runs alternating. `diff_night` is timed from "
        "the raw frames and does all its work (matching with adjacent nights and records found elsewhere, "
        "every category, timing differences, the findings frame). datacompy (`PandasCompare` + "
        "`all_mismatch()`) gets inputs cut down untimed to what it can compare (in-night keyed ledger "
        "entries, five columns) and does the outer join on (id, kind) and the per-column comparison of "
        "amount, currency and settled. Both choices favour datacompy. A datacompy run over its time "
        "limit is not repeated; the limit then bounds the ratio from below.",
        "",
        _table(
            ["N provider records", "ledger rows", "diff s", "datacompy s", "ratio", "diff rows/s"]
            + ["findings"],
            rows,
        ),
    ]


def _writer_section(figures: dict[str, Any]) -> list[str]:
    return [
        f"`write_adjustments` of {figures['rows']:,} planned adjustments in one transaction (commit "
        "included), on an emptied table, then the same rows again.",
        "",
        _table(
            ["", "median s", "rows/s", "inserted"],
            [
                [
                    "first write",
                    figures["first_median_s"],
                    f"{figures['first_rows_per_second']:,}",
                    f"{figures['runs'][0]['first_new']:,}",
                ],
                [
                    "replay",
                    figures["replay_median_s"],
                    f"{figures['replay_rows_per_second']:,}",
                    f"{figures['runs'][0]['replay_new']:,}",
                ],
            ],
        ),
        "",
        f"Replay / first write time: {figures['replay_to_first']}.",
    ]


def _pull_section(figures: dict[str, Any]) -> list[str]:
    control = figures["control_unpaced"]
    return [
        f"The simulator limits to {figures['rate_limit_rps']:g} requests/s (token bucket one second deep, "
        f"429 + Retry-After over it); {figures['properties']} property-nights of about "
        f"{figures['records_per_night_target']:,} records are pulled at once through one client paced at "
        "the same rate (`max_rps` / `RECON_PROVIDER_MAX_RPS`).",
        "",
        _table(
            ["", "records", "requests", "429s", "wall s", "records/s", "requests/s", "of the limit"],
            [
                [
                    "paced (median)",
                    f"{figures['records']:,}",
                    figures["requests"],
                    figures["responses_429"],
                    figures["wall_median_s"],
                    f"{figures['records_per_second']:,}",
                    figures["requests_per_second"],
                    f"{figures['utilisation']:.0%}",
                ],
                [
                    "unpaced control (once)",
                    f"{control['records']:,}",
                    control["requests"],
                    control["responses_429"],
                    control["wall_s"],
                    f"{control['records_per_second']:,}",
                    control["requests_per_second"],
                    f"{control['utilisation']:.0%}",
                ],
            ],
        ),
    ]


def _pipeline_section(figures: dict[str, Any]) -> list[str]:
    night, backfill = figures["night"], figures["backfill"]
    return [
        "Each run is one `reconcile_night` run of a night partition and a batch of properties "
        "(`execute_in_process`, temporary instance with the local SQLite storage) against a seeded scratch "
        "PostgreSQL database and the simulator. The one night is a batch of one property; the backfill runs "
        "one run per night, each reconciling every property, one after another in one process (the runs of "
        "a multi-run backfill, without the daemon's queueing).",
        "",
        _table(
            ["", "runs", "property-nights", "provider records", "wall s", "per run s", "records/s", "runs/s"],
            [
                [
                    "one night (median)",
                    1,
                    1,
                    f"{night['provider_records']:,}",
                    night["median_s"],
                    night["median_s"],
                    f"{night['records_per_second']:,}",
                    "",
                ],
                ["same night re-run (median)", 1, 1, f"{night['provider_records']:,}"]
                + [night["rerun_median_s"], night["rerun_median_s"], "", ""],
                [
                    f"backfill {backfill['nights']} nights × {backfill['properties']} properties",
                    backfill["partitions"],
                    backfill["property_nights"],
                    f"{backfill['provider_records']:,}",
                    backfill["wall_s"],
                    f"{backfill['partition_median_s']} median, {backfill['partition_max_s']} max",
                    f"{backfill['records_per_second']:,}",
                    backfill["partitions_per_second"],
                ],
            ],
        ),
    ]


def _webhooks_section(figures: dict[str, Any]) -> list[str]:
    return [
        f"{figures['requests']:,} signed deliveries ({figures['events']:,} distinct) over "
        f"{figures['connections']} connections, {figures['workers']} receiver worker(s).",
        "",
        _table(
            ["accepted/s", "stored/s", "p50 ms", "p99 ms"],
            [
                [
                    f"{figures['accepted_per_second']:,}",
                    f"{figures['stored_per_second']:,}",
                    figures["p50_ms"],
                    figures["p99_ms"],
                ]
            ],
        ),
    ]


def _processor_section(figures: dict[str, Any]) -> list[str]:
    return [
        f"{figures['events']:,} events against the simulator, each worker a process.",
        "",
        _table(
            ["workers", "events/s", "wall s (start-up included)"],
            [[w["workers"], w["events_per_second"], w["wall_median_s"]] for w in figures["workers"]],
        ),
    ]


SECTIONS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "diff": _diff_section,
    "writer": _writer_section,
    "pull": _pull_section,
    "pipeline": _pipeline_section,
    "webhooks": _webhooks_section,
    "processor": _processor_section,
}


# --- formatting ------------------------------------------------------------------------------------


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _passed(condition: bool) -> str:
    return "pass" if condition else "FAIL"


def _seconds(value: float | None, limit: float | None = None) -> str:
    if value is not None:
        return f"{value} s" if limit is None else str(value)
    return "over its limit" if limit is None else f"> {limit:g} (limit)"


def _largest_ratio(cases: list[dict[str, Any]]) -> str:
    if not cases:
        return "not run"
    largest = max(cases, key=lambda case: case["n"])
    return f"{largest['ratio']}× at N = {largest['n']:,}"


def _load(results: dict[str, Any]) -> str:
    return f"{results['load_average']['start']} / {results['load_average']['end']}"


def _load_note(results: dict[str, Any]) -> list[str]:
    cores = results["machine"]["cores"]
    highest = max(results["load_average"].values())
    if cores.isdigit() and highest > int(cores):
        return [
            f"**Measured under load**: the load average was {_load(results)} (start / end) on {cores} "
            "cores, so other "
            "processes competed for the CPU; timings are pessimistic and noisy.",
            "",
        ]
    return []
