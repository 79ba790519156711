// Signed checkpoints: verifyCheckpoint against notes the cairn CLI signs,
// against a note Go's golang.org/x/mod/sumdb/note signed, and against
// notes signed here (with a key handed to cairn too), tampered and
// malformed in every way the format forbids.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { ed25519 } from "@noble/curves/ed25519";
import { keyId, openNote, parseVerifierKey, verifyCheckpoint } from "cairn-verify";
import { cairnBinary, fromHex, rejects, toHexString } from "./helpers.mjs";

const binary = cairnBinary();
const b64 = (bytes) => Buffer.from(bytes).toString("base64");

// From the documentation and tests of Go's golang.org/x/mod/sumdb/note: a
// note Go signed, and the verifier key that checks it.
const GO_VERIFIER = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const GO_NOTE =
  "If you think cryptography is the answer to your problem,\n" +
  "then you don't know what your problem is.\n" +
  "\n" +
  "\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";

/** A key made here: its seed, verifier key and signer key texts, and a signer of notes. */
function key(name, seedByte = 7) {
  const seed = new Uint8Array(32).fill(seedByte);
  const publicKey = ed25519.getPublicKey(seed);
  const id = keyId(name, publicKey).toString(16).padStart(8, "0");
  return {
    name,
    verifier: `${name}+${id}+${b64([1, ...publicKey])}`,
    signer: `PRIVATE+KEY+${name}+${id}+${b64([1, ...seed])}`,
    sign(text) {
      const signature = ed25519.sign(new TextEncoder().encode(text), seed);
      return `${text}\n\u2014 ${name} ${b64([...fromHex(id), ...signature])}\n`;
    },
  };
}

const ROOT = new Uint8Array(32).fill(0xab);
const body = (name, lines) => `${name}\n${lines.join("\n")}\n`;
const checkpointText = (name, size = "5", root = b64(ROOT), tree = "cairn-tree kind=lean arity=4 hash=blake3", extra = []) =>
  body(name, [size, root, tree, ...extra].filter((line) => line !== null));

test("a note Go signed opens with Go's verifier key", () => {
  assert.ok(openNote(GO_NOTE, parseVerifierKey(GO_VERIFIER)).startsWith("If you think"));
  rejects(() => openNote(GO_NOTE.replace("problem,", "problems,"), parseVerifierKey(GO_VERIFIER)), "verify", "BadSignature");
});

test("a checkpoint signed here verifies and returns its head", () => {
  const k = key("example.org/deposits");
  const head = verifyCheckpoint(k.sign(checkpointText(k.name, "5", b64(ROOT), "cairn-tree kind=leanimt arity=4 hash=blake3", ["note: hi"])), k.verifier);
  assert.equal(head.origin, k.name);
  assert.equal(head.size, 5n);
  assert.deepEqual([...head.root], [...ROOT]);
  assert.deepEqual([head.kind, head.arity, head.hash], ["lean", 4, "blake3"]);
  assert.deepEqual(head.otherExtensions, ["note: hi"]);
  // kind=lean is what cairn writes; kind=leanimt, what older versions signed, reads the same.
  const current = verifyCheckpoint(k.sign(checkpointText(k.name, "5", b64(ROOT), "cairn-tree kind=lean arity=4 hash=blake3")), k.verifier);
  assert.deepEqual([current.kind, current.arity, current.hash, current.size], ["lean", 4, "blake3", 5n]);
  rejects(() => verifyCheckpoint(k.sign(checkpointText(k.name, "5", b64(ROOT), "cairn-tree kind=leanIMT arity=4 hash=blake3")), k.verifier), "decode", "TreeLine");
  // A parsed key works as well as its text.
  assert.equal(verifyCheckpoint(k.sign(checkpointText(k.name)), parseVerifierKey(k.verifier)).size, 5n);
});

test("an imt's checkpoint names its depth and zero, and its empty tree has one", () => {
  const k = key("example.org/pool");
  const zero = `0x${"00".repeat(31)}0a`;
  const line = `cairn-tree kind=imt arity=2 hash=poseidon depth=20 zero=${zero}`;
  for (const size of ["0", "9"]) {
    const head = verifyCheckpoint(k.sign(checkpointText(k.name, size, b64(ROOT), line)), k.verifier);
    assert.deepEqual([head.kind, head.arity, head.hash, head.depth, head.size], ["imt", 2, "poseidon", 20, BigInt(size)]);
    assert.equal(head.zero[31], 10);
  }
  for (const [bad, why] of [
    ["cairn-tree kind=imt arity=2 hash=poseidon", "depth= is missing"],
    [`cairn-tree kind=imt arity=2 hash=poseidon depth=020 zero=${zero}`, "leading zeros"],
    [`cairn-tree kind=imt arity=2 hash=poseidon depth=65 zero=${zero}`, "out of range"],
    [`cairn-tree kind=imt arity=2 hash=poseidon depth=20 zero=0x${"ff".repeat(32)}`, "canonical"],
    [`cairn-tree kind=imt arity=2 hash=poseidon depth=20 zero=${zero.toUpperCase().replace("0X", "0x")}`, "lowercase"],
    [`${line} extra=1`, "unexpected"],
  ]) {
    const note = k.sign(checkpointText(k.name, "9", b64(ROOT), bad));
    rejects(() => verifyCheckpoint(note, k.verifier), "decode", "TreeLine", bad);
    assert.throws(() => verifyCheckpoint(note, k.verifier), (error) => error.message.includes(why), bad);
  }
});

