"""How long the locality watch's prompt comparison takes on the event loop.

Two 2M-token prompts of one session that share everything but the last token (the
append-only case, the slowest: the whole prefix is scanned), compared the way the watch
compares them: both held as int64 token arrays. Prints the median and worst of several runs
and whether the target (under 10 ms for 2M tokens) holds. The list-to-array conversion the
watch does once per /tokenize answer is timed separately, since it is not the comparison.

    python benchmarks/divergence_speed.py --tokens 2000000 --runs 20
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from array import array

from sm121.locality.divergence import as_tokens, compare

TARGET_MS = 10.0


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(121)
    ids = [rng.randrange(150_000) for _ in range(args.tokens)]
    previous = array("q", ids)
    current = array("q", ids)
    current[-1] = -1
    compare_ms, convert_ms = [], []
    for _ in range(args.runs):
        start = time.perf_counter()
        result = compare(previous, current, block_size=16, changed="appended")
        compare_ms.append(_ms(start))
        start = time.perf_counter()
        as_tokens(ids)
        convert_ms.append(_ms(start))
    assert result.first_divergence == args.tokens - 1
    median = statistics.median(compare_ms)
    print(json.dumps({
        "tokens": args.tokens, "runs": args.runs,
        "compare_ms": {"median": round(median, 2), "max": round(max(compare_ms), 2)},
        "list_to_array_ms": {"median": round(statistics.median(convert_ms), 2)},
        "target_ms": TARGET_MS, "meets_target": median < TARGET_MS,
    }, indent=2))


if __name__ == "__main__":
    main()
