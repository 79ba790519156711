#!/usr/bin/env python3
"""How far `cairn serve --publish` lags the durable size at a steady append
rate: appends RATE leaves/s over HTTP for SECONDS (batches every 50 ms),
samples /metrics every 100 ms, then reports the lag (leaves, and seconds
at that rate), the time to drain once appends stop, and what was written.

    scripts/publish_lag.py --cairn target/release/cairn [--rate 20000]
        [--seconds 20] [--s3] [--arity 4]

With --s3 the tiles go to an s3s-fs server this script starts on
127.0.0.1 (scripts/install-s3-server installs it); with --s3-endpoint URL
(and --s3-store s3://BUCKET/PREFIX) to an S3-compatible server already
running there, credentials from the usual AWS_* variables
(scripts/garage_bench.sh runs it against a Garage cluster); else to a
directory. Everything runs on 127.0.0.1 and stops by itself.
"""

import argparse
import http.client
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time


def metrics(addr):
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    out = {}
    for line in text.splitlines():
        match = re.match(r"^(cairn_publish\w+|cairn_publications_total) (\S+)$", line)
        if match:
            out[match.group(1)] = float(match.group(2))
    return out


def start_s3(root):
    binary = shutil.which("s3s-fs") or os.path.expanduser("~/.cargo/bin/s3s-fs")
    os.makedirs(os.path.join(root, "tiles"))
    env = dict(os.environ, RUST_LOG="s3s_fs=info", NO_COLOR="1")
    child = subprocess.Popen(
        [binary, "--host", "127.0.0.1", "--port", "0", "--access-key", "lag", "--secret-key", "lag-secret", root],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
    )
    for line in child.stdout:
        match = re.search(r"server is running at (http://\S+)", line)
        if match:
            threading.Thread(target=lambda: [None for _ in child.stdout], daemon=True).start()
            return child, match.group(1)
    raise SystemExit("s3s-fs did not start")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cairn", default="target/release/cairn")
    parser.add_argument("--rate", type=int, default=20_000, help="leaves per second")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--arity", type=int, default=4)
    parser.add_argument("--interval-ms", type=int, default=100, help="--publish-interval-ms")
    parser.add_argument("--s3", action="store_true", help="start s3s-fs and publish to it")
    parser.add_argument("--s3-endpoint", help="publish to this running S3-compatible server")
    parser.add_argument("--s3-store", default="s3://tiles/lag", help="with --s3-endpoint: where")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="cairn-lag-")
    s3 = None
    try:
        db = os.path.join(work, "db")
        subprocess.run([args.cairn, "init", db, "--arity", str(args.arity), "--hash", "blake3"], check=True, stdout=subprocess.DEVNULL)
        env = dict(os.environ, CAIRN_LOG="error")
        if args.s3_endpoint:
            store = ["--publish", args.s3_store, "--s3-endpoint", args.s3_endpoint]
            where = f"{args.s3_store} at {args.s3_endpoint}"
        elif args.s3:
            s3, endpoint = start_s3(os.path.join(work, "s3"))
            where = "s3 (s3s-fs on 127.0.0.1)"
            store = ["--publish", "s3://tiles/lag", "--s3-endpoint", endpoint]
            env.update(AWS_ACCESS_KEY_ID="lag", AWS_SECRET_ACCESS_KEY="lag-secret", AWS_REGION="us-east-1")
        else:
            store = ["--publish", os.path.join(work, "tiles")]
            where = "directory"
        server = subprocess.Popen(
            [args.cairn, "serve", db, "--listen", "127.0.0.1:0", "--publish-interval-ms", str(args.interval_ms), *store],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
        )
        addr = server.stdout.readline().strip().removeprefix("listening on ")
        host, port = addr.rsplit(":", 1)

        samples = []
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                m = metrics(addr)
                samples.append(m.get("cairn_publish_lag_leaves", 0))
                time.sleep(0.1)

        sampler = threading.Thread(target=sample)
        sampler.start()
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        started = time.monotonic()
        sent = 0
        while True:
            elapsed = time.monotonic() - started
            if elapsed >= args.seconds:
                break
            due = int(elapsed * args.rate) - sent
            if due > 0:
                body = bytearray(secrets.token_bytes(32 * due))
                for i in range(0, len(body), 32):
                    body[i] &= 0x1F
                conn.request("POST", "/v1/leaves", body=bytes(body), headers={"Content-Type": "application/octet-stream"})
                response = conn.getresponse()
                response.read()
                if response.status != 200:
                    raise SystemExit(f"append answered {response.status}")
                sent += due
            time.sleep(0.05)
        appended_for = time.monotonic() - started
        drained_from = time.monotonic()
        while metrics(addr).get("cairn_publish_lag_leaves", 1) > 0:
            time.sleep(0.02)
        drain = time.monotonic() - drained_from
        stop.set()
        sampler.join()
        final = metrics(addr)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)

        samples.sort()
        pick = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))]
        rate = sent / appended_for
        print(f"store: {where}; arity {args.arity}; publish interval {args.interval_ms} ms")
        print(f"appended {sent} leaves in {appended_for:.1f} s: {rate:.0f} leaves/s")
        print(f"lag (leaves, {len(samples)} samples): p50 {pick(0.5):.0f}, p99 {pick(0.99):.0f}, max {samples[-1]:.0f}")
        print(f"lag at that rate: p50 {pick(0.5) / rate * 1e3:.0f} ms, p99 {pick(0.99) / rate * 1e3:.0f} ms, max {samples[-1] / rate * 1e3:.0f} ms")
        print(f"drained {drain * 1e3:.0f} ms after the last append")
        print(
            f"publications {final['cairn_publications_total']:.0f}, failures {final['cairn_publish_failures_total']:.0f}, "
            f"objects {final['cairn_publish_objects_total']:.0f}, bytes {final['cairn_publish_bytes_total']:.0f}"
        )
    finally:
        if s3 is not None:
            s3.kill()
            s3.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
