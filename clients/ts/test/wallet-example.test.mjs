// examples/wallet.mjs end to end: tiles the cairn CLI published, served by
// the example's own static HTTP server; the witnesses it prints equal
// `cairn prove`'s, before and after the tree grows, with its state kept in
// a file between runs; it fetches only the checkpoint and whole tiles. It
// runs with the WebAssembly tracker where dist/cairn.wasm exists (and then
// also with --no-wasm: the same witnesses), with the TypeScript path
// otherwise.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { decodeMembership } from "cairn-verify";
import { cairnBinary, random, seed } from "./helpers.mjs";

const binary = cairnBinary();
const example = fileURLToPath(new URL("../examples/wallet.mjs", import.meta.url));
const hasWasm = existsSync(fileURLToPath(new URL("../dist/cairn.wasm", import.meta.url)));
const dir = mkdtempSync(join(tmpdir(), "cairn-wallet-example-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const cairn = (...args) => execFileSync(binary, args, { maxBuffer: 1 << 26 });

/** Runs the example: the witnesses it printed (decoded), after checking it fetched only the checkpoint and whole tiles. */
function wallet(...args) {
  const { stdout, stderr, status } = spawnSync(process.execPath, [example, ...args], { cwd: dir, encoding: "utf8" });
  assert.equal(status, 0, stderr);
  assert.match(stderr, /fetched \d+ objects, \d+ bytes$/m);
  assert.doesNotMatch(stderr, /unexpected objects/);
  return stdout
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => decodeMembership(line));
}

test(`examples/wallet.mjs follows a served tile store: its witnesses are cairn prove's (seed ${seed})`, { skip: binary === null && "no cairn binary" }, () => {
  const rng = random(seed);
  const db = join(dir, "db");
  const tiles = join(dir, "tiles");
  cairn("init", db, "--arity", "2", "--hash", "poseidon");
  const grow = (count) => {
    const leaves = Array.from({ length: count }, () => {
      const leaf = rng.bytes(32);
      leaf[0] &= 0x1f;
      return leaf;
    });
    writeFileSync(join(dir, "leaves.bin"), Buffer.concat(leaves));
    cairn("ingest", db, join(dir, "leaves.bin"));
    cairn("publish", db, "--to", tiles);
  };
  const prove = (index) => Buffer.from(cairn("prove", db, "--index", String(index), "--binary")).toString("hex");
  const check = (got, want, context) => {
    assert.deepEqual(
      got.map((p) => [p.index, p.size, Buffer.from(p.toBytes()).toString("hex")]),
      want.map((i) => [BigInt(i), got[0]?.size, prove(i)]),
      context,
    );
  };
  const marks = [rng.int(0, 299), 255, 299];
  grow(300);
  const first = wallet(tiles, "--state", "a.state", ...marks.map(String));
  assert.equal(first[0]?.size, 300n);
  check(first, [...new Set(marks)].sort((a, b) => a - b), "first run");

  grow(450);
  // No marks given: the state file remembers them.
  const second = wallet(tiles, "--state", "a.state");
  assert.equal(second[0]?.size, 750n);
  check(second, [...new Set(marks)].sort((a, b) => a - b), "after growth");
  if (hasWasm) {
    const pure = wallet(tiles, "--state", "b.state", "--no-wasm", ...marks.map(String));
    assert.deepEqual(
      pure.map((p) => p.toJson()),
      second.map((p) => p.toJson()),
      "the TypeScript path gives the WebAssembly tracker's witnesses",
    );
  }
});
