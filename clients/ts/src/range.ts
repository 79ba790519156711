// Leaf tiles inside bundles (docs/spec.md section 8.1): inside the stretch
// of a complete bundle the bundle IS the leaf level, and leaf tile `j` is
// bytes [(j mod B/W) 32 W, +32 W) of bundle j / (B/W): no object of its
// own. A reader asks for that range (`Range:`), accepting a 206 that says
// the exact range of an object of exactly 32 B bytes, or a 200 (a server
// that ignores `Range`) of exactly 32 B bytes, cut here; a 404 means a
// store of the older layout (leaf tiles everywhere), read from the tile's
// own object. Nothing here is trusted: the caller verifies the bytes
// against the head. Kept apart from tiles.ts so that the WebAssembly host
// (wasm.ts) shares it without importing the TypeScript tile client.

import { CairnError } from "./errors.js";

/** Most leaves a bundle holds, for every arity (2 MiB of leaves). */
export const MAX_BUNDLE_LEAVES = 65536n;

/** Leaves in a bundle of a tree of `arity`: the largest power of N at most 65,536. */
export function bundleLeaves(arity: number): bigint {
  const n = BigInt(arity);
  let leaves = n;
  while (leaves * n <= MAX_BUNDLE_LEAVES) leaves *= n;
  return leaves;
}

/** `1234067` as `x001/x234/067` (the names of tiles and bundles). */
export function indexPath(index: bigint): string {
  let digits = index.toString();
  digits = "0".repeat((3 - (digits.length % 3)) % 3) + digits;
  const groups = digits.match(/.../g)!;
  return groups.map((group, i) => (i < groups.length - 1 ? `x${group}` : group)).join("/");
}

/** The object path of bundle `index`. */
export function bundlePath(index: bigint): string {
  return `bundle/${indexPath(index)}`;
}

/** Where a leaf tile's bytes lie in the bundle that holds it. */
export interface BundleRange {
  /** The bundle's path (`bundle/{K}`). */
  readonly path: string;
  /** The tile's first byte in the bundle. */
  readonly offset: bigint;
  /** The tile's bytes (32 W). */
  readonly length: number;
  /** The bundle's exact length (32 B). */
  readonly bundleBytes: bigint;
}

/**
 * The range of a bundle that holds leaf tile `index` (of `width` leaves, the
 * full tile width W) in the tree of `size` leaves of `arity`, or null when
 * that tile lies past the last complete bundle (it is an object of its own).
 */
export function leafTileInBundle(arity: number, width: bigint, size: bigint, index: bigint): BundleRange | null {
  const leaves = bundleLeaves(arity);
  const perBundle = leaves / width;
  const bundle = index / perBundle;
  if (bundle >= size / leaves) return null;
  return { path: bundlePath(bundle), offset: (index % perBundle) * width * 32n, length: Number(width) * 32, bundleBytes: leaves * 32n };
}

/** `bundle/{K}[a..b]`: how errors and lists of what was read name a range. */
export function describeRange(range: BundleRange): string {
  return `${range.path}[${range.offset}..${range.offset + BigInt(range.length)}]`;
}

function badObject(message: string, status?: number): CairnError {
  return new CairnError("fetch", "BadTile", message, status);
}

/**
 * `fetcher(url, init)` until an answer below 500: a failed connection or a
 * 5xx is tried again `attempts` times in all, `backoffMs` apart, doubling.
 */
export async function fetchRetrying(fetcher: typeof fetch, url: string, init: RequestInit | undefined, attempts: number, backoffMs: number): Promise<Response> {
  let delay = backoffMs;
  for (let attempt = 1; ; attempt++) {
    let failure: string;
    try {
      const response = await fetcher.call(globalThis, url, init);
      if (response.status < 500) return response;
      await response.body?.cancel();
      failure = `GET ${url}: status ${response.status}`;
    } catch (error) {
      failure = `GET ${url}: ${error instanceof Error ? error.message : String(error)}`;
    }
    if (attempt >= attempts) throw new CairnError("fetch", "Network", `${failure} (after ${attempt} tries)`);
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay *= 2;
  }
}

/**
 * Bytes `range` of the bundle under `base` (a URL ending in `/`): a 404 is
 * refused with status 404 (the caller then reads the tile's own object); a
 * 206 must carry `Content-Range: bytes a-b/32B` for exactly the range asked;
 * a 200 must carry exactly the bundle's 32 B bytes; anything else is refused
 * naming the range. `count` is told the body bytes read.
 */
export async function getRange(fetcher: typeof fetch, base: string, range: BundleRange, attempts: number, backoffMs: number, count: (bytes: number) => void): Promise<Uint8Array> {
  const url = base + range.path;
  const name = `${url}[${range.offset}..${range.offset + BigInt(range.length)}]`;
  const last = range.offset + BigInt(range.length) - 1n;
  const response = await fetchRetrying(fetcher, url, { headers: { Range: `bytes=${range.offset}-${last}` } }, attempts, backoffMs);
  if (response.status === 404) {
    await response.body?.cancel();
    count(0);
    throw badObject(`${url}: missing (404)`, 404);
  }
  const declared = response.headers.get("content-length");
  if (response.status === 206) {
    const header = response.headers.get("content-range") ?? "";
    const want = `bytes ${range.offset}-${last}/${range.bundleBytes}`;
    if (header !== want) {
      await response.body?.cancel();
      throw badObject(`${name}: the answer is ${header === "" ? "a range without Content-Range" : `"${header}"`}, want "${want}" (a bundle of ${range.bundleBytes} bytes)`, 206);
    }
    if (declared !== null && Number(declared) !== range.length) {
      await response.body?.cancel();
      throw badObject(`${name}: the answer announces ${declared} bytes, want ${range.length}`, 206);
    }
    const body = new Uint8Array(await response.arrayBuffer());
    count(body.length);
    if (body.length !== range.length) throw badObject(`${name}: ${body.length} bytes, want ${range.length}`, 206);
    return body;
  }
  if (response.status === 200) {
    // A server without ranges: the whole bundle, only at its exact length.
    if (declared !== null && BigInt(declared) !== range.bundleBytes) {
      await response.body?.cancel();
      throw badObject(`${name}: the server sent the whole object, ${declared} bytes, a bundle has exactly ${range.bundleBytes}`, 200);
    }
    const body = new Uint8Array(await response.arrayBuffer());
    count(body.length);
    if (BigInt(body.length) !== range.bundleBytes) throw badObject(`${name}: the server sent the whole object, ${body.length} bytes, a bundle has exactly ${range.bundleBytes}`, 200);
    const start = Number(range.offset);
    return body.slice(start, start + range.length);
  }
  await response.body?.cancel();
  throw badObject(`${name}: status ${response.status}`, response.status);
}
