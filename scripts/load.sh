#!/usr/bin/env bash
# Load figures for cairn-server against the load targets, on this machine,
# against 127.0.0.1 only, each workload bounded in time and in requests.
#
#   scripts/load.sh                  # 10M-leaf database, 10 s per workload
#   LEAVES=1000000 SECONDS_EACH=5 scripts/load.sh
#
# Steps: build the release binaries; `cairn-load fill` creates a database
# of LEAVES random leaves (arity ARITY, hash HASH) in a temporary
# directory; `cairn-server` serves it on a free port; `cairn-load run` runs
# the four workloads one after the other (proofs, single-leaf appends,
# mixed 90/10, 10,000-leaf binary batches), printing req/s, leaves/s and
# p50/p99/p99.9/max; the server is stopped with SIGTERM and the directory
# removed. LOADGEN_THREADS sets the load generator's threads (default 1:
# it shares the machine with the server).
set -euo pipefail

LEAVES=${LEAVES:-10000000}
SECONDS_EACH=${SECONDS_EACH:-10}
ARITY=${ARITY:-4}
HASH=${HASH:-blake3}
CONNECTIONS=${CONNECTIONS:-64}
BATCH_CONNECTIONS=${BATCH_CONNECTIONS:-8}
LOADGEN_THREADS=${LOADGEN_THREADS:-1}

cd "$(dirname "$0")/.."
cargo build --release -p cairn-server --bins
bin=target/release

work=$(mktemp -d "${TMPDIR:-/tmp}/cairn-load.XXXXXX")
server=""
cleanup() {
    if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
        kill -TERM "$server"
        wait "$server" || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/ {print $2}') GiB, kernel $(uname -r), $(df -T "$work" | awk 'NR==2 {print $2}') at $work"

"$bin/cairn-load" fill --dir "$work/db" --leaves "$LEAVES" --arity "$ARITY" --hash "$HASH"

"$bin/cairn-server" "$work/db" --listen 127.0.0.1:0 >"$work/stdout" 2>"$work/server.log" &
server=$!
for _ in $(seq 1 600); do
    if grep -q '^listening on ' "$work/stdout"; then break; fi
    if ! kill -0 "$server" 2>/dev/null; then cat "$work/server.log"; exit 1; fi
    sleep 0.1
done
addr=$(sed -n 's/^listening on //p' "$work/stdout")
[ -n "$addr" ] || { echo "the server did not start"; cat "$work/server.log"; exit 1; }
echo "server on $addr (pid $server)"

run() {
    "$bin/cairn-load" run --addr "$addr" --threads "$LOADGEN_THREADS" --seconds "$SECONDS_EACH" "$@"
}
# The batch workload goes last: it grows the tree by up to 20M leaves.
run --workload proofs --connections "$CONNECTIONS"
run --workload append --connections "$CONNECTIONS"
run --workload mixed --connections "$CONNECTIONS" --append-percent 10
run --workload batch --connections "$BATCH_CONNECTIONS" --batch-leaves 10000 --max-requests 2000

curl -s "http://$addr/metrics" 2>/dev/null | grep -E '^cairn_(durable_size|checkpoint_number|durable_wait_seconds_(sum|count)) ' || true
kill -TERM "$server"
wait "$server"
server=""
tail -n 3 "$work/server.log"