test("malformed, tampered and foreign notes are refused with a reason", () => {
  const k = key("example.org/deposits");
  const good = k.sign(checkpointText(k.name));
  const field = good.trimEnd().split(" ").pop();
  const flipped = (() => {
    const bytes = Buffer.from(field, "base64");
    bytes[bytes.length - 1] ^= 1;
    return bytes.toString("base64");
  })();
  // The same bytes with a bit set past the last byte (a 68-byte field ends in one '=').
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const last = alphabet.indexOf(field.at(-2));
  assert.equal(last & 3, 0, "a canonical encoding has zero unused bits");
  const nonCanonical = field.slice(0, -2) + alphabet[last | 1] + "=";
  const cases = [
    ["missing-blank-line", good.replace("\n\n", "\n"), "decode", "Note"],
    ["no-signatures", `${checkpointText(k.name)}\n`, "decode", "Note"],
    ["hyphen-for-em-dash", good.replace("\u2014", "-"), "decode", "Note"],
    ["non-canonical-signature-base64", good.replace(field, nonCanonical), "decode", "Note"],
    ["control-character", good.replace("\n5\n", "\n5\t\n"), "decode", "Note"],
    ["too-many-signatures", good + good.split("\n\n")[1].repeat(100), "decode", "Note"],
    ["tampered-size", good.replace("\n5\n", "\n6\n"), "verify", "BadSignature"],
    ["tampered-tree-line", good.replace("arity=4", "arity=2"), "verify", "BadSignature"],
    ["tampered-signature", good.replace(field, flipped), "verify", "BadSignature"],
    ["other-key", key(k.name, 9).sign(checkpointText(k.name)), "verify", "NoKnownSignature"],
    ["other-origin", key("other.example", 7).sign(checkpointText("other.example")), "verify", "NoKnownSignature"],
    // Signed by the key, but not a checkpoint cairn accepts.
    ["origin-not-the-key-name", k.sign(checkpointText("elsewhere.example")), "verify", "Origin"],
    ["leading-zero-size", k.sign(checkpointText(k.name, "05")), "decode", "Checkpoint"],
    ["size-overflow", k.sign(checkpointText(k.name, "18446744073709551616")), "decode", "Checkpoint"],
    ["size-zero", k.sign(checkpointText(k.name, "0")), "decode", "Checkpoint"],
    ["short-root", k.sign(checkpointText(k.name, "5", b64(ROOT.slice(1)))), "decode", "Checkpoint"],
    ["non-canonical-root", k.sign(checkpointText(k.name, "5", b64(ROOT).slice(0, -2) + "t=")), "decode", "Checkpoint"],
    ["two-lines", k.sign(body(k.name, ["5"])), "decode", "Checkpoint"],
    ["no-tree-line", k.sign(checkpointText(k.name, "5", b64(ROOT), null)), "decode", "TreeLine"],
    ["two-tree-lines", k.sign(checkpointText(k.name, "5", b64(ROOT), "cairn-tree kind=lean arity=4 hash=blake3", ["cairn-tree kind=lean arity=4 hash=blake3"])), "decode", "TreeLine"],
    ["unknown-kind", k.sign(checkpointText(k.name, "5", b64(ROOT), "cairn-tree kind=imt arity=2 hash=poseidon")), "decode", "TreeLine"],
    ["arity-leading-zero", k.sign(checkpointText(k.name, "5", b64(ROOT), "cairn-tree kind=lean arity=04 hash=blake3")), "decode", "TreeLine"],
    ["arity-out-of-range", k.sign(checkpointText(k.name, "5", b64(ROOT), "cairn-tree kind=lean arity=17 hash=blake3")), "decode", "TreeLine"],
    ["unknown-hash", k.sign(checkpointText(k.name, "5", b64(ROOT), "cairn-tree kind=lean arity=4 hash=sha3")), "decode", "TreeLine"],
    ["extra-field", k.sign(checkpointText(k.name, "5", b64(ROOT), "cairn-tree kind=lean arity=4 hash=blake3 depth=3")), "decode", "TreeLine"],
  ];
  for (const [name, note, stage, kind] of cases) rejects(() => verifyCheckpoint(note, k.verifier), stage, kind, name);
  assert.equal(verifyCheckpoint(good, k.verifier).size, 5n, "the untouched note verifies");
});

