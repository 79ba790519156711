// Signed checkpoints (docs/spec.md, "Signed checkpoints"): a C2SP signed
// note with an Ed25519 signature whose text is a C2SP tlog-checkpoint body
// (origin, size, base64 root) with cairn's extension line
// `cairn-tree kind=lean arity=N hash=H` (an imt adds `depth=D zero=0x..`). The verifier key is the text
// Go's golang.org/x/mod/sumdb/note reads: `name+hash+base64(0x01 || key)`.
// Parsing is strict: one spelling per head (no leading zeros, canonical
// base64; the tree kind kind=leanimt of older cairn versions is read as
// kind=lean), and a note is trusted only if a signature by the key verifies
// and none by the key fails.
import { ed25519 } from "@noble/curves/ed25519";
import { sha256 } from "@noble/hashes/sha2";
import type { Hash } from "./bytes.js";
import { CairnError, type ErrorKind } from "./errors.js";
import { HASH_NAMES, isFieldHash, type HashName } from "./hasher.js";
import { isCanonicalFieldElement } from "./hashes/field.js";

/** A parsed verifier key. */
export interface VerifierKey {
  /** The signer's name: the log's origin. */
  readonly name: string;
  /** The key ID (the first four bytes of SHA-256(name || 0x0a || 0x01 || key)). */
  readonly id: number;
  /** The 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array;
}

/** A head whose signed checkpoint verified. */
export interface SignedHead {
  /** The log (the verifier key's name). */
  readonly origin: string;
  /** The number of leaves. */
  readonly size: bigint;
  /** The root at `size`. */
  readonly root: Hash;
  /** The tree's shape: "lean" (also for a note that spells it "leanimt"), or "imt" (a fixed-depth tree, with its depth and zero value). */
  readonly kind: "lean" | "imt";
  /** An imt's depth, 1..64; absent for a LeanIMT. */
  readonly depth?: number;
  /** An imt's zero value (the value of an absent leaf); absent for a LeanIMT. */
  readonly zero?: Hash;
  /** Children per internal node. */
  readonly arity: number;
  /** The node hash. */
  readonly hash: HashName;
  /** Extension lines other than the tree line (signed, not interpreted). */
  readonly otherExtensions: readonly string[];
}

/** The most signature lines read (as Go's sumdb/note). */
export const MAX_SIGNATURES = 100;
/** The largest note read, in characters. */
export const MAX_NOTE_LENGTH = 1 << 20;

const ALGORITHM_ED25519 = 0x01;
const SIGNATURE_PREFIX = "\u2014 ";
const TREE_KEYWORD = "cairn-tree";

const malformed = (kind: ErrorKind, message: string) => new CairnError("decode", kind, message);
const rejected = (kind: ErrorKind, message: string) => new CairnError("verify", kind, message);
const badKey = (message: string) => new CairnError("input", "VerifierKey", `malformed verifier key: ${message}`);

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const VALUES = new Map([...ALPHABET].map((c, i) => [c, i] as const));

/** Standard base64 (RFC 4648 section 4, padded). */
function encodeBase64(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const b0 = bytes[i] ?? 0;
    const b1 = bytes[i + 1];
    const b2 = bytes[i + 2];
    const n = (b0 << 16) | ((b1 ?? 0) << 8) | (b2 ?? 0);
    out += ALPHABET[(n >> 18) & 63]! + ALPHABET[(n >> 12) & 63]!;
    out += b1 === undefined ? "=" : ALPHABET[(n >> 6) & 63]!;
    out += b2 === undefined ? "=" : ALPHABET[n & 63]!;
  }
  return out;
}

/** Decodes standard base64, or returns why not; only the canonical spelling of the bytes is accepted. */
export function decodeBase64(text: string): Uint8Array | string {
  if (text.length === 0 || text.length % 4 !== 0) return `${JSON.stringify(text)} is not standard base64 (its length is not a multiple of 4)`;
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  const body = text.slice(0, text.length - padding);
  const out = new Uint8Array((text.length / 4) * 3 - padding);
  let bits = 0;
  let count = 0;
  let at = 0;
  for (const c of body) {
    const value = VALUES.get(c);
    if (value === undefined) return `${JSON.stringify(text)} is not standard base64 (character ${JSON.stringify(c)})`;
    bits = (bits << 6) | value;
    count += 6;
    if (count >= 8) {
      count -= 8;
      out[at++] = (bits >> count) & 0xff;
    }
  }
  if (encodeBase64(out) !== text) return `${JSON.stringify(text)} is not canonical base64: the same bytes encode as ${JSON.stringify(encodeBase64(out))}`;
  return out;
}

