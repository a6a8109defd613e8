"""The posting crash window in full (issue 15): 50 SIGKILLs of a real poster process at each point of a
post, per adapter, on PostgreSQL; after each a fresh drainer runs. Prints the figures as JSON; any
duplicate posting, lost posting or ``unknown`` left fails the run (see
``recon_pipeline_tests.support.postings_crash``).

    RECON_REQUIRE_POSTGRES=1 python -m benchmarks.postings_crash [--per-point 50] [--adapter http sql]

Replay a failure with ``RECON_CRASH_SEED=<seed in the message>``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from recon_pipeline_tests.support.postings_crash import ADAPTERS, run_point_trials
from recon_pipeline_tests.support.warm_children import crash_seed, warm_up


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-point", type=int, default=50)
    parser.add_argument("--adapter", nargs="+", choices=ADAPTERS, default=list(ADAPTERS))
    args = parser.parse_args(argv)
    seed = crash_seed()
    warm_up()
    with tempfile.TemporaryDirectory(prefix="postings_crash_") as folder:
        for adapter in args.adapter:
            figures = run_point_trials(Path(folder) / adapter, adapter, args.per_point, seed)
            print(json.dumps({"adapter": adapter, "seed": seed, **figures}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
