// A strict JSON reader for proofs. JSON.parse would turn integers above
// 2^53 into nearby doubles and keep the last of two duplicate keys; this
// reader keeps every number's text, refuses duplicate keys, bounds nesting
// (128, as serde_json does) and never throws anything but a decode
// CairnError. Grammar: RFC 8259, whitespace = space, tab, LF, CR.

import { decodeError } from "./errors.js";

/** A number as written, for exact u64 conversion. */
export class JsonNumber {
  constructor(readonly raw: string) {}
}

export type JsonValue = null | boolean | string | JsonNumber | JsonValue[] | JsonObject;
export type JsonObject = Map<string, JsonValue>;

const MAX_DEPTH = 128;

class Reader {
  at = 0;
  constructor(readonly text: string) {}

  fail(what: string): never {
    throw decodeError("Json", `proof JSON is malformed: ${what} at character ${this.at}`);
  }

  skipWhitespace(): void {
    const text = this.text;
    while (this.at < text.length) {
      const c = text.charCodeAt(this.at);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.at++;
      else break;
    }
  }

  value(depth: number): JsonValue {
    this.skipWhitespace();
    if (this.at >= this.text.length) this.fail("unexpected end of input");
    const c = this.text[this.at];
    switch (c) {
      case "{":
        return this.object(depth + 1);
      case "[":
        return this.array(depth + 1);
      case '"':
        return this.string();
      case "t":
        return this.literal("true", true);
      case "f":
        return this.literal("false", false);
      case "n":
        return this.literal("null", null);
      default:
        if (c === "-" || (c! >= "0" && c! <= "9")) return this.number();
        return this.fail(`unexpected character ${JSON.stringify(c)}`);
    }
  }

  literal<T>(word: string, value: T): T {
    if (this.text.startsWith(word, this.at)) {
      this.at += word.length;
      return value;
    }
    return this.fail("invalid literal");
  }

  number(): JsonNumber {
    const match = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
    match.lastIndex = this.at;
    const found = match.exec(this.text);
    if (found === null) return this.fail("invalid number");
    this.at += found[0].length;
    return new JsonNumber(found[0]);
  }

  string(): string {
    const text = this.text;
    this.at++; // opening quote
    let out = "";
    let start = this.at;
    for (;;) {
      if (this.at >= text.length) this.fail("unterminated string");
      const c = text.charCodeAt(this.at);
      if (c === 0x22) {
        out += text.slice(start, this.at);
        this.at++;
        return out;
      }
      if (c < 0x20) this.fail("control character in string");
      if (c >= 0xd800 && c <= 0xdfff) {
        // Raw surrogates only arrive from a JS string (UTF-8 input is
        // decoded strictly); a lone one is not text.
        const next = text.charCodeAt(this.at + 1);
        if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          this.at += 2;
          continue;
        }
        this.fail("lone surrogate in string");
      }
      if (c !== 0x5c) {
        this.at++;
        continue;
      }
      out += text.slice(start, this.at);
      this.at++;
      const escape = text[this.at];
      this.at++;
      switch (escape) {
        case '"':
          out += '"';
          break;
        case "\\":
          out += "\\";
          break;
        case "/":
          out += "/";
          break;
        case "b":
          out += "\b";
          break;
        case "f":
          out += "\f";
          break;
        case "n":
          out += "\n";
          break;
        case "r":
          out += "\r";
          break;
        case "t":
          out += "\t";
          break;
        case "u": {
          const unit = this.hex4();
          if (unit >= 0xd800 && unit <= 0xdbff) {
            if (text.slice(this.at, this.at + 2) !== "\\u") this.fail("lone leading surrogate in escape");
            this.at += 2;
            const low = this.hex4();
            if (low < 0xdc00 || low > 0xdfff) this.fail("invalid trailing surrogate in escape");
            out += String.fromCharCode(unit, low);
          } else if (unit >= 0xdc00 && unit <= 0xdfff) {
            this.fail("lone trailing surrogate in escape");
          } else {
            out += String.fromCharCode(unit);
          }
          break;
        }
        default:
          this.fail("invalid escape");
      }
      start = this.at;
    }
  }

  hex4(): number {
    const digits = this.text.slice(this.at, this.at + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(digits)) this.fail("invalid \\u escape");
    this.at += 4;
    return parseInt(digits, 16);
  }

  array(depth: number): JsonValue[] {
    if (depth > MAX_DEPTH) this.fail("nesting too deep");
    this.at++;
    const out: JsonValue[] = [];
    this.skipWhitespace();
    if (this.text[this.at] === "]") {
      this.at++;
      return out;
    }
    for (;;) {
      out.push(this.value(depth));
      this.skipWhitespace();
      const c = this.text[this.at];
      this.at++;
      if (c === "]") return out;
      if (c !== ",") this.fail("expected , or ]");
    }
  }

  object(depth: number): JsonObject {
    if (depth > MAX_DEPTH) this.fail("nesting too deep");
    this.at++;
    const out: JsonObject = new Map();
    this.skipWhitespace();
    if (this.text[this.at] === "}") {
      this.at++;
      return out;
    }
    for (;;) {
      this.skipWhitespace();
      if (this.text[this.at] !== '"') this.fail("expected a key");
      const key = this.string();
      if (out.has(key)) this.fail(`duplicate field ${JSON.stringify(key)}`);
      this.skipWhitespace();
      if (this.text[this.at] !== ":") this.fail("expected :");
      this.at++;
      out.set(key, this.value(depth));
      this.skipWhitespace();
      const c = this.text[this.at];
      this.at++;
      if (c === "}") return out;
      if (c !== ",") this.fail("expected , or }");
    }
  }
}

