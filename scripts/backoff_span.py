#!/usr/bin/env python3
"""How long N retries wait in all under object_store's backoff (decorrelated
jitter: each backoff is drawn uniformly between the first backoff and
`base` times the previous one, capped; the first wait is the first
backoff), simulated: the 5th percentile, median and 95th percentile of
the total, for the bases given.

    scripts/backoff_span.py [--first 0.25] [--cap 15] [--retries 10]
        [--bases 2,3,4] [--runs 20000]

cairn's remote stores use first 250 ms, base 4, cap 15 s, 10 retries
(crates/tiles/src/remote.rs).
"""

import argparse
import random


def total(first, cap, retries, base, rng):
    wait, spent = first, 0.0
    for _ in range(retries):
        spent += wait
        wait = min(cap, rng.uniform(first, wait * base))
    return spent


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", type=float, default=0.25)
    parser.add_argument("--cap", type=float, default=15.0)
    parser.add_argument("--retries", type=int, default=10)
    parser.add_argument("--bases", default="2,3,4")
    parser.add_argument("--runs", type=int, default=20_000)
    args = parser.parse_args()
    rng = random.Random(7)
    for base in (float(b) for b in args.bases.split(",")):
        spans = sorted(total(args.first, args.cap, args.retries, base, rng) for _ in range(args.runs))
        pick = lambda q: spans[int(q * (len(spans) - 1))]
        print(f"base {base:g}: {args.retries} retries span p5 {pick(0.05):.1f} s, median {pick(0.5):.1f} s, p95 {pick(0.95):.1f} s")


if __name__ == "__main__":
    main()
