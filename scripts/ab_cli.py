#!/usr/bin/env python3
"""Interleaved A/B of two `cairn` CLI builds on a 10M-leaf database: open,
check and ingest times, before/after ratios on a noisy machine.

    scripts/ab_cli.py BASE_CAIRN NEW_CAIRN --work DIR [--leaves 10000000]
        [--rounds 7] [--ingest-rounds 5] [--check-rounds 3]
        [--only open,check,ingest]

Each side gets its own database, built once with its own `cairn init
--arity 4 --hash blake3` and `cairn ingest` of the same leaf file (SHA-256
of each index; the on-disk formats of two builds may differ, and a writer
may migrate a directory the other wrote). Then, round after round, the two
sides alternating which goes first:

- open: `cairn stats DIR` and `cairn contains DIR VALUE` (read-only opens
  of the whole database) and `cairn ingest DIR EMPTY` (a writer's open and
  close, nothing appended). If DIR holds a `verified` record (a build that
  writes one), the same three are also timed with the record removed
  first (nothing vouched for: every page read again), the writer's open
  last, as it writes the record again.
- check: `cairn check DIR`.
- ingest: `cairn init` of a fresh directory (not timed), `cairn ingest` of
  the leaf file into it (timed), then its removal (timed apart), with the
  nullifier set and with `--no-unique`.

Every figure is a whole process, wall time and CPU time (the child's user
and system seconds, medians), on a warm page cache. The report gives per
workload and side the median and the range of the wall time, and the ratio
of the medians new / base.
"""

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time


