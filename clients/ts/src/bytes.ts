// 32-byte values as 0x-hex, and byte helpers shared by the decoders.

import { decodeError, inputError } from "./errors.js";

/** A leaf or node: 32 bytes. */
export type Hash = Uint8Array;

const HEX = "0123456789abcdef";

/** `value` as `0x` and lowercase hex. */
export function toHex(value: Uint8Array): string {
  let out = "0x";
  for (let i = 0; i < value.length; i++) {
    const byte = value[i]!;
    out += HEX[byte >> 4]! + HEX[byte & 15]!;
  }
  return out;
}

function digit(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
}

function shorten(text: string): string {
  return JSON.stringify(text.length <= 80 ? text : text.slice(0, 77) + "...");
}

/**
 * Parses `0x` (or `0X`) followed by exactly 64 hex digits of either case,
 * or returns a message saying why not.
 */
export function parseHashOrReason(text: string): Hash | string {
  if (!text.startsWith("0x") && !text.startsWith("0X")) return `hash ${shorten(text)} must start with 0x`;
  if (text.length !== 66) return `hash ${shorten(text)} has ${text.length - 2} hex digits, want 64`;
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) {
    const high = digit(text.charCodeAt(2 + 2 * i));
    const low = digit(text.charCodeAt(3 + 2 * i));
    if (high < 0 || low < 0) {
      return `hash ${shorten(text)} has a non-hex character at position ${2 + 2 * i + (high < 0 ? 0 : 1)}`;
    }
    out[i] = (high << 4) | low;
  }
  return out;
}

/** A hash inside a proof: a malformed one is a decode error. */
export function parseProofHash(text: string): Hash {
  const parsed = parseHashOrReason(text);
  if (typeof parsed === "string") throw decodeError("Hex", parsed);
  return parsed;
}

/** A hash the caller gives (a root, a leaf): 32 bytes or 0x-hex. */
export function hashArgument(value: unknown, what: string): Hash {
  if (value instanceof Uint8Array) {
    if (value.length !== 32) throw inputError(`${what} is ${value.length} bytes, want 32`);
    return value;
  }
  if (typeof value === "string") {
    const parsed = parseHashOrReason(value);
    if (typeof parsed === "string") throw inputError(`${what}: ${parsed}`);
    return parsed;
  }
  throw inputError(`${what} must be a 32-byte Uint8Array or a 0x-hex string`);
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

export const U64_MAX = (1n << 64n) - 1n;

/** A count or index the caller gives: a non-negative safe integer or a bigint below 2^64. */
export function u64Argument(value: unknown, what: string): bigint {
  if (typeof value === "bigint") {
    if (value < 0n || value > U64_MAX) throw inputError(`${what} ${value} is outside 0..2^64-1`);
    return value;
  }
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  throw inputError(`${what} must be a non-negative safe integer or a bigint, got ${String(value)}`);
}

export function readU64(bytes: Uint8Array, offset: number): bigint {
  let value = 0n;
  for (let i = 0; i < 8; i++) value = (value << 8n) | BigInt(bytes[offset + i]!);
  return value;
}

export function writeU64(out: Uint8Array, offset: number, value: bigint): void {
  for (let i = 7; i >= 0; i--) {
    out[offset + i] = Number(value & 0xffn);
    value >>= 8n;
  }
}
