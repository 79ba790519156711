#!/usr/bin/env python3
"""Interleaved whole-process `cairn ingest` of WORK/leaves.bin into fresh
directories (removal not timed), the order rotating each round:

    scripts/ab_ingest.py WORK ROUNDS NAME=BIN[:flag,flag] ...

A BIN whose name contains "rotor" is run as `BIN DIR WORK/leaves.bin`
(rotortree's ingest, crates/bench); any other is a cairn binary, run as
`BIN init DIR --arity 4 --hash blake3 [flags]` then `BIN ingest DIR
WORK/leaves.bin`. Prints each run (wall, user and system CPU, load) and
the medians with their ranges; with CSV=FILE in the environment also
writes every run there (name, round, wall, user, system seconds), which
scripts/plot_ingest.py draws."""
import os, sys, time, subprocess, shutil, statistics
work = sys.argv[1]
rounds = int(sys.argv[2])
sides = []
for a in sys.argv[3:]:
    name, rest = a.split("=", 1)
    binary, _, flags = rest.partition(":")
    sides.append((name, binary, flags.split(",") if flags else []))
res = {n: [] for n, _, _ in sides}
for r in range(rounds):
    order = sides[r % len(sides):] + sides[:r % len(sides)]
    for name, binary, flags in order:
        d = f"{work}/db_{name}"
        shutil.rmtree(d, ignore_errors=True)
        if "rotor" in binary:
            argv = [binary, d, f"{work}/leaves.bin"] + flags
        else:
            subprocess.run([binary, "init", d, "--arity", "4", "--hash", "blake3"] + flags, check=True, stdout=subprocess.DEVNULL)
            argv = [binary, "ingest", d, f"{work}/leaves.bin"]
        b = os.times(); t = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        w = time.perf_counter() - t; a = os.times()
        u, s = a.children_user - b.children_user, a.children_system - b.children_system
        res[name].append((w, u, s))
        print(f"round {r} {name}: wall {w:.3f} user {u:.2f} sys {s:.2f} load {os.getloadavg()[0]:.1f}", flush=True)
        shutil.rmtree(d, ignore_errors=True)
if os.environ.get("CSV"):
    with open(os.environ["CSV"], "w") as out:
        out.write("name,round,wall_s,user_s,system_s\n")
        for name in res:
            for r, (w, u, s) in enumerate(res[name]):
                out.write(f"{name},{r},{w:.3f},{u:.2f},{s:.2f}\n")
for name in res:
    ws = [x[0] for x in res[name]]; us=[x[1] for x in res[name]]; ss=[x[2] for x in res[name]]
    print(f"{name}: wall median {statistics.median(ws):.3f} ({min(ws):.3f}..{max(ws):.3f}) user {statistics.median(us):.2f} ({min(us):.2f}..{max(us):.2f}) sys {statistics.median(ss):.2f}")
