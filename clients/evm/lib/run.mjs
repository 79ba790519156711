// What the tests share: the size knob, and the figures a run reports.

/** Leaves per tree: CAIRN_EVM_LEAVES, else a few hundred (what CI runs). */
export const LEAVES = Number(process.env.CAIRN_EVM_LEAVES ?? 200);
if (!Number.isSafeInteger(LEAVES) || LEAVES < 1) throw new Error(`CAIRN_EVM_LEAVES=${process.env.CAIRN_EVM_LEAVES}: want a whole number of leaves, at least 1`);

/** Gas and time spent, summed per kind of operation, and a one-line summary. */
export class Tally {
  constructor() {
    this.rows = new Map();
  }

  add(what, count, gas, ms) {
    const row = this.rows.get(what) ?? { count: 0, gas: 0n, ms: 0 };
    row.count += count;
    row.gas += BigInt(gas);
    row.ms += ms;
    this.rows.set(what, row);
  }

  /** Times `body` (which returns the gas it spent) as `count` operations of `what`. */
  async time(what, count, body) {
    const start = performance.now();
    const gas = await body();
    this.add(what, count, gas ?? 0n, performance.now() - start);
  }

  summary() {
    return [...this.rows]
      .map(([what, { count, gas, ms }]) => {
        const perGas = gas > 0n ? `, ${(gas / BigInt(count)).toLocaleString("en")} gas each` : "";
        return `${what}: ${count.toLocaleString("en")} in ${(ms / 1000).toFixed(2)} s${perGas}`;
      })
      .join("; ");
  }
}
