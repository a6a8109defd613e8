"""What a checkpoint costs in production (no hook installed): ns per ``checkpoints.reached`` call, beside
a call of an empty function of the same signature, the least any call can cost.

    python -m benchmarks.checkpoints [--calls N] [--repeat R]

The best of ``R`` rounds of ``N`` calls each is reported (the machine is shared: the minimum is the
figure least disturbed by other load).
"""

from __future__ import annotations

import argparse
import json
import timeit

from recon_pipeline import checkpoints


def _empty(name: str) -> None:
    return None


def ns_per_call(function: object, calls: int, repeat: int) -> float:
    """The best of ``repeat`` rounds, in nanoseconds per call of ``function(EVENT_COMMITTED)``."""
    timer = timeit.Timer("f(name)", globals={"f": function, "name": checkpoints.EVENT_COMMITTED})
    return min(timer.repeat(repeat=repeat, number=calls)) / calls * 1e9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    if checkpoints.hook is not None:
        raise SystemExit("a checkpoint hook is installed: this measures the production path, which has none")
    reached = ns_per_call(checkpoints.reached, args.calls, args.repeat)
    empty = ns_per_call(_empty, args.calls, args.repeat)
    print(json.dumps({"reached_ns": round(reached, 1), "empty_call_ns": round(empty, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
