// The HTTP client against a real `cairn serve` on 127.0.0.1 (started here),
// and against a lying server: every proof it returns has been verified
// against the head the caller trusts, and a tampered answer is refused.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { once } from "node:events";
import { test } from "node:test";
import { CairnClient, CairnError, computeRoot, hashers, IndexedClient, indexedRoot, toHex } from "cairn-verify";
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


for (const [arity, hashName] of [
  [4, "blake3"],
  [3, "poseidon"],
]) {
  test(`the client fetches and verifies proofs from cairn serve (${hashName}, N=${arity})`, { skip: binary === null && "no cairn binary" }, async () => {
    const rng = random(seed);
    const dir = mkdtempSync(join(tmpdir(), "cairn-ts-serve-"));
    const db = join(dir, "db");
    const leaf = () => {
      const value = rng.bytes(32);
      value[0] &= 0x1f;
      return value;
    };
    const leaves = Array.from({ length: 150 }, leaf);
    writeFileSync(join(dir, "leaves.bin"), Buffer.concat(leaves));
    execFileSync(binary, ["init", db, "--arity", String(arity), "--hash", hashName]);
    execFileSync(binary, ["ingest", db, join(dir, "leaves.bin")]);
    const server = await serveCairn(binary, db);
    try {
      const t = { arity, hash: hashers[hashName] };
      const client = new CairnClient(server.url, t);
      const reported = await client.root();
      assert.equal(reported.size, 150n);
      // The caller's trusted head comes from elsewhere (here: computed from the leaves).
      const trusted = { size: 150, root: computeRoot(leaves, t) };
      assert.equal(toHex(reported.root), toHex(trusted.root));

      for (const index of [0, 1, 77, 149]) {
        const proof = await client.proof(index, trusted);
        assert.equal(proof.index, BigInt(index));
        assert.equal(toHex(proof.leaf), toHex(leaves[index]));
      }
      // A historical proof against an older trusted head.
      const older = { size: 40, root: computeRoot(leaves.slice(0, 40), t) };
      const old = await client.proof(7, older);
      assert.equal(old.size, 40n);

      const present = await client.contains(leaves[33], trusted);
      assert.equal(present?.index, 33n);
      assert.equal(await client.contains(leaf(), trusted), null);
      assert.equal(await client.contains(leaves[100], older), null, "a leaf beyond the trusted size is not in that tree");

      // A wrong trusted root: the proof the server sends cannot match it.
      const wrong = await rejection(client.proof(3, { size: 150, root: computeRoot(leaves.slice(0, 149), t) }));
      assert.equal(wrong.stage, "verify");
      assert.equal(wrong.kind, "RootMismatch");
      // A size the server does not have.
      const absent = await rejection(client.proof(3, { size: 151, root: trusted.root }));
      assert.equal(absent.stage, "fetch");
      assert.equal(absent.kind, "NotFound", absent.message);
      assert.equal(absent.status, 404);

      await client.consistency(older, trusted);
      const forged = await rejection(client.consistency(older, { size: 150, root: older.root }));
      assert.equal(forged.stage, "verify");

      // Append through the API, then move trust and the proof forward.
      const more = Array.from({ length: 31 }, leaf);
      const appended = await fetch(`${server.url}/v1/leaves`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ leaves: more.map(toHex) }),
      });
      assert.equal(appended.status, 200, await appended.clone().text());
      const moved = await client.advance(older, old);
      assert.equal(moved.head.size, 181n);
      assert.equal(toHex(moved.head.root), toHex(computeRoot([...leaves, ...more], t)));
      assert.equal(moved.proof.size, 181n);
      assert.equal(toHex(moved.proof.leaf), toHex(leaves[7]));

      // A client that trusts another arity or hash refuses the server's tree.
      const other = new CairnClient(server.url, { arity: arity === 4 ? 2 : 4, hash: t.hash });
      assert.equal((await rejection(other.root())).kind, "ArityMismatch");
      assert.equal((await rejection(other.proof(0, trusted))).kind, "ArityMismatch");
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test("the client verifies a fixed-depth (imt) tree's proofs from cairn serve, its empty root included", { skip: binary === null && "no cairn binary" }, async () => {
  const rng = random(seed);
  const dir = mkdtempSync(join(tmpdir(), "cairn-ts-serve-imt-"));
  const db = join(dir, "db");
  const leaf = () => {
    const value = rng.bytes(32);
    value[0] &= 0x1f;
    return value;
  };
  const zero = leaf();
  execFileSync(binary, ["init", db, "--arity", "3", "--hash", "keccak256", "--kind", "imt", "--depth", "7", "--zero", toHex(zero)]);
  const server = await serveCairn(binary, db);
  try {
    const t = { arity: 3, hash: hashers.keccak256, kind: "imt", depth: 7, zero };
    const client = new CairnClient(server.url, t);
    const empty = await client.root();
    assert.equal(empty.size, 0n);
    assert.equal(empty.kind.kind, "imt");
    assert.equal(toHex(empty.kind.zero), toHex(zero));
    assert.equal(toHex(empty.root), toHex(computeRoot([], t)), "the empty imt's root is zeros[depth]");

    const leaves = Array.from({ length: 50 }, leaf);
    const appended = await fetch(`${server.url}/v1/leaves`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ leaves: leaves.map(toHex) }),
    });
    assert.equal(appended.status, 200, await appended.clone().text());
    const trusted = { size: 50, root: computeRoot(leaves, t) };
    assert.equal(toHex((await client.root()).root), toHex(trusted.root));
    for (const index of [0, 26, 49]) {
      const proof = await client.proof(index, trusted);
      assert.equal(proof.tree.kind, "imt");
      assert.equal(toHex(proof.leaf), toHex(leaves[index]));
    }
    await client.consistency({ size: 0, root: empty.root }, trusted);
    const older = { size: 20, root: computeRoot(leaves.slice(0, 20), t) };
    const moved = await client.advance(older, await client.proof(4, older));
    assert.equal(moved.head.size, 50n);
    assert.equal(moved.proof.size, 50n);

    // A client that trusts another kind, depth or zero value refuses the server's tree and its proofs.
    for (const other of [
      { arity: 3, hash: hashers.keccak256 },
      { ...t, depth: 8 },
      { ...t, zero: leaves[0] },
    ]) {
      const wrong = new CairnClient(server.url, other);
      assert.equal((await rejection(wrong.root())).kind, "KindMismatch");
      const refused = await rejection(wrong.proof(1, other.kind === "imt" ? trusted : { size: 50, root: computeRoot(leaves, other) }));
      assert.equal(refused.kind, "KindMismatch");
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the client refuses what a lying or broken server sends", async () => {
  const t = { arity: 2, hash: hashers.blake3 };
  const leaves = Array.from({ length: 5 }, (_, i) => new Uint8Array(32).fill(i + 1));
  const head = { size: 5, root: computeRoot(leaves, t) };
  let answer = () => [200, "{}"];
  const server = createServer((request, response) => {
    const [status, body] = answer(request.url);
    response.writeHead(status, { "content-type": "application/json" });
    response.end(body);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const client = new CairnClient(`http://127.0.0.1:${server.address().port}`, t);
  const leafHex = toHex(leaves[2]);
  const proofJson = (leaf, siblings) =>
    JSON.stringify({ version: 1, kind: "membership", arity: 2, hash: "blake3", index: 2, size: 5, leaf, siblings });
  try {
    const cases = [
      // a proof for another leaf value than the one asked about
      ["/v1/proofs", () => [200, proofJson(toHex(leaves[3]), [[toHex(leaves[3])], ["0x" + "00".repeat(32)], [toHex(leaves[4])]])], "verify"],
      // a malformed proof
      ["/v1/proofs", () => [200, proofJson(leafHex, [])], "decode"],
      ["/v1/proofs", () => [200, "not json"], "decode"],
      ["/v1/proofs", () => [200, "x".repeat(2 << 20)], "fetch"],
      ["/v1/proofs", () => [500, '{"error":"disk on fire"}'], "fetch"],
      ["/v1/root", () => [200, '{"size": 5}'], "fetch"],
      ["/v1/root", () => [200, '{"size": 5, "root": null, "depth": 3, "arity": 2, "hash": "blake3"}'], "fetch"],
      ["/v1/consistency", () => [200, "{}"], "decode"],
    ];
    for (const [route, reply, stage] of cases) {
      answer = reply;
      const call =
        route === "/v1/proofs" ? client.proof(2, head) : route === "/v1/root" ? client.root() : client.consistency({ size: 2, root: computeRoot(leaves.slice(0, 2), t) }, head);
      const error = await rejection(call);
      assert.equal(error.stage, stage, `${route}: ${error.message}`);
    }
    answer = () => [500, '{"error":"disk on fire"}'];
    const failed = await rejection(client.root());
    assert.equal(failed.status, 500);
    assert.equal(failed.kind, "Http");
    assert.match(failed.message, /disk on fire/);
    // 404 and 409 answers have kinds of their own, with the status and the server's reason.
    for (const [status, kind] of [[404, "NotFound"], [409, "Conflict"]]) {
      answer = () => [status, '{"error":"refused for a reason"}'];
      const refused = await rejection(client.proof(2, head));
      assert.deepEqual([refused.stage, refused.kind, refused.status], ["fetch", kind, status], refused.message);
      assert.match(refused.message, /refused for a reason/);
    }
    // contains: the server claims the value is leaf 2, but leaf 2 is another value.
    answer = (url) => (url.startsWith("/v1/leaves/") ? [200, '{"index": 2}'] : [200, proofJson(leafHex, [[toHex(leaves[3])], [toHex(computeRoot(leaves.slice(0, 2), t))], [toHex(leaves[4])]])]);
    const mismatch = await rejection(client.contains(leaves[0], head));
    assert.ok(["verify", "decode"].includes(mismatch.stage), mismatch.message);
    // Nothing listening.
    const nobody = new CairnClient("http://127.0.0.1:1", t);
    assert.equal((await rejection(nobody.root())).kind, "Network");
  } finally {
    server.close();
  }
});

test("the client reads an indexed server's root: kind indexed, refused by a client that trusts another kind", async () => {
  const t = { arity: 4, hash: hashers.blake3, kind: "indexed" };
  const root = toHex(new Uint8Array(32).fill(7));
  // The fields of `cairn serve` on an indexed database (crates/server/src/indexed.rs).
  let body = { size: 101, root, depth: 4, arity: 4, hash: "blake3", finalized: 101, kind: "indexed" };
  const server = createServer((request, response) => {
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify(body));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${server.address().port}`;
  try {
    const head = await new CairnClient(url, t).root();
    assert.equal(head.kind.kind, "indexed");
    assert.equal(head.size, 101n);
    assert.equal(toHex(head.root), root);
    for (const other of [{ ...t, kind: "lean" }, { ...t, kind: "imt", depth: 8 }]) {
      const refused = await rejection(new CairnClient(url, other).root());
      assert.equal(refused.kind, "KindMismatch", refused.message);
      assert.match(refused.message, /server tree is indexed/);
    }
    // A lean server is refused by a client that trusts an indexed tree.
    body = { ...body, kind: "lean" };
    assert.equal((await rejection(new CairnClient(url, t).root())).kind, "KindMismatch");
    // Like a lean tree, an indexed one has a root exactly when it has leaves.
    body = { ...body, kind: "indexed", size: 0 };
    assert.equal((await rejection(new CairnClient(url, t).root())).stage, "fetch");
  } finally {
    server.close();
  }
});

test("the client verifies an indexed server's membership and absence proofs, and refuses lean-tree calls on it", { skip: binary === null && "no cairn binary" }, async () => {
  const rng = random(seed);
  const dir = mkdtempSync(join(tmpdir(), "cairn-ts-serve-indexed-"));
  const db = join(dir, "db");
  const value = () => {
    const v = rng.bytes(32);
    v[0] &= 0x1f;
    return v;
  };
  execFileSync(binary, ["init", db, "--kind", "indexed", "--arity", "4", "--hash", "blake3"]);
  const server = await serveCairn(binary, db);
  try {
    const t = { arity: 4, hash: hashers.blake3, kind: "indexed" };
    const insert = async (values) => {
      const answer = await fetch(`${server.url}/v1/leaves`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ leaves: values.map(toHex) }),
      });
      assert.equal(answer.status, 200, await answer.clone().text());
    };
    const values = Array.from({ length: 60 }, value);
    await insert(values);
    const client = new IndexedClient(server.url, t);
    const reported = await client.root();
    assert.equal(reported.kind.kind, "indexed");
    // Leaf 0 is the guard (value 0); the values follow in insertion order.
    assert.equal(reported.size, 61n);
    const trusted = { size: 61, root: indexedRoot(values, t) };
    assert.equal(toHex(reported.root), toHex(trusted.root));

    for (const index of [0, 1, 30, 60]) {
      const proof = await client.indexedProof(index, trusted);
      assert.equal(proof.index, BigInt(index));
      assert.equal(toHex(proof.leaf.value), index === 0 ? "0x" + "00".repeat(32) : toHex(values[index - 1]));
    }
    const missing = value();
    const absent = await client.absence(missing, trusted);
    assert.equal(toHex(absent.value), toHex(missing));
    // A value the tree holds has no absence proof: the server says so.
    const held = await rejection(client.absence(values[5], trusted));
    assert.equal(held.stage, "fetch");
    assert.equal(held.kind, "Present", held.message);
    assert.equal(held.status, 409);
    assert.ok(held.message.includes(toHex(values[5])), held.message);

    // A tampered answer is refused: one sibling byte changed in transit.
    const tampering = async (url, init) => {
      const answer = await fetch(url, init);
      const text = await answer.text();
      const siblings = text.indexOf('"siblings"');
      assert.ok(siblings >= 0, "the answer has siblings");
      const at = text.indexOf('"0x', siblings) + 3;
      assert.ok(at > 3, "the answer has a sibling to change");
      const forged = text.slice(0, at) + (text[at] === "0" ? "1" : "0") + text.slice(at + 1);
      return new Response(forged, { status: answer.status, headers: answer.headers });
    };
    const lied = new IndexedClient(server.url, t, { fetch: tampering });
    const liedProof = await rejection(lied.indexedProof(7, trusted));
    assert.equal(liedProof.stage, "verify", liedProof.message);
    assert.equal((await rejection(lied.absence(missing, trusted))).stage, "verify");

    // The server proves at its current head only: after more inserts, a
    // proof against the old head is refused, one against the new head verifies.
    const more = Array.from({ length: 9 }, value);
    await insert(more);
    assert.equal((await rejection(client.indexedProof(3, trusted))).stage, "verify");
    const now = { size: 70, root: indexedRoot([...values, ...more], t) };
    assert.equal(toHex((await client.indexedProof(65, now)).leaf.value), toHex(more[4]));
    // Asked at the old head's size, the server proves against that retained
    // head: a historical absence proof (of a value inserted since, too) and
    // a membership proof verify against the old root.
    const historical = await client.absenceAt(more[0], trusted);
    assert.equal(historical.size, 61n);
    assert.equal(toHex(historical.value), toHex(more[0]));
    assert.equal((await client.indexedProofAt(3, trusted)).index, 3n);
    assert.equal((await rejection(lied.absenceAt(missing, trusted))).stage, "verify");
    const beyond = await rejection(client.absenceAt(missing, { size: 71, root: trusted.root }));
    assert.equal(beyond.stage, "fetch", beyond.message);

    // Lean-tree calls are refused before any request, and a lean trusted tree by IndexedClient.
    for (const call of [() => client.proof(1, now), () => client.contains(values[0], now), () => client.consistency(trusted, now)]) {
      const refused = await rejection(call());
      assert.equal(refused.stage, "input");
      assert.match(refused.message, /the trusted tree is indexed/);
    }
    assert.throws(() => new IndexedClient(server.url, { arity: 4, hash: hashers.blake3 }), /not indexed: use CairnClient/);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the client updates and removes leaves of a mutable tree and checks the old leaves' proofs", { skip: binary === null && "no cairn binary" }, async () => {
  const rng = random(seed + 31);
  const dir = mkdtempSync(join(tmpdir(), "cairn-ts-mutable-"));
  const db = join(dir, "db");
  const leaves = Array.from({ length: 9 }, () => rng.bytes(32));
  writeFileSync(join(dir, "leaves.bin"), Buffer.concat(leaves));
  execFileSync(binary, ["init", db, "--arity", "2", "--hash", "blake3", "--mutable"]);
  execFileSync(binary, ["ingest", db, join(dir, "leaves.bin")]);
  const server = await serveCairn(binary, db);
  try {
    const t = { arity: 2, hash: hashers.blake3 };
    const client = new CairnClient(server.url, t);
    const before = computeRoot(leaves, t);
    const fresh = rng.bytes(32);
    const updated = await client.update(3, fresh);
    assert.equal(updated.old.index, 3n);
    assert.equal(toHex(updated.old.old), toHex(leaves[3]));
    assert.equal(toHex(updated.old.rootBefore), toHex(before), "the old leaf's proof is against the root before");
    const afterUpdate = leaves.slice();
    afterUpdate[3] = fresh;
    assert.equal(toHex(updated.head.root), toHex(computeRoot(afterUpdate, t)));
    assert.equal(toHex(updated.old.rootAfter), toHex(updated.head.root));

    const removed = await client.remove(5);
    assert.equal(toHex(removed.old.old), toHex(leaves[5]));
    assert.equal(toHex(removed.old.rootBefore), toHex(updated.head.root));
    const afterRemove = afterUpdate.slice();
    afterRemove[5] = new Uint8Array(32);
    assert.equal(toHex(removed.head.root), toHex(computeRoot(afterRemove, t)));

    // A batch: the proofs chain from one change to the next.
    const batch = await client.change([{ index: 0, value: rng.bytes(32) }, { index: 1, value: null }]);
    assert.equal(batch.changes.length, 2);
    assert.equal(toHex(batch.changes[1].rootBefore), toHex(batch.changes[0].rootAfter));
    assert.equal(toHex(batch.changes[0].rootBefore), toHex(removed.head.root));

    // Refusals carry their code, and change nothing.
    for (const [call, kind, code] of [
      [() => client.remove(9), "NotFound", "index_out_of_range"],
      [() => client.remove(5), "Conflict", "removed_leaf"],
      [() => client.update(2, leaves[4]), "Conflict", "duplicate"],
      [() => client.update(2, leaves[5]), "Conflict", "was_removed"],
      [() => client.update(2, new Uint8Array(32)), "Http", "zero_leaf"],
    ]) {
      const error = await rejection(call());
      assert.equal(error.kind, kind, error.message);
      assert.equal(error.code, code, error.message);
    }
    assert.equal(toHex((await client.root()).root), toHex(batch.head.root));
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
