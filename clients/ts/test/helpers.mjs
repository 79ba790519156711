// Shared by the tests: the committed vectors, hex helpers, and one check
// for "rejected with this stage and reason".
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { CairnError, hashers } from "cairn-verify";

export const repo = fileURLToPath(new URL("../../../", import.meta.url));
export const vectors = (name) => JSON.parse(readFileSync(`${repo}test-vectors/${name}`, "utf8"));

export function fromHex(text) {
  const digits = text.startsWith("0x") ? text.slice(2) : text;
  return Uint8Array.from(digits.match(/../g) ?? [], (pair) => parseInt(pair, 16));
}

export const toHexString = (bytes) => "0x" + Buffer.from(bytes).toString("hex");

export const tree = (arity, hash) => ({ arity, hash: hashers[hash] });

/** Runs `body`, which must throw a CairnError of `stage` (and `kind` if given); returns it. */
export function rejects(body, stage, kind, context = "") {
  let caught;
  try {
    body();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught !== undefined, `${context}: accepted, want a ${stage} ${kind ?? ""} rejection`);
  assert.ok(caught instanceof CairnError, `${context}: threw ${caught?.constructor?.name}: ${caught?.message}`);
  assert.equal(caught.stage, stage, `${context}: ${caught.message}`);
  if (kind !== undefined) assert.equal(caught.kind, kind, `${context}: ${caught.message}`);
  return caught;
}