/** Parses one JSON document; anything after it but whitespace is refused. */
export function parseJson(text: string): JsonValue {
  const reader = new Reader(text);
  const value = reader.value(0);
  reader.skipWhitespace();
  if (reader.at !== text.length) reader.fail("trailing characters");
  return value;
}

/**
 * An already-parsed JS value (say from `response.json()`) in the same
 * representation. Numbers must be safe integers (larger ones may already
 * have lost precision) or bigints; anything that is not plain JSON data is
 * refused.
 */
export function fromJsValue(value: unknown, depth = 0): JsonValue {
  if (depth > MAX_DEPTH) throw decodeError("Json", "proof JSON is malformed: nesting too deep");
  if (value === null || typeof value === "boolean" || typeof value === "string") return value;
  if (typeof value === "bigint") return new JsonNumber(value.toString());
  if (typeof value === "number") {
    if (Number.isSafeInteger(value) && !Object.is(value, -0)) return new JsonNumber(String(value));
    throw decodeError(
      "Json",
      Number.isInteger(value)
        ? `proof JSON is malformed: integer ${value} is beyond 2^53 and may have lost precision; pass the JSON text instead`
        : `proof JSON is malformed: number ${value} is not an integer`,
    );
  }
  if (Array.isArray(value)) return value.map((item) => fromJsValue(item, depth + 1));
  if (typeof value === "object" && (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null)) {
    const out: JsonObject = new Map();
    for (const key of Object.keys(value)) out.set(key, fromJsValue((value as Record<string, unknown>)[key], depth + 1));
    return out;
  }
  throw decodeError("Json", `proof JSON is malformed: ${typeof value} is not JSON data`);
}

const U64_DIGITS = /^(?:0|[1-9][0-9]{0,19})$/;

/** A JSON integer in 0..=max, or null when the value is not one. */
export function asUnsigned(value: JsonValue | undefined, max: bigint): bigint | null {
  if (!(value instanceof JsonNumber) || !U64_DIGITS.test(value.raw)) return null;
  const parsed = BigInt(value.raw);
  return parsed <= max ? parsed : null;
}

export function describe(value: JsonValue | undefined): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (typeof value === "boolean") return `boolean ${value}`;
  if (typeof value === "string") return "a string";
  if (value instanceof JsonNumber) return `number ${value.raw.slice(0, 40)}`;
  if (Array.isArray(value)) return "an array";
  return "an object";
}
