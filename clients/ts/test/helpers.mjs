// Shared by the tests: the committed vectors, hex helpers, and one check
// for "rejected with this stage and reason".
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { CairnError, hashers } from "cairn-verify";

export const repo = fileURLToPath(new URL("../../../", import.meta.url));
export const vectors = (name) => JSON.parse(readFileSync(`${repo}test-vectors/${name}`, "utf8"));

export function fromHex(text) {
  const digits = text.startsWith("0x") ? text.slice(2) : text;
  return Uint8Array.from(digits.match(/../g) ?? [], (pair) => parseInt(pair, 16));
}

export const toHexString = (bytes) => "0x" + Buffer.from(bytes).toString("hex");

// MiMCSponge in JavaScript costs about a millisecond a node: the vector tests,
// which build hundreds of trees over prefixes of the same leaves, share its
// nodes through a memo (H is a pure function; the shape is what they check).
const memo = new Map();
const mimcsponge = Object.freeze({
  ...hashers.mimcsponge,
  hashChildren(children) {
    const key = children.map(toHexString).join("");
    let out = memo.get(key);
    if (out === undefined) memo.set(key, (out = hashers.mimcsponge.hashChildren(children)));
    return out;
  },
});

export const tree = (arity, hash) => ({ arity, hash: hash === "mimcsponge" ? mimcsponge : hashers[hash] });

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

/** The cairn binary: $CAIRN_BIN, else the workspace's release or debug build; null if none. */
export function cairnBinary() {
  const candidates = [process.env.CAIRN_BIN, `${repo}target/release/cairn`, `${repo}target/debug/cairn`];
  for (const candidate of candidates) {
    if (candidate && existsSync(candidate)) return candidate;
  }
  if (process.env.CI) throw new Error("CI: no cairn binary (cargo build --release -p cairn-cli, or set CAIRN_BIN)");
  return null;
}

/** A small seeded generator (mulberry32), so a failing run can be repeated with CAIRN_TS_SEED. */
export function random(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (low, high) => low + Math.floor(next() * (high - low + 1)),
    bytes: (count) => Uint8Array.from({ length: count }, () => Math.floor(next() * 256)),
    pick: (items) => items[Math.floor(next() * items.length)],
  };
}

export const seed = Number(process.env.CAIRN_TS_SEED ?? Date.now() % 1_000_000);

/** Starts `cairn serve` (the binary at `binary`) on `dir`; resolves to {url, stop}. */
export async function serveCairn(binary, dir) {
  const child = spawn(binary, ["serve", dir, "--listen", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "pipe"] });
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
  return {
    url: `http://${address}`,
    async stop() {
      child.kill("SIGTERM");
      await once(child, "exit");
    },
  };
}
