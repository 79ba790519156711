#!/usr/bin/env bash
# Append latency while `cairn backup` copies the live database, against
# the same workload without a backup, on this machine, against 127.0.0.1
# only, every run bounded in time.
#
#   scripts/backup_load.sh                      # 4M-leaf database, 10 s per run
#   LEAVES=10000000 SECONDS_EACH=20 scripts/backup_load.sh
#
# Steps: build the release binaries; `cairn-load fill` creates a database
# of LEAVES random leaves (N = ARITY, HASH) in a temporary directory;
# `cairn-server` serves it; then three runs of the single-leaf append
# workload (`cairn-load run --workload append`, CONNECTIONS connections):
# without a backup, with `cairn backup` copying the live database back to
# back for the whole run (each copy removed before the next), and without
# again (the two quiet runs bracket the machine's noise). The last copy
# is kept and checked after the server stops: `cairn check` passes on it,
# and its root equals the root of the served database's first SIZE leaves
# (SIZE being the copy's size). Prints a table of leaves/s, p50 and p99.
set -euo pipefail

LEAVES=${LEAVES:-4000000}
SECONDS_EACH=${SECONDS_EACH:-10}
ARITY=${ARITY:-4}
HASH=${HASH:-blake3}
CONNECTIONS=${CONNECTIONS:-64}

cd "$(dirname "$0")/.."
cargo build --release --quiet -p cairn-server --bins
cargo build --release --quiet -p cairn-cli
bin=target/release

work=$(mktemp -d "${TMPDIR:-/tmp}/cairn-backup-load.XXXXXX")
server=""
cleanup() {
    if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
        kill -TERM "$server"
        wait "$server" || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg), $(df -T "$work" | awk 'NR==2 {print $2}') at $work"

"$bin/cairn-load" fill --dir "$work/db" --leaves "$LEAVES" --arity "$ARITY" --hash "$HASH" >/dev/null

"$bin/cairn-server" "$work/db" --listen 127.0.0.1:0 >"$work/stdout" 2>"$work/server.log" &
server=$!
for _ in $(seq 1 600); do
    if grep -q '^listening on ' "$work/stdout"; then break; fi
    if ! kill -0 "$server" 2>/dev/null; then cat "$work/server.log"; exit 1; fi
    sleep 0.1
done
addr=$(sed -n 's/^listening on //p' "$work/stdout")
[ -n "$addr" ] || { echo "the server did not start"; cat "$work/server.log"; exit 1; }

load() {
    "$bin/cairn-load" run --addr "$addr" --workload append --connections "$CONNECTIONS" \
        --seconds "$SECONDS_EACH" --json | tail -n 1 >"$work/$1.json"
}

load quiet-before

# Backups back to back for as long as the load runs.
load during &
loader=$!
backups=0
: >"$work/backups.jsonl"
while kill -0 "$loader" 2>/dev/null; do
    rm -rf "$work/copy"
    "$bin/cairn" backup "$work/db" "$work/copy" --json >>"$work/backups.jsonl"
    backups=$((backups + 1))
done
wait "$loader"

load quiet-after

kill -TERM "$server"
wait "$server"
server=""

last=$(tail -n 1 "$work/backups.jsonl")
size=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["size"])' "$last")
root=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["root"])' "$last")
"$bin/cairn" check "$work/copy" >/dev/null
"$bin/cairn" export "$work/db" --to "$size" >"$work/prefix.bin"
served_root=$("$bin/cairn" root --arity "$ARITY" --hash "$HASH" "$work/prefix.bin")
[ "$served_root" = "$root" ] || { echo "the copy's root $root is not the served root $served_root at size $size"; exit 1; }
echo "checked: the last copy (size $size) passes cairn check and its root is the served tree's at that size"

python3 - "$work" "$backups" <<'EOF'
import json, sys
work, backups = sys.argv[1], int(sys.argv[2])
rows = [("no backup (before)", "quiet-before"), ("cairn backup back to back", "during"), ("no backup (after)", "quiet-after")]
copies = [json.loads(line) for line in open(f"{work}/backups.jsonl")]
seconds = [c["seconds"] for c in copies]
print(f"backups during the run: {backups}, each {min(seconds):.2f} to {max(seconds):.2f} s, {copies[-1]['bytes']:,} bytes, size {copies[0]['size']:,} to {copies[-1]['size']:,}")
print("| run | durable leaves/s | p50 ms | p99 ms | p99.9 ms | max ms | errors |")
print("|---|---:|---:|---:|---:|---:|---:|")
for name, file in rows:
    r = json.load(open(f"{work}/{file}.json"))
    a = r["append"]
    print(f"| {name} | {r['leaves_per_second']:,.0f} | {a['p50_ms']:.2f} | {a['p99_ms']:.2f} | {a['p999_ms']:.2f} | {a['max_ms']:.2f} | {r['errors']} |")
EOF
