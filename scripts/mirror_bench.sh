#!/usr/bin/env bash
# Mirror figures: catch-up speed (leaves/s) of `cairn mirror` from an empty
# directory, from a tile directory, from S3 (s3s-fs on 127.0.0.1) and from
# a cairn server's read API; then proofs/s served by the primary and by a
# read-only mirror, one after the other (cairn-load, 64 connections, 5 s).
#
#   scripts/mirror_bench.sh [LEAVES]     (default 1000000; release builds of
#   cairn, cairn-load; s3s-fs from scripts/install-s3-server)
#
# Everything listens on 127.0.0.1 and stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
leaves="${1:-1000000}"
bin=target/release
work="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

secs() { python3 -c 'import sys,time; print(time.monotonic())'; }
rate() { python3 -c "import sys; print(f'{int($leaves/($2-$1)):,} leaves/s ({$2-$1:.1f} s)')"; }

"$bin/cairn-load" fill --dir "$work/primary" --leaves "$leaves" --arity 4 --hash blake3 >/dev/null
"$bin/cairn" publish "$work/primary" --to "$work/tiles" >/dev/null

t0=$(secs); "$bin/cairn" mirror --from "$work/tiles" "$work/m-dir" >/dev/null; t1=$(secs)
echo "mirror from a tile directory: $(rate "$t0" "$t1")"

mkdir -p "$work/s3/tiles"
RUST_LOG=s3s_fs=info NO_COLOR=1 "${S3S_FS:-$HOME/.cargo/bin/s3s-fs}" --host 127.0.0.1 --port 0 \
  --access-key bench --secret-key bench-secret "$work/s3" > "$work/s3.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "server is running" "$work/s3.log" && break; sleep 0.1; done
endpoint="$(grep -o 'http://[0-9.:]*' "$work/s3.log" | head -1)"
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret AWS_REGION=us-east-1
"$bin/cairn" publish "$work/primary" --to s3://tiles/bench --s3-endpoint "$endpoint" >/dev/null
t0=$(secs); "$bin/cairn" mirror --from s3://tiles/bench --s3-endpoint "$endpoint" "$work/m-s3" >/dev/null; t1=$(secs)
echo "mirror from S3 (s3s-fs): $(rate "$t0" "$t1")"

"$bin/cairn" serve "$work/primary" --listen 127.0.0.1:0 > "$work/primary.out" 2>/dev/null &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$work/primary.out" && break; sleep 0.1; done
primary="$(sed -n 's/^listening on //p' "$work/primary.out")"
t0=$(secs); "$bin/cairn" mirror --from "http://$primary" "$work/m-api" >/dev/null; t1=$(secs)
echo "mirror from a cairn server (GET /v1/leaves): $(rate "$t0" "$t1")"

"$bin/cairn" serve "$work/m-api" --read-only --listen 127.0.0.1:0 > "$work/mirror.out" 2>/dev/null &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$work/mirror.out" && break; sleep 0.1; done
mirror="$(sed -n 's/^listening on //p' "$work/mirror.out")"
for name in primary mirror; do
  addr="${!name}"
  out="$("$bin/cairn-load" run --addr "$addr" --workload proofs --seconds 5)"
  echo "proofs served by the $name: $(grep -m1 'req/s' <<< "$out")"
done
