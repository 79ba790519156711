#!/usr/bin/env bash
# Whole-process durable ingest, as a new user would run it: `cairn init` +
# `cairn ingest` of a file of LEAVES random 32-byte leaves (N = 4, BLAKE3,
# the nullifier set on, blocks of 1M leaves) against rotortree 0.20
# ingesting the same file (`rotor_ingest`: insert_many and a wait per 1M
# block, no duplicate check), ROUNDS interleaved rounds (which goes first
# alternates), page cache warm; prints each run, the medians and the ratio
# cairn / rotortree (below 1: cairn is faster). The roots must be equal.
#
#   scripts/ingest_vs_rotortree.sh [LEAVES] [ROUNDS]   (default 10000000 3;
#   release builds: cargo build --release --bin cairn -p cairn-bench --bin rotor_ingest)
set -euo pipefail
cd "$(dirname "$0")/.."
leaves="${1:-10000000}"
rounds="${2:-3}"
bin=target/release
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 -c "
import hashlib, sys
out = sys.stdout.buffer
for i in range($leaves):
    out.write(hashlib.blake2s(i.to_bytes(8, 'little')).digest())
" > "$work/leaves.bin"
cat "$work/leaves.bin" > /dev/null

now() { python3 -c 'import time; print(time.monotonic())'; }
run_cairn() {
  rm -rf "$work/c"
  local t0 t1
  t0=$(now)
  "$bin/cairn" init "$work/c" --arity 4 --hash blake3 > /dev/null
  "$bin/cairn" ingest "$work/c" "$work/leaves.bin" > /dev/null
  t1=$(now)
  python3 -c "print(f'{$t1-$t0:.3f}')"
}
run_rotor() {
  rm -rf "$work/r"
  local t0 t1
  t0=$(now)
  "$bin/rotor_ingest" "$work/r" "$work/leaves.bin" --arity 4 > "$work/rotor.out"
  t1=$(now)
  python3 -c "print(f'{$t1-$t0:.3f}')"
}

cairn_times=()
rotor_times=()
for round in $(seq "$rounds"); do
  if (( round % 2 )); then
    c=$(run_cairn); r=$(run_rotor)
  else
    r=$(run_rotor); c=$(run_cairn)
  fi
  cairn_root="$("$bin/cairn" root "$work/c")"
  rotor_root="$(sed -n 's/.*root //p' "$work/rotor.out")"
  [ "$cairn_root" = "$rotor_root" ] || { echo "roots differ: cairn $cairn_root, rotortree $rotor_root" >&2; exit 1; }
  echo "round $round: cairn ingest $c s, rotortree $r s"
  cairn_times+=("$c"); rotor_times+=("$r")
done
python3 - "$leaves" "${cairn_times[*]}" "${rotor_times[*]}" <<'EOF'
import statistics, sys
leaves = int(sys.argv[1])
c = [float(x) for x in sys.argv[2].split()]
r = [float(x) for x in sys.argv[3].split()]
mc, mr = statistics.median(c), statistics.median(r)
print(f"median: cairn {mc:.3f} s ({leaves / mc / 1e6:.2f}M leaves/s), rotortree {mr:.3f} s ({leaves / mr / 1e6:.2f}M leaves/s)")
print(f"ratio cairn/rotortree: median {mc / mr:.2f}, per round {', '.join(f'{a / b:.2f}' for a, b in zip(c, r))}")
EOF
