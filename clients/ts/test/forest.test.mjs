// The HTTP client against a real `cairn serve` of a database of several
// trees (started here): the trees listed, a block written to two trees at
// once, each tree's proofs verified through its scoped client, and a
// refused block that writes nothing.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CairnClient, CairnError, computeRoot, hashers, toHex } from "cairn-verify";
import { cairnBinary, random, seed, serveCairn } from "./helpers.mjs";

const binary = cairnBinary();

async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof CairnError, `threw ${error?.constructor?.name}: ${error?.message}`);
    return error;
  }
  assert.fail("accepted");
}


test("the client writes a block to several trees and verifies each tree's proofs", { skip: binary === null && "no cairn binary" }, async () => {
  const rng = random(seed);
  const dir = mkdtempSync(join(tmpdir(), "cairn-ts-forest-"));
  const db = join(dir, "db");
  const leaf = () => {
    const value = rng.bytes(32);
    value[0] &= 0x1f;
    return value;
  };
  execFileSync(binary, ["init", db]);
  execFileSync(binary, ["tree", "add", db, "notes", "--arity", "2", "--hash", "poseidon"]);
  execFileSync(binary, ["tree", "add", db, "nullifiers", "--arity", "4", "--hash", "blake3"]);
  const server = await serveCairn(binary, db);
  try {
    const notesTree = { arity: 2, hash: hashers.poseidon };
    const nullTree = { arity: 4, hash: hashers.blake3 };
    const client = new CairnClient(server.url, notesTree);
    const listed = await client.trees();
    assert.deepEqual(
      listed.trees.map((t) => [t.name, t.arity, t.hash, t.size]),
      [
        ["notes", 2, "poseidon", 0n],
        ["nullifiers", 4, "blake3", 0n],
      ],
    );
    assert.equal(listed.defaultTree, null);
    assert.equal(listed.journaled, true);

    const notes = Array.from({ length: 9 }, leaf);
    const nullifiers = Array.from({ length: 5 }, leaf);
    const written = await client.appendBlock({ number: 100, hash: new Uint8Array(32).fill(7), trees: { notes, nullifiers: nullifiers.map(toHex) } });
    assert.equal(written.block.number, 100n);
    assert.equal(toHex(written.block.hash), "0x" + "07".repeat(32));
    const byName = Object.fromEntries(written.trees.map((t) => [t.name, t]));
    assert.equal(byName.notes.size, 9n);
    assert.equal(byName.nullifiers.firstIndex, 0n);
    assert.equal(toHex(byName.notes.root), toHex(computeRoot(notes, notesTree)));

    // Each tree through its scoped client: its own head, verified proofs.
    const notesClient = client.forTree("notes");
    const reported = await notesClient.root();
    assert.equal(reported.size, 9n);
    const trusted = { size: 9, root: computeRoot(notes, notesTree) };
    const proof = await notesClient.proof(4, trusted);
    assert.equal(toHex(proof.leaf), toHex(notes[4]));
    const nullClient = client.forTree("nullifiers", nullTree);
    const nullHead = { size: 5, root: computeRoot(nullifiers, nullTree) };
    assert.equal((await nullClient.contains(nullifiers[3], nullHead))?.index, 3n);
    assert.equal(await nullClient.contains(notes[0], nullHead), null);
    // A scoped client checks the tree it is told to trust.
    assert.equal((await rejection(client.forTree("nullifiers").root())).kind, "ArityMismatch");
    // No tree named default here: the client without a tree name is refused by name.
    const lacking = await rejection(client.root());
    assert.equal(lacking.kind, "NotFound");
    assert.match(lacking.message, /no tree named "default"/);

    // Refusals write nothing in any tree.
    const unknown = await rejection(client.appendBlock({ number: 101, trees: { notes: [leaf()], ghost: [leaf()] } }));
    assert.equal(unknown.kind, "NotFound");
    assert.equal(unknown.status, 404);
    assert.match(unknown.message, /ghost/);
    const duplicate = await rejection(client.appendBlock({ number: 101, trees: { notes: [leaf()], nullifiers: [nullifiers[0]] } }));
    assert.equal(duplicate.kind, "Conflict");
    const order = await rejection(client.appendBlock({ number: 100, trees: { notes: [leaf()] } }));
    assert.equal(order.kind, "Conflict");
    assert.match(order.message, /does not follow/);
    const after = await client.trees();
    assert.deepEqual(
      after.trees.map((t) => t.size),
      [9n, 5n],
    );
    assert.equal(after.lastBlock, 100n);
    // Arguments are checked before anything is sent.
    assert.equal((await rejection(client.appendBlock({ number: 102, trees: { "Bad Name": [] } }))).kind, "InvalidArgument");
    assert.throws(() => client.forTree("../root"), (error) => error instanceof CairnError && error.kind === "InvalidArgument");
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
