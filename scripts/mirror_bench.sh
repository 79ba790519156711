#!/usr/bin/env bash
# Mirror figures: catch-up speed (leaves/s) of `cairn mirror` from an empty
# directory, from a tile directory, from S3 (s3s-fs on 127.0.0.1) and from
# a cairn server's read API; then proofs/s served by the primary and by a
# read-only mirror, one after the other (cairn-load, 64 connections, 5 s).
#
#   scripts/mirror_bench.sh [LEAVES]     (default 1000000; release builds of
#   cairn, cairn-load; s3s-fs from scripts/install-s3-server)
#
# With BULK=1 it measures bulk catch-up from S3 instead, in one run: BLAKE3
# N = 4 at LEAVES with --verify-key (a signed publication), reading bundles,
# each mirror's root checked against the primary's; Poseidon N = 2 at
# POSEIDON_LEAVES (default 1000000; 0 skips it) with the hashing bound
# beside it (`cairn root` of the same leaves from a file: the core's hash
# rate alone), the two interleaved. Each mirror row is the median of ROUNDS
# runs (default 3), with the runs listed, the mirror process's median CPU
# time (user + system) and `uptime` after it; with OLD=path/to/another/cairn
# each is also run with that binary, interleaved, and both are shown side
# by side. SWEEP=1 adds reading chunk-sized ranges (--no-bundles), the
# --in-flight values IN_FLIGHT (default "1 2 4 8 16 32"; cairn takes at
# most 16) interleaved round by round, and the publishing cost per 1M
# leaves (objects = PUTs, bytes) of the tiles and of the bundles.
# PERF=FILE runs one more mirror under `perf record -g` and
# `/usr/bin/time -v` and writes the report's top to FILE. BIN=DIR takes
# cairn and cairn-load from DIR instead of target/release; without
# cairn-load the databases are made by `cairn init` and `cairn ingest`.
#
# Everything listens on 127.0.0.1 and stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
leaves="${1:-1000000}"
bin="${BIN:-target/release}"
work="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

start_s3() {
  mkdir -p "$work/s3/tiles"
  RUST_LOG=s3s_fs=info NO_COLOR=1 "${S3S_FS:-$HOME/.cargo/bin/s3s-fs}" --host 127.0.0.1 --port 0 \
    --access-key bench --secret-key bench-secret "$work/s3" > "$work/s3.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q "server is running" "$work/s3.log" && break; sleep 0.1; done
  endpoint="$(grep -o 'http://[0-9.:]*' "$work/s3.log" | head -1)"
  export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret AWS_REGION=us-east-1
}

secs() { python3 -c 'import sys,time; print(time.monotonic())'; }
rate() { python3 -c "import sys; print(f'{int($leaves/($2-$1)):,} leaves/s ({$2-$1:.1f} s)')"; }

# A database of LEAVES random leaves (N, HASH): with cairn-load's `fill`
# when it is built, else `cairn init` and `cairn ingest` of random leaves
# (each below 2^253, so that they are field elements for Poseidon too).
fill_db() { # DIR LEAVES ARITY HASH
  if [[ -x "$bin/cairn-load" ]]; then
    "$bin/cairn-load" fill --dir "$1" --leaves "$2" --arity "$3" --hash "$4" >/dev/null 2>&1
    return
  fi
  "$bin/cairn" init "$1" --arity "$3" --hash "$4" >/dev/null
  python3 - "$2" <<'PY' | "$bin/cairn" ingest "$1" - >/dev/null
import os, sys
left, block = int(sys.argv[1]), 1 << 16
out = sys.stdout.buffer
while left:
    k = min(left, block)
    b = bytearray(os.urandom(32 * k))
    b[::32] = bytes(x & 0x1f for x in b[::32])
    out.write(b)
    left -= k
PY
}