def timed(argv: list[str]) -> tuple[float, float, float]:
    """Run argv to completion; (wall, user CPU, system CPU) seconds."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = os.times()
    user = after.children_user - before.children_user
    return wall, user, after.children_system - before.children_system


def leaf_file(path: str, leaves: int) -> None:
    if os.path.exists(path) and os.path.getsize(path) == 32 * leaves:
        return
    with open(path, "wb") as out:
        chunk = bytearray()
        for i in range(leaves):
            chunk += hashlib.sha256(i.to_bytes(8, "little")).digest()
            if len(chunk) >= 1 << 22:
                out.write(chunk)
                chunk = bytearray()
        out.write(chunk)


def root_of(cairn: str, directory: str) -> str:
    out = subprocess.run(
        [cairn, "root", directory, "--json"], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)["root"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--work", required=True)
    parser.add_argument("--leaves", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ingest-rounds", type=int, default=5)
    parser.add_argument("--check-rounds", type=int, default=3)
    parser.add_argument("--only", default="open,check,ingest")
    parser.add_argument("--raw", help="append every sample to this JSON-lines file")
    options = parser.parse_args()
    only = set(options.only.split(","))
    sides = {"base": os.path.abspath(options.base), "new": os.path.abspath(options.new)}
    os.makedirs(options.work, exist_ok=True)
    leaves = os.path.join(options.work, "leaves.bin")
    leaf_file(leaves, options.leaves)
    empty = os.path.join(options.work, "empty.bin")
    open(empty, "wb").close()
    present = "0x" + hashlib.sha256((options.leaves // 2).to_bytes(8, "little")).hexdigest()
    samples: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    raw = open(options.raw, "a") if options.raw else None

    def record(workload: str, side: str, sample: tuple[float, float, float]) -> None:
        samples.setdefault((workload, side), []).append(sample)
        if raw:
            wall, user, system = sample
            line = {"workload": workload, "side": side, "wall": wall, "user": user, "system": system}
            raw.write(json.dumps(line) + "\n")
            raw.flush()

    def order(round_: int) -> list[str]:
        return ["base", "new"] if round_ % 2 == 0 else ["new", "base"]

    databases = {}
    if only & {"open", "check"}:
        for side, cairn in sides.items():
            directory = os.path.join(options.work, f"db-{side}")
            if not os.path.exists(os.path.join(directory, "cairn.meta")):
                shutil.rmtree(directory, ignore_errors=True)
                subprocess.run([cairn, "init", directory, "--arity", "4", "--hash", "blake3"], check=True, stdout=subprocess.DEVNULL)
                subprocess.run([cairn, "ingest", directory, leaves], check=True, stdout=subprocess.DEVNULL)
            databases[side] = directory
        roots = {side: root_of(sides[side], d) for side, d in databases.items()}
        if roots["base"] != roots["new"]:
            sys.exit(f"roots differ: {roots}")
        for side, directory in databases.items():  # warm the page cache
            timed([sides[side], "stats", directory])

    if "open" in only:
        for round_ in range(options.rounds):
            for side in order(round_):
                cairn, directory = sides[side], databases[side]
                record("stats (read-only open)", side, timed([cairn, "stats", directory]))
                record("contains (read-only open)", side, timed([cairn, "contains", directory, present]))
                record("writer open + close (ingest of nothing)", side, timed([cairn, "ingest", directory, empty]))
                verified = os.path.join(directory, "verified")
                if os.path.exists(verified):
                    os.remove(verified)
                    record("stats, no verified record", side, timed([cairn, "stats", directory]))
                    if os.path.exists(verified):
                        sys.exit(f"{side}: a read-only open wrote a verified record")
                    record("contains, no verified record", side, timed([cairn, "contains", directory, present]))
                    record("writer open + close, no verified record", side, timed([cairn, "ingest", directory, empty]))
                    if not os.path.exists(verified):
                        sys.exit(f"{side}: the writer's close wrote no verified record")
            print(f"open round {round_ + 1}/{options.rounds} done", file=sys.stderr)

    if "check" in only:
        for round_ in range(options.check_rounds):
            for side in order(round_):
                record("check", side, timed([sides[side], "check", databases[side]]))
            print(f"check round {round_ + 1}/{options.check_rounds} done", file=sys.stderr)

    if "ingest" in only:
        for round_ in range(options.ingest_rounds):
            for unique in (True, False):
                for side in order(round_):
                    cairn = sides[side]
                    directory = os.path.join(options.work, f"ingest-{side}")
                    init = [cairn, "init", directory, "--arity", "4", "--hash", "blake3"]
                    if not unique:
                        init.append("--no-unique")
                    subprocess.run(init, check=True, stdout=subprocess.DEVNULL)
                    count = f"{options.leaves // 1_000_000}M" if options.leaves % 1_000_000 == 0 else str(options.leaves)
                    name = f"ingest {count}, set on" if unique else f"ingest {count}, --no-unique"
                    record(name, side, timed([cairn, "ingest", directory, leaves]))
                    start = time.perf_counter()
                    shutil.rmtree(directory)
                    record("rm -rf of the ingested directory", side, (time.perf_counter() - start, 0.0, 0.0))
            print(f"ingest round {round_ + 1}/{options.ingest_rounds} done", file=sys.stderr)

    print("| workload | base wall s, median (range) | new wall s, median (range) | new / base | base user + sys s | new user + sys s |")
    print("|---|---|---|---|---|---|")
    workloads = list(dict.fromkeys(w for w, _ in samples))
    for workload in workloads:
        cells = []
        medians = {}
        cpus = {}
        for side in ("base", "new"):
            got = samples.get((workload, side), [])
            if not got:
                cells.append("-")
                continue
            walls = [w for w, _, _ in got]
            medians[side] = statistics.median(walls)
            cpus[side] = (statistics.median(u for _, u, _ in got), statistics.median(s for _, _, s in got))
            cells.append(f"{medians[side]:.3f} ({min(walls):.3f}..{max(walls):.3f})")
        ratio = f"{medians['new'] / medians['base']:.2f}" if len(medians) == 2 else "-"
        cpu = [f"{cpus[s][0]:.2f} + {cpus[s][1]:.2f}" if s in cpus else "-" for s in ("base", "new")]
        print(f"| {workload} | {cells[0]} | {cells[1]} | {ratio} | {cpu[0]} | {cpu[1]} |")


if __name__ == "__main__":
    main()