test("malformed verifier keys are refused as input", () => {
  const k = key("example.org/deposits");
  const [name, id, data] = [k.name, k.verifier.split("+")[1], k.verifier.split("+").slice(2).join("+")];
  const cases = [
    "nonsense",
    `${name}+${id}`,
    `${name}+${id.toUpperCase()}+${data}`,
    `${name}+00000000+${data}`,
    `other+${id}+${data}`,
    `${name}+${id}+${data.slice(0, -4)}`,
    `a b+${id}+${data}`,
    k.signer,
  ];
  for (const text of cases) rejects(() => parseVerifierKey(text), "input", "VerifierKey", text);
  rejects(() => verifyCheckpoint(k.sign(checkpointText(k.name)), "nonsense"), "input", "VerifierKey");
  assert.equal(parseVerifierKey(GO_VERIFIER).id, 0xc74f20a3);
});

test("checkpoints the cairn CLI signs verify here, with its keys and with keys made here", { skip: binary === null && "no cairn binary" }, () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-ts-checkpoint-"));
  const run = (...args) => execFileSync(binary, args, { encoding: "utf8" });
  try {
    const keyFile = join(dir, "db.key");
    const vkey = run("keygen", "--name", "example.org/ts", "--out", keyFile).trim();
    const db = join(dir, "db");
    run("init", db, "--arity", "5", "--hash", "poseidon", "--sign-key", keyFile);
    const leaves = join(dir, "leaves.hex");
    writeFileSync(leaves, Array.from({ length: 12 }, (_, i) => `0x${(i + 1).toString(16).padStart(64, "0")}\n`).join(""));
    run("ingest", db, leaves, "--format", "hex");
    const note = run("signed-checkpoint", db);
    const head = verifyCheckpoint(note, vkey);
    assert.equal(head.size, 12n);
    assert.equal(toHexString(head.root), run("root", db).trim());
    assert.deepEqual([head.kind, head.arity, head.hash, head.origin], ["lean", 5, "poseidon", "example.org/ts"]);
    rejects(() => verifyCheckpoint(note.replace("\n12\n", "\n13\n"), vkey), "verify", "BadSignature");

    // A signer key made here, in Go's text form, signs in cairn.
    const k = key("example.org/made-in-ts", 42);
    const tsKey = join(dir, "ts.key");
    writeFileSync(tsKey, `${k.signer}\n`);
    chmodSync(tsKey, 0o600);
    const signed = run("signed-checkpoint", db, "--sign-key", tsKey);
    assert.equal(verifyCheckpoint(signed, k.verifier).size, 12n);
    // And a note signed here verifies in cairn.
    const text = signed.slice(0, signed.indexOf("\n\n") + 1);
    assert.equal(k.sign(text), signed, "Ed25519 is deterministic: the same note");
    const noteFile = join(dir, "note.txt");
    writeFileSync(noteFile, k.sign(text.replace("hash=poseidon", "hash=blake3")));
    assert.throws(() => execFileSync(binary, ["verify-checkpoint", "--key", vkey, noteFile], { stdio: "pipe" }), "cairn accepted a note by another key");
    writeFileSync(noteFile, k.sign(text));
    assert.match(run("verify-checkpoint", "--key", k.verifier, noteFile), /^valid: example\.org\/made-in-ts signed size 12,/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("GET /v1/checkpoint of cairn serve verifies, and follows the appends", { skip: binary === null && "no cairn binary" }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-ts-checkpoint-serve-"));
  const run = (...args) => execFileSync(binary, args, { encoding: "utf8" });
  const keyFile = join(dir, "db.key");
  const vkey = run("keygen", "--name", "example.org/served", "--out", keyFile).trim();
  const db = join(dir, "db");
  run("init", db, "--arity", "2", "--hash", "sha256", "--sign-key", keyFile);
  const child = spawn(binary, ["serve", db, "--listen", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "ignore"] });
  try {
    let output = "";
    child.stdout.setEncoding("utf8");
    const address = await new Promise((resolve, reject) => {
      child.stdout.on("data", (chunk) => {
        output += chunk;
        const match = /listening on (\S+)/.exec(output);
        if (match) resolve(match[1]);
      });
      child.on("exit", (code) => reject(new Error(`cairn serve exited with ${code}`)));
    });
    const url = `http://${address}`;
    assert.equal((await fetch(`${url}/v1/checkpoint`)).status, 404, "the empty tree has no checkpoint");
    for (const count of [1, 3]) {
      const leaves = Array.from({ length: count }, (_, i) => `0x${(count * 10 + i).toString(16).padStart(64, "0")}`);
      const appended = await fetch(`${url}/v1/leaves`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ leaves }) });
      assert.equal(appended.status, 200);
      const { size, root } = await appended.json();
      const answer = await fetch(`${url}/v1/checkpoint`);
      assert.equal(answer.headers.get("content-type"), "text/plain; charset=utf-8");
      const head = verifyCheckpoint(await answer.text(), vkey);
      assert.equal(head.size, BigInt(size));
      assert.equal(toHexString(head.root), root);
    }
  } finally {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await once(child, "exit");
    }
    rmSync(dir, { recursive: true, force: true });
  }
});
