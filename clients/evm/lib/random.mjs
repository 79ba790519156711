// Seeded test data: one seed per run (CAIRN_EVM_SEED repeats a run), so a
// failure names what reproduces it.

/** The BN254 scalar field modulus: Poseidon and MiMCSponge values are below it. */
export const P = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;

export const seed = Number(process.env.CAIRN_EVM_SEED ?? Date.now() % 1_000_000);

/** A small seeded generator (mulberry32). */
export function random(start) {
  let state = start >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (low, high) => low + Math.floor(next() * (high - low + 1));
  const word = () => {
    let value = 0n;
    for (let i = 0; i < 8; i += 1) value = (value << 32n) | BigInt(Math.floor(next() * 4294967296));
    return value;
  };
  /** A uniform element of [1, p): whole 256-bit draws below p, so values near p occur too. */
  const field = () => {
    for (;;) {
      const value = word();
      if (value !== 0n && value < P) return value;
    }
  };
  /** `count` distinct field elements (LeanIMT refuses a repeated leaf). */
  const leaves = (count) => {
    const seen = new Set();
    const out = [];
    while (out.length < count) {
      const value = field();
      if (!seen.has(value)) {
        seen.add(value);
        out.push(value);
      }
    }
    return out;
  };
  return { next, int, field, leaves };
}

/** Splits `items` into consecutive batches of 1 to `most` items. */
export function batches(rng, items, most) {
  const out = [];
  for (let at = 0; at < items.length; ) {
    const size = Math.min(rng.int(1, most), items.length - at);
    out.push(items.slice(at, at + size));
    at += size;
  }
  return out;
}