function validName(name: string): string | null {
  if (name.length === 0) return "it is empty";
  if (/[\s+\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/u.test(name)) return "it contains a space or '+'";
  return null;
}

/** SHA-256(name || 0x0a || 0x01 || public key), first four bytes big-endian. */
export function keyId(name: string, publicKey: Uint8Array): number {
  const nameBytes = new TextEncoder().encode(name);
  const input = new Uint8Array(nameBytes.length + 2 + publicKey.length);
  input.set(nameBytes);
  input[nameBytes.length] = 0x0a;
  input[nameBytes.length + 1] = ALGORITHM_ED25519;
  input.set(publicKey, nameBytes.length + 2);
  const digest = sha256(input);
  return ((digest[0]! << 24) | (digest[1]! << 16) | (digest[2]! << 8) | digest[3]!) >>> 0;
}

/** Parses a verifier key `name+hash+base64(0x01 || public key)`, as `cairn keygen` prints it. */
export function parseVerifierKey(text: string): VerifierKey {
  if (typeof text !== "string") throw badKey(`want a string, got ${typeof text}`);
  if (text.startsWith("PRIVATE+KEY+")) throw badKey("this is a signer (private) key: give the verifier key");
  const first = text.indexOf("+");
  const second = first < 0 ? -1 : text.indexOf("+", first + 1);
  if (second < 0) throw badKey("want name+hash+keydata");
  const name = text.slice(0, first);
  const idText = text.slice(first + 1, second);
  const data = text.slice(second + 1);
  const nameProblem = validName(name);
  if (nameProblem !== null) throw badKey(`key name ${JSON.stringify(name)}: ${nameProblem}`);
  if (!/^[0-9a-f]{8}$/.test(idText)) throw badKey(`key ID ${JSON.stringify(idText)} is not 8 lowercase hex digits`);
  const bytes = decodeBase64(data);
  if (typeof bytes === "string") throw badKey(bytes);
  if (bytes[0] !== ALGORITHM_ED25519) throw badKey(`key algorithm 0x${(bytes[0] ?? 0).toString(16).padStart(2, "0")} is not supported, want 0x01 (Ed25519)`);
  if (bytes.length !== 33) throw badKey(`the Ed25519 key has ${bytes.length - 1} bytes, want 32`);
  const publicKey = bytes.slice(1);
  const id = parseInt(idText, 16);
  const want = keyId(name, publicKey);
  if (id !== want) throw badKey(`key ID ${idText} does not match the key, whose ID is ${want.toString(16).padStart(8, "0")}`);
  return Object.freeze({ name, id, publicKey });
}

const keyName = (name: string, id: number) => `${name}+${id.toString(16).padStart(8, "0")}`;

/** A signature line, parsed but not verified. */
interface SignatureLine {
  readonly name: string;
  readonly id: number;
  readonly signature: Uint8Array;
}

/** Splits a note into its text and its well-formed signature lines, verifying nothing. */
export function parseNote(note: string): { text: string; signatures: SignatureLine[] } {
  if (note.length > MAX_NOTE_LENGTH) throw malformed("Note", `malformed note: ${note.length} characters, want at most ${MAX_NOTE_LENGTH}`);
  for (let i = 0; i < note.length; i++) {
    const code = note.charCodeAt(i);
    if (code < 0x20 && code !== 0x0a) throw malformed("Note", `malformed note: control character 0x${code.toString(16).padStart(2, "0")} at ${i}; only newline is allowed`);
    // A lone surrogate would not be valid UTF-8.
    if (code >= 0xd800 && code <= 0xdfff) {
      const next = note.charCodeAt(i + 1);
      if (code > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) throw malformed("Note", "malformed note: not valid UTF-8 (a lone surrogate)");
      i++;
    }
  }
  const split = note.lastIndexOf("\n\n");
  if (split < 0) throw malformed("Note", "malformed note: no blank line between the text and the signatures");
  const text = note.slice(0, split + 1);
  const rest = note.slice(split + 2);
  if (rest.length === 0) throw malformed("Note", "malformed note: no signature lines after the blank line");
  if (!rest.endsWith("\n")) throw malformed("Note", "malformed note: the last signature line does not end in a newline");
  const signatures: SignatureLine[] = [];
  const lines = rest.slice(0, -1).split("\n");
  for (const [index, line] of lines.entries()) {
    const number = index + 1;
    if (number > MAX_SIGNATURES) throw malformed("Note", `the note has more than ${MAX_SIGNATURES} signatures, want at most ${MAX_SIGNATURES}`);
    const where = `malformed signature line ${number}`;
    if (!line.startsWith(SIGNATURE_PREFIX)) throw malformed("Note", `${where}: it does not start with an em dash (U+2014) and a space`);
    const field = line.slice(SIGNATURE_PREFIX.length);
    const space = field.indexOf(" ");
    if (space < 0) throw malformed("Note", `${where}: no space between key name and signature`);
    const name = field.slice(0, space);
    const nameProblem = validName(name);
    if (nameProblem !== null) throw malformed("Note", `${where}: key name ${JSON.stringify(name)}: ${nameProblem}`);
    const bytes = decodeBase64(field.slice(space + 1));
    if (typeof bytes === "string") throw malformed("Note", `${where}: ${bytes}`);
    if (bytes.length < 5) throw malformed("Note", `${where}: the signature field has ${bytes.length} bytes, want a 4-byte key ID and a signature`);
    const id = ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
    signatures.push({ name, id, signature: bytes.slice(4) });
  }
  return { text, signatures };
}

/**
 * Opens a signed note: returns its text if a signature by `key` verifies
 * (and none by it fails). Signatures by other keys are ignored.
 */
export function openNote(note: string, key: VerifierKey): string {
  const { text, signatures } = parseNote(note);
  const message = new TextEncoder().encode(text);
  const found: string[] = [];
  let verified = false;
  for (const { name, id, signature } of signatures) {
    if (name !== key.name || id !== key.id) {
      found.push(keyName(name, id));
      continue;
    }
    let ok = false;
    try {
      ok = signature.length === 64 && ed25519.verify(signature, message, key.publicKey, { zip215: false });
    } catch {
      ok = false;
    }
    if (!ok) throw rejected("BadSignature", `bad signature by ${keyName(name, id)}: the note's text is not what this key signed`);
    verified = true;
  }
  if (!verified) {
    const by = found.length === 0 ? "no key" : found.join(", ");
    throw rejected("NoKnownSignature", `no known signature: the note is signed by ${by}, want a signature by ${keyName(key.name, key.id)}`);
  }
  return text;
}

function parseSize(line: string): bigint {
  if (!/^[0-9]+$/.test(line)) throw malformed("Checkpoint", `malformed checkpoint: size line ${JSON.stringify(line)} is not a decimal number`);
  if (line.length > 1 && line.startsWith("0")) throw malformed("Checkpoint", `malformed checkpoint: size line ${JSON.stringify(line)} has a leading zero`);
  const size = BigInt(line);
  if (size >= 1n << 64n) throw malformed("Checkpoint", `malformed checkpoint: size ${line} does not fit 64 bits`);
  return size;
}

interface TreeLine {
  kind: "lean" | "imt";
  arity: number;
  hash: HashName;
  depth?: number;
  zero?: Hash;
}

function parseTreeLine(line: string): TreeLine {
  const bad = (why: string) => malformed("TreeLine", `cairn tree line: ${why}`);
  const fields = line.split(" ");
  const field = (index: number, key: string): string => {
    const value = fields[index];
    if (value === undefined) throw bad(`the field ${key}= is missing`);
    if (!value.startsWith(`${key}=`)) throw bad(`field ${JSON.stringify(value)} where ${key}= belongs`);
    return value.slice(key.length + 1);
  };
  const kindName = field(1, "kind");
  // kind=leanimt, the spelling of older cairn versions, is read as lean: notes they signed stay valid.
  if (kindName !== "lean" && kindName !== "leanimt" && kindName !== "imt") throw bad(`unknown tree kind ${JSON.stringify(kindName)}, want "lean" or "imt"`);
  const kind = kindName === "imt" ? "imt" : "lean";
  const arityText = field(2, "arity");
  if (!/^(0|[1-9][0-9]*)$/.test(arityText)) throw bad(`arity ${JSON.stringify(arityText)} is not a decimal number without leading zeros`);
  const arity = Number(arityText);
  if (!(arity >= 2 && arity <= 16)) throw bad(`arity ${arityText} is out of range, want 2..=16`);
  const hash = field(3, "hash");
  if (!(HASH_NAMES as readonly string[]).includes(hash)) throw bad(`unknown hash ${JSON.stringify(hash)}, want one of ${HASH_NAMES.join(", ")}`);
  if (kind === "lean") {
    if (fields.length > 4) throw bad(`unexpected ${JSON.stringify(fields[4])} after the hash`);
    return { kind, arity, hash: hash as HashName };
  }
  const depthText = field(4, "depth");
  if (!/^(0|[1-9][0-9]*)$/.test(depthText)) throw bad(`depth ${JSON.stringify(depthText)} is not a decimal number without leading zeros`);
  const depth = Number(depthText);
  if (!(depth >= 1 && depth <= 64)) throw bad(`fixed-depth tree depth ${depthText} is out of range, want 1..=64`);
  const zeroText = field(5, "zero");
  if (!/^0x[0-9a-f]{64}$/.test(zeroText)) throw bad(`zero ${JSON.stringify(zeroText)} is not 0x and 64 lowercase hex digits`);
  const zero = Uint8Array.from(zeroText.slice(2).match(/../g)!, (pair) => parseInt(pair, 16));
  if (isFieldHash(hash as HashName) && !isCanonicalFieldElement(zero)) throw bad(`zero ${zeroText} is not a canonical BN254 field element, which a ${hash} tree needs`);
  if (fields.length > 6) throw bad(`unexpected ${JSON.stringify(fields[6])} after the zero`);
  return { kind, arity, hash: hash as HashName, depth, zero };
}

/**
 * Verifies a signed checkpoint (from `cairn signed-checkpoint` or
 * `GET /v1/checkpoint`) with the verifier key `cairn keygen` printed, and
 * returns the head it vouches for. Throws a CairnError: stage "input" for a
 * malformed key, "decode" for a malformed note or checkpoint, "verify" for
 * a note the key did not sign (no signature by it, or a signature that
 * fails because the text was changed) or that names another origin.
 */
export function verifyCheckpoint(note: string, verifierKey: string | VerifierKey): SignedHead {
  if (typeof note !== "string") throw new CairnError("input", "InvalidArgument", `note: want a string, got ${typeof note}`);
  const key = typeof verifierKey === "string" ? parseVerifierKey(verifierKey) : verifierKey;
  return headOf(openNote(note, key), key.name);
}

/**
 * Reads the head of a signed checkpoint WITHOUT verifying its signature:
 * what a reader with no key, trusting the place it fetched the note from,
 * learns from it. The note must still be well formed. Never a substitute
 * for [`verifyCheckpoint`].
 */
export function readCheckpointUnverified(note: string): SignedHead {
  if (typeof note !== "string") throw new CairnError("input", "InvalidArgument", `note: want a string, got ${typeof note}`);
  return headOf(parseNote(note).text, null);
}

/** The head a checkpoint text names; its origin must be `origin` when one is given. */
function headOf(text: string, origin: string | null): SignedHead {
  const lines = text.slice(0, -1).split("\n");
  if (lines.length < 3) throw malformed("Checkpoint", `malformed checkpoint: ${lines.length} lines, want at least 3 (origin, size, root)`);
  const empty = lines.findIndex((line) => line.length === 0);
  if (empty >= 0) throw malformed("Checkpoint", `malformed checkpoint: line ${empty + 1} is empty`);
  const [name, sizeLine, rootLine, ...extensions] = lines as [string, string, string, ...string[]];
  const size = parseSize(sizeLine);
  const root = decodeBase64(rootLine);
  if (typeof root === "string") throw malformed("Checkpoint", `malformed checkpoint: root line: ${root}`);
  if (root.length !== 32) throw malformed("Checkpoint", `malformed checkpoint: the root has ${root.length} bytes, want 32`);
  if (origin !== null && name !== origin) throw rejected("Origin", `the checkpoint's origin is ${JSON.stringify(name)}, want ${JSON.stringify(origin)} (the verifier key's name)`);
  const treeLines = extensions.filter((line) => line.split(" ")[0] === TREE_KEYWORD);
  if (treeLines.length !== 1) {
    throw malformed("TreeLine", `cairn tree line: the checkpoint has ${treeLines.length} ${TREE_KEYWORD} lines, want one`);
  }
  const tree = parseTreeLine(treeLines[0]!);
  // A fixed-depth tree's empty tree has a root (zeros[depth]), a LeanIMT's none.
  if (size === 0n && tree.kind === "lean") throw malformed("Checkpoint", "malformed checkpoint: size 0: cairn's empty tree has no root, so no checkpoint names it");
  return Object.freeze({
    origin: name,
    size,
    root,
    ...tree,
    otherExtensions: Object.freeze(extensions.filter((line) => line.split(" ")[0] !== TREE_KEYWORD)),
  });
}
