#!/usr/bin/env python3
"""Interleaved A/B runs of two criterion bench binaries: before/after ratios
on a noisy machine.

Build the bench binary at each commit (`cargo bench -p cairn-bench --bench
tree --no-run` prints its path under target/release/deps/), copy it aside,
then:

    scripts/ab_bench.py BASE_BIN NEW_BIN --rounds 6 -- FILTER

Each round runs both binaries on the same filter, alternating which goes
first, and records criterion's point estimate (the middle of the
`time: [low estimate high]` triple) of every benchmark. The report is, per
benchmark, the median and range over rounds of each side and the ratio of
the medians new / base (below 1: the new binary is faster). Interleaving
spreads the machine's load over both sides; run-to-run noise on a shared
2-core machine is a few percent, so ratios within about 0.95..1.05 are
noise.
"""

import argparse
import re
import statistics
import subprocess
import sys

UNITS = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
TIME = re.compile(
    r"time:\s+\[\s*\S+\s+\S+\s+(?P<value>[0-9.]+)\s+(?P<unit>ps|ns|us|µs|ms|s)\s+\S+\s+\S+\s*\]"
)


def estimates(output: str) -> dict[str, float]:
    """Benchmark name -> point estimate in seconds, from criterion's output.

    A long name is printed on its own line, the `time:` line after it; a
    short one shares the line."""
    found: dict[str, float] = {}
    previous = ""
    for line in output.splitlines():
        match = TIME.search(line)
        if match:
            name = line[: match.start()].strip() or previous
            found[name] = float(match["value"]) * UNITS[match["unit"]]
        elif line.strip() and not line.startswith(" "):
            previous = line.strip()
    return found


def run(binary: str, args: list[str]) -> dict[str, float]:
    out = subprocess.run(
        [binary, "--bench", "--noplot", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result = estimates(out)
    if not result:
        sys.exit(f"{binary}: no criterion estimates in its output")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("criterion_args", nargs="*", help="after --: a filter, criterion options")
    # Everything after `--` goes to criterion as is (argparse alone refuses
    # it once the positionals before it are taken).
    argv = sys.argv[1:]
    passed: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, passed = argv[:at], argv[at + 1 :]
    options = parser.parse_args(argv)
    options.criterion_args += passed
    samples: dict[str, tuple[list[float], list[float]]] = {}
    for round_ in range(options.rounds):
        order = [(0, options.base), (1, options.new)]
        if round_ % 2:
            order.reverse()
        for side, binary in order:
            for name, seconds in run(binary, options.criterion_args).items():
                samples.setdefault(name, ([], []))[side].append(seconds)
        print(f"round {round_ + 1}/{options.rounds} done", file=sys.stderr)
    print("| benchmark | base: median (range) | new: median (range) | new / base |")
    print("|---|---|---|---|")
    for name, (base, new) in sorted(samples.items()):
        if not base or not new:
            continue
        b, n = statistics.median(base), statistics.median(new)
        spread = [f"{min(side) * 1e6:.2f}..{max(side) * 1e6:.2f}" for side in (base, new)]
        print(f"| `{name}` | {b * 1e6:.2f} us ({spread[0]}) | {n * 1e6:.2f} us ({spread[1]}) | {n / b:.3f} |")


if __name__ == "__main__":
    main()