if [[ "${BULK:-}" == 1 ]]; then
  start_s3
  # OLD=path/to/another/cairn runs every mirror row with both binaries,
  # interleaved (old, new, old, new, ...), ROUNDS times (default 3), and
  # prints the medians side by side.
  old="${OLD:-}"
  rounds="${ROUNDS:-3}"
  mirror_once() { # BIN FROM ARGS...: seconds of one mirror into a new directory
    local bin=$1 from=$2; shift 2
    local t0 t1; t0=$(secs)
    /usr/bin/time -f '%U %S' -a -o "$work/cpu-$(basename "$(dirname "$(realpath "$bin")")")" \
      "$bin" mirror --from "$from" --s3-endpoint "$endpoint" "$@" "$work/m" >/dev/null
    t1=$(secs)
    [[ -z "${want_root:-}" || "$("$bin" root "$work/m")" == "$want_root" ]] || { echo "the mirror's root differs from the primary's" >&2; exit 1; }
    rm -rf "$work/m"
    python3 -c "print($t1-$t0)"
  }
  median_row() { # NAME LEAVES K OLD_TIMES... NEW_TIMES...: one row of medians
    python3 - "$@" <<'PY'
import statistics, sys
name, n, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
olds, news = [float(x) for x in sys.argv[4:4 + k]], [float(x) for x in sys.argv[4 + k:]]
def cell(ts):
    m = statistics.median(ts)
    return f"{int(n / m):>11,} leaves/s ({m:.1f} s)"
row = f"{name:<44} {cell(news)}   runs {', '.join(f'{t:.1f}' for t in news)} s"
if olds:
    row += f"   old {cell(olds)}   x{statistics.median(olds) / statistics.median(news):.2f}"
print(row, flush=True)
PY
  }
  timed_mirror() { # NAME LEAVES FROM ARGS...: the row of one configuration
    local name=$1 n=$2 from=$3; shift 3
    local new_times=() old_times=()
    for _ in $(seq "$rounds"); do
      [[ -n "$old" ]] && old_times+=("$(mirror_once "$old" "$from" "$@")")
      new_times+=("$(mirror_once "$bin/cairn" "$from" "$@")")
    done
    median_row "$name" "$n" "${#old_times[@]}" "${old_times[@]}" "${new_times[@]}"
    # The mirror process's CPU time (user + system), median per binary:
    # what the machine's load does not change.
    for f in "$work"/cpu-*; do
      python3 -c "import statistics,sys; print(f'  CPU of the mirror ({sys.argv[1]}): median {statistics.median(sum(map(float,l.split())) for l in open(sys.argv[2]) if l.strip()):.2f} s')" "$(basename "$f" | sed 's/^cpu-//')" "$f"
      rm -f "$f"
    done
    echo "  (uptime after: $(uptime | sed 's/.*load/load/'))"
  }
  "$bin/cairn" keygen --name bench.example/tiles --out "$work/signer.key" > "$work/verifier.key"
  fill_db "$work/primary" "$leaves" 4 blake3
  want_root="$("$bin/cairn" root "$work/primary")"
  t0=$(secs)
  "$bin/cairn" publish "$work/primary" --to s3://tiles/bulk --s3-endpoint "$endpoint" --sign-key "$work/signer.key" >/dev/null
  t1=$(secs)
  echo "published $leaves leaves (signed) to s3s-fs in $(python3 -c "print(f'{$t1-$t0:.1f}')") s"
  echo "BLAKE3 N = 4, $leaves leaves, from S3 (s3s-fs on 127.0.0.1), --verify-key, medians of $rounds:"
  key=(--verify-key "$work/verifier.key")
  timed_mirror "bundles, --in-flight default" "$leaves" s3://tiles/bulk "${key[@]}"
  if [[ -n "${PERF:-}" ]]; then
    # One more run under `perf record -g` (call graphs of the mirror
    # process), and its CPU time: PERF=FILE keeps the report's top.
    /usr/bin/time -v perf record -F 499 -g -o "$work/perf.data" -- "$bin/cairn" mirror --from s3://tiles/bulk \
      --s3-endpoint "$endpoint" "${key[@]}" "$work/m" >/dev/null 2> "$work/time.txt"
    grep -E 'Elapsed|User time|System time|Percent of CPU|Maximum resident' "$work/time.txt"
    perf report -i "$work/perf.data" --no-children --percent-limit 1 --stdio 2>/dev/null | grep -v '^$' > "$PERF"
    rm -rf "$work/m" "$work/perf.data"
  fi
  if [[ "${SWEEP:-}" == 1 ]]; then
    timed_mirror "leaf tiles only (--no-bundles)" "$leaves" s3://tiles/bulk "${key[@]}" --no-bundles
    # The --in-flight values interleaved, round by round, so that a change
    # in the machine's load falls on all of them alike.
    flights=(${IN_FLIGHT:-1 2 4 8 16 32})
    declare -A sweep
    for _ in $(seq "$rounds"); do
      for f in "${flights[@]}"; do
        sweep[$f]+=" $(mirror_once "$bin/cairn" s3://tiles/bulk "${key[@]}" --in-flight "$f")"
      done
    done
    for f in "${flights[@]}"; do
      # shellcheck disable=SC2086
      median_row "bundles, --in-flight $f" "$leaves" 0 ${sweep[$f]}
    done
    rm -f "$work"/cpu-*
    echo "  (uptime after: $(uptime | sed 's/.*load/load/'))"

    # Publishing cost: what `publish` wrote to a directory, bundles apart.
    "$bin/cairn" publish "$work/primary" --to "$work/pub" >/dev/null
    python3 - "$work/pub" "$leaves" <<'PY'
