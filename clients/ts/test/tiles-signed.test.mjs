// Signed tile stores: a database with a signer key publishes its signed
// checkpoint (the cairn CLI, served by a local HTTP server this test
// starts); proveFromTiles and consistencyFromTiles given the verifier key
// prove at the signed head, and refuse a checkpoint that is unsigned,
// signed by another key, or altered, before fetching any tile.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { CairnError, computeRoot, consistencyFromTiles, fetchCheckpoint, hashers, parseCheckpoint, proveFromTiles, TileClient, verifyCheckpoint } from "cairn-verify";
import { blake3 } from "cairn-verify/blake3";
import { cairnBinary, random, seed, toHexString } from "./helpers.mjs";

const binary = cairnBinary();
const skip = binary === null && "no cairn binary";

let dir;
let server;
let base;
/** Paths fetched, in order. */
const fetched = [];
/** path -> replacement body. */
const overrides = new Map();

before(async () => {
  if (binary === null) return;
  dir = mkdtempSync(join(tmpdir(), "cairn-signed-tiles-"));
  server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url, "http://x").pathname).replace(/^\/+/, "");
    fetched.push(path);
    const file = join(dir, path);
    const body = overrides.get(path) ?? (path.split("/").includes("..") || !existsSync(file) ? null : readFileSync(file));
    if (body === null) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "content-length": body.length }).end(body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(() => {
  server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const run = (...args) => execFileSync(binary, args, { maxBuffer: 1 << 26 });

async function rejection(promise) {
  return promise.then(
    () => assert.fail("accepted"),
    (error) => {
      assert.ok(error instanceof CairnError, String(error));
      return error;
    },
  );
}

test(`a signed store proves with its key and is refused otherwise (seed ${seed})`, { skip }, async () => {
  const rng = random(seed);
  const key = join(dir, "log.key");
  const vkey = run("keygen", "--name", "example.org/tiles", "--out", key).toString().trim();
  const other = run("keygen", "--name", "example.org/tiles", "--out", join(dir, "other.key")).toString().trim();
  const db = join(dir, "db");
  run("init", db, "--arity", "4", "--hash", "blake3", "--sign-key", key);
  const leaves = Array.from({ length: 1500 }, () => rng.bytes(32));
  writeFileSync(join(dir, "a.bin"), Buffer.concat(leaves.slice(0, 1000)));
  run("ingest", db, join(dir, "a.bin"));
  run("publish", db, "--to", join(dir, "public"));
  const url = `${base}/public`;
  const object = readFileSync(join(dir, "public", "checkpoint"), "utf8");
  // The object is the database's signed checkpoint.
  assert.equal(object, run("signed-checkpoint", db).toString());
  assert.equal(verifyCheckpoint(object, vkey).size, 1000n);

  // With the key: the proof is at the signed head, no head needed.
  const checkpoint = await fetchCheckpoint(url, { verifierKey: vkey });
  assert.equal(checkpoint.origin, "example.org/tiles");
  assert.equal(checkpoint.size, 1000n);
  const proof = await proveFromTiles(url, null, 7, { verifierKey: vkey, hashers: { blake3 } });
  assert.equal(toHexString(proof.toBytes()), toHexString(run("prove", db, "--index", "7", "--binary")));
  // A head given too must be the signed one.
  const head = { arity: 4, hash: hashers.blake3, size: checkpoint.size, root: checkpoint.root };
  await proveFromTiles(url, head, 7, { verifierKey: vkey });
  const stale = { ...head, size: 999n, root: computeRoot(leaves.slice(0, 999), { arity: 4, hash: hashers.blake3 }) };
  const mismatch = await rejection(proveFromTiles(url, stale, 7, { verifierKey: vkey }));
  assert.equal(mismatch.kind, "InconsistentHead", mismatch.message);
  // A shared client must hold the signed head too.
  await proveFromTiles(url, null, 7, { verifierKey: vkey, client: new TileClient(url, head) });
  const staleClient = await rejection(proveFromTiles(url, null, 7, { verifierKey: vkey, client: new TileClient(url, stale) }));
  assert.equal(staleClient.kind, "InconsistentHead", staleClient.message);
  // The hash's hasher is needed when no head is given.
  const missing = await rejection(proveFromTiles(url, null, 7, { verifierKey: vkey, hashers: {} }));
  assert.equal(missing.stage, "input", missing.message);
  assert.ok(missing.message.includes("blake3"), missing.message);
  // Without a key, the signed checkpoint is read (trusting the transport).
  const unverified = parseCheckpoint(object);
  assert.deepEqual([unverified.size, unverified.origin], [1000n, "example.org/tiles"]);

  // The store grows: consistency from the old head to the signed new one.
  writeFileSync(join(dir, "b.bin"), Buffer.concat(leaves.slice(1000)));
  run("ingest", db, join(dir, "b.bin"));
  run("publish", db, "--to", join(dir, "public"));
  const consistency = await consistencyFromTiles(url, null, { size: checkpoint.size, root: checkpoint.root }, { verifierKey: vkey, hashers });
  assert.equal(toHexString(consistency.toBytes()), toHexString(run("consistency", db, "--from", "1000", "--to", "1500", "--binary")));

  // Refused before any tile is fetched: another key, the unsigned form, an
  // altered signature, an altered tree line, an altered size.
  const good = readFileSync(join(dir, "public", "checkpoint"), "utf8");
  const flipped = (() => {
    // The last base64 digit before "=" carries two unused bits that must be
    // 0: swap between "A" and "E" (0 and 4) so the signature stays canonical.
    const at = good.trimEnd().length - 2;
    assert.equal(good.trimEnd().at(-1), "=");
    return good.slice(0, at) + (good[at] === "A" ? "E" : "A") + good.slice(at + 1);
  })();
  const root = toHexString(computeRoot(leaves, { arity: 4, hash: hashers.blake3 }));
  const cases = [
    [good, other, "verify", "NoKnownSignature"],
    [`cairn tiles v1\narity 4\nhash blake3\nsize 1500\nroot ${root}\n`, vkey, "verify", "NoKnownSignature"],
    [flipped, vkey, "verify", "BadSignature"],
    [good.replace("arity=4", "arity=2"), vkey, "verify", "BadSignature"],
    [good.replace("\n1500\n", "\n1499\n"), vkey, "verify", "BadSignature"],
  ];
  for (const [body, key, stage, kind] of cases) {
    overrides.set("public/checkpoint", Buffer.from(body));
    fetched.length = 0;
    for (const attempt of [
      proveFromTiles(url, null, 7, { verifierKey: key, hashers }),
      consistencyFromTiles(url, null, { size: 1000n, root: checkpoint.root }, { verifierKey: key, hashers }),
    ]) {
      const error = await rejection(attempt);
      assert.equal(error.stage, stage, error.message);
      assert.equal(error.kind, kind, error.message);
      assert.ok(error.message.includes("/public/checkpoint"), `names the object: ${error.message}`);
    }
    assert.deepEqual([...new Set(fetched)], ["public/checkpoint"], "no tile was fetched");
  }
  overrides.delete("public/checkpoint");
  // A malformed verifier key is the caller's error.
  const bad = await rejection(proveFromTiles(url, null, 7, { verifierKey: "not-a-key", hashers }));
  assert.equal(bad.stage, "input");
});
