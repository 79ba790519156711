#!/usr/bin/env bash
# Interleaved A/B of two cairn-server builds under one cairn-load workload,
# on this machine, against 127.0.0.1 only: before/after figures on a noisy
# machine.
#
#   scripts/ab_load.sh BASE_DIR NEW_DIR            # each holds cairn-server and cairn-load
#   ROUNDS=6 WORKLOAD=append CONNECTIONS=64 SECONDS_EACH=10 scripts/ab_load.sh base new
#
# Build each side with `cargo build --release -p cairn-server --bins` and
# copy target/release/cairn-server and cairn-load aside. One database of
# LEAVES leaves is filled once (with NEW_DIR's cairn-load; with FILL=each,
# one per side with that side's cairn-load, for builds whose on-disk
# formats differ); each run serves a fresh sparse copy of it with one
# side's server, runs WORKLOAD with the same (NEW_DIR's) load generator,
# and prints one JSON line per run with the side added. Rounds alternate
# which side goes first. The summary is the median per side of req/s and
# p99, and their ratio new / base.
set -euo pipefail

base=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
ROUNDS=${ROUNDS:-6}
LEAVES=${LEAVES:-1000000}
WORKLOAD=${WORKLOAD:-append}
CONNECTIONS=${CONNECTIONS:-64}
SECONDS_EACH=${SECONDS_EACH:-10}
ARITY=${ARITY:-4}
HASH=${HASH:-blake3}
FILL=${FILL:-once}

work=$(mktemp -d "${TMPDIR:-/tmp}/cairn-ab.XXXXXX")
server=""
cleanup() {
    if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
        kill -TERM "$server"
        wait "$server" || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

fill() {
    "$1/cairn-load" fill --dir "$2" --leaves "$LEAVES" --arity "$ARITY" --hash "$HASH" >/dev/null
}
case "$FILL" in
    once) fill "$new" "$work/seed"; ln -s seed "$work/seed-base"; ln -s seed "$work/seed-new" ;;
    each) fill "$base" "$work/seed-base"; fill "$new" "$work/seed-new" ;;
    *) echo "FILL is once or each, not $FILL" >&2; exit 2 ;;
esac

one() {
    local side=$1 bin=$2
    rm -rf "$work/db"
    cp -a --sparse=always "$work/seed-$side/." "$work/db"
    : >"$work/stdout"
    "$bin/cairn-server" "$work/db" --listen 127.0.0.1:0 >"$work/stdout" 2>"$work/server.log" &
    server=$!
    for _ in $(seq 1 600); do
        if grep -q '^listening on ' "$work/stdout"; then break; fi
        sleep 0.1
    done
    local addr
    addr=$(sed -n 's/^listening on //p' "$work/stdout")
    [ -n "$addr" ] || { cat "$work/server.log"; exit 1; }
    "$new/cairn-load" run --addr "$addr" --workload "$WORKLOAD" --connections "$CONNECTIONS" \
        --seconds "$SECONDS_EACH" --json | tail -n 1 | sed "s/^{/{\"side\":\"$side\",/"
    kill -TERM "$server"
    wait "$server"
    server=""
}

for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) -eq 1 ]; then
        one base "$base"; one new "$new"
    else
        one new "$new"; one base "$base"
    fi
done | tee "$work/runs.jsonl"

python3 - "$work/runs.jsonl" "$WORKLOAD" <<'EOF'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
kind = "append" if sys.argv[2] in ("append", "batch") else "proof"
for field in ("per_second", "p99_ms"):
    by = {side: [r[kind][field] for r in runs if r["side"] == side] for side in ("base", "new")}
    med = {side: statistics.median(v) for side, v in by.items()}
    spread = {side: f"{min(v):.4g}..{max(v):.4g}" for side, v in by.items()}
    print(f"{kind} {field}: base {med['base']:.4g} ({spread['base']}), new {med['new']:.4g} ({spread['new']}), new/base {med['new'] / med['base']:.3f}")
EOF