import os, sys
root, leaves = sys.argv[1], int(sys.argv[2])
count = {"bundle": [0, 0], "other": [0, 0]}
for d, _, files in os.walk(root):
    for f in files:
        kind = "bundle" if os.path.relpath(d, root).split(os.sep)[0] == "bundle" else "other"
        count[kind][0] += 1
        count[kind][1] += os.path.getsize(os.path.join(d, f))
per = 1e6 / leaves
t, b = count["other"], count["bundle"]
print(f"publishing per 1M leaves: tiles and checkpoint {t[0]*per:,.0f} objects (PUTs), {t[1]*per/2**20:,.1f} MiB; "
      f"bundles {b[0]*per:,.0f} objects, {b[1]*per/2**20:,.1f} MiB")
PY
    rm -rf "$work/pub"
  fi
  want_root=""
  rm -rf "$work/primary"
  [[ "${POSEIDON_LEAVES:-1000000}" == 0 ]] && exit 0

  p="${POSEIDON_LEAVES:-1000000}"
  fill_db "$work/pos" "$p" 2 poseidon
  "$bin/cairn" publish "$work/pos" --to s3://tiles/bulk-p --s3-endpoint "$endpoint" >/dev/null
  "$bin/cairn" export "$work/pos" > "$work/pos.bin"
  echo "Poseidon N = 2, $p leaves, medians of $rounds (the bound and the mirror interleaved):"
  bound=() mirrored=()
  for _ in $(seq "$rounds"); do
    t0=$(secs); "$bin/cairn" root --arity 2 --hash poseidon "$work/pos.bin" >/dev/null; t1=$(secs)
    bound+=("$(python3 -c "print($t1-$t0)")")
    mirrored+=("$(mirror_once "$bin/cairn" s3://tiles/bulk-p)")
  done
  median_row "hashing bound (cairn root of a leaf file)" "$p" 0 "${bound[@]}"
  median_row "mirror from S3, bundles" "$p" 0 "${mirrored[@]}"
  echo "  (uptime after: $(uptime | sed 's/.*load/load/'))"
  exit 0
fi

"$bin/cairn-load" fill --dir "$work/primary" --leaves "$leaves" --arity 4 --hash blake3 >/dev/null
"$bin/cairn" publish "$work/primary" --to "$work/tiles" >/dev/null

t0=$(secs); "$bin/cairn" mirror --from "$work/tiles" "$work/m-dir" >/dev/null; t1=$(secs)
echo "mirror from a tile directory: $(rate "$t0" "$t1")"

start_s3
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
