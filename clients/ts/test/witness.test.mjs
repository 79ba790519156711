// The batch witnesses through the client against a real `cairn serve`:
// `appendWitness` and `insertWitness` resolve to exactly the JSON `cairn
// prove --append-witness` / `--insert-witness` print for the same database
// (what snarkjs reads), for the default tree and under /v1/trees/{name};
// refusals reject with the server's status, and an answer for another
// range or other values is refused.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CairnClient, CairnError, hashers, IndexedClient } from "cairn-verify";
import { cairnBinary, random, seed, serveCairn } from "./helpers.mjs";

const binary = cairnBinary();
const cairn = (...args) => execFileSync(binary, args).toString();


async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof CairnError, `threw ${error?.constructor?.name}: ${error?.message}`);
    return error;
  }
  assert.fail("accepted");
}

/** A field element as the 0x-hex of its 32 bytes. */
const hex = (n) => "0x" + BigInt(n).toString(16).padStart(64, "0");

/** A database made by `init` args with `values` (decimal) ingested, in a fresh directory. */
function database(name, init, values) {
  const dir = mkdtempSync(join(tmpdir(), `cairn-ts-${name}-`));
  const db = join(dir, "db");
  writeFileSync(join(dir, "values.dec"), values.join("\n") + "\n");
  cairn("init", db, ...init);
  cairn("ingest", db, join(dir, "values.dec"), "--format", "dec");
  return { dir, db };
}

test(`appendWitness is what cairn prove --append-witness prints (seed ${seed})`, { skip: binary === null && "no cairn binary" }, async () => {
  const rng = random(seed);
  const leaves = Array.from({ length: 24 }, (_, i) => i * 2 ** 20 + rng.int(1, 2 ** 20 - 1));
  const { dir, db } = database("append-witness", ["--arity", "2", "--hash", "poseidon"], leaves);
  const from = rng.int(0, 12);
  const printed = JSON.parse(cairn("prove", db, "--append-witness", `${from}..${from + 8}`, "--circuit-depth", "6"));
  const whole = JSON.parse(cairn("prove", db, "--append-witness", "16..24"));
  const server = await serveCairn(binary, db);
  try {
    const client = new CairnClient(server.url, { arity: 2, hash: hashers.poseidon });
    assert.deepEqual(await client.appendWitness(from, from + 8, 6), printed);
    assert.deepEqual(await client.forTree("default").appendWitness(16n, 24n), whole);
    assert.deepEqual(printed.leaves, leaves.slice(from, from + 8).map(String));

    const bad = await rejection(client.appendWitness(4, 7));
    assert.equal(bad.kind, "Http");
    assert.equal(bad.status, 400);
    assert.match(bad.message, /a batch of 3/);
    const beyond = await rejection(client.appendWitness(4, 40));
    assert.equal(beyond.kind, "NotFound");
    assert.match(beyond.message, /beyond the tree's durable size 24/);
    await assert.rejects(client.appendWitness(8, 4), /from 8 is above to 4/);
    // An answer for another range is refused.
    const shifted = (url, init) =>
      fetch(url, init).then(async (answer) => new Response((await answer.text()).replace(`"size":"${from}"`, `"size":"${from + 1}"`), answer));
    const lied = new CairnClient(server.url, { arity: 2, hash: hashers.poseidon }, { fetch: shifted });
    const refused = await rejection(lied.appendWitness(from, from + 8, 6));
    assert.equal(refused.kind, "BadResponse");
    assert.match(refused.message, /size is/);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("insertWitness is what cairn prove --insert-witness prints, and inserts nothing", { skip: binary === null && "no cairn binary" }, async () => {
  const stored = [100, 200, 300, 400, 500, 600, 700, 800];
  const { dir, db } = database("insert-witness", ["--kind", "indexed", "--arity", "2", "--hash", "poseidon"], stored);
  // Two sharing a low leaf, one above every stored value, one below.
  const batch = [150, 160, 5000, 7];
  const printed = JSON.parse(cairn("prove", db, "--insert-witness", batch.join(","), "--circuit-depth", "5"));
  const server = await serveCairn(binary, db);
  try {
    const t = { arity: 2, hash: hashers.poseidon, kind: "indexed" };
    const client = new IndexedClient(server.url, t);
    const before = await client.root();
    assert.deepEqual(await client.insertWitness(batch.map(hex), 5), printed);
    assert.deepEqual(await client.forTree("default").insertWitness(batch.map(hex), 5), printed);
    assert.deepEqual(await client.root(), before, "nothing inserted");

    const held = await rejection(client.insertWitness([150, 300, 160, 170].map(hex)));
    assert.equal(held.kind, "Conflict");
    assert.equal(held.status, 409);
    const three = await rejection(client.insertWitness([150, 160, 170].map(hex)));
    assert.equal(three.status, 400);
    assert.match(three.message, /a batch of 3/);
    // An indexed tree has no append witness.
    const lean = await rejection(client.appendWitness(0, 4));
    assert.equal(lean.kind, "NotFound");
    assert.match(lean.message, /no append witnesses/);
    // An answer for other values is refused.
    const swapped = (url, init) =>
      fetch(url, init).then(async (answer) => new Response((await answer.text()).replace('"values":["150","160"', '"values":["160","150"'), answer));
    const lied = new IndexedClient(server.url, t, { fetch: swapped });
    const refused = await rejection(lied.insertWitness(batch.map(hex), 5));
    assert.equal(refused.kind, "BadResponse");
    assert.match(refused.message, /values\[0\] is not the value asked/);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
