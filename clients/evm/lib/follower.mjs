// `cairn follow` as the tests drive it: a child process printing its
// progress as JSON lines (--json), waited on for a block or a
// reorganisation, killed with SIGKILL and started again on the same
// database; and the checks that the database's roots are the contract's.
import { execFileSync, spawn } from "node:child_process";
import { cairnBinary } from "./cairn.mjs";

const binary = cairnBinary();

export function cairn(...args) {
  return execFileSync(binary, args, { maxBuffer: 1 << 28, stdio: ["ignore", "pipe", "pipe"] }).toString();
}

export class Follower {
  /** Starts `cairn follow DIR --json ...args`. */
  constructor(dir, args) {
    this.dir = dir;
    this.args = args;
    this.starts = 0;
    this.start();
  }

  start() {
    this.starts += 1;
    this.lines = [];
    this.stderr = "";
    this.waiters = new Set();
    const child = spawn(binary, ["follow", this.dir, "--json", ...this.args], { stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    this.exit = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
    let pending = "";
    child.stdout.on("data", (data) => {
      pending += data;
      let newline;
      while ((newline = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        this.lines.push(JSON.parse(line));
        for (const waiter of this.waiters) waiter();
      }
    });
    child.stderr.on("data", (data) => {
      this.stderr += data;
    });
    this.exit.then(() => {
      for (const waiter of this.waiters) waiter();
    });
  }

  /**
   * Waits for a progress line, from index `from` of this process's lines
   * on, that satisfies `predicate`; fails if the follower exits or
   * `seconds` pass first.
   */
  async waitFor(predicate, from = 0, seconds = 60, what = "a progress line") {
    const deadline = Date.now() + seconds * 1000;
    for (;;) {
      const index = this.lines.findIndex((line, i) => i >= from && predicate(line));
      if (index >= 0) return index;
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(`cairn follow exited (${this.child.exitCode ?? this.child.signalCode}) before ${what}: ${this.stderr.trim()}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${seconds} s; last lines: ${JSON.stringify(this.lines.slice(-3))}; stderr: ${this.stderr.trim()}`);
      await new Promise((resolve) => {
        const timer = setTimeout(done, Math.min(left, 1000));
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.waiters.add(done);
      }).finally(() => this.waiters.clear());
    }
  }

  /** Waits until every block up to `block` is ingested (lines from `from` on). */
  async caughtUp(block, from = 0) {
    return this.waitFor((line) => (line.event === "ingested" && line.to >= block) || (line.event === "resumed" && line.next_block > block), from, Number(process.env.CAIRN_FOLLOW_WAIT ?? 120), `block ${block} ingested`);
  }

  /** kill -9, then start again on the same database. */
  async crash() {
    this.child.kill("SIGKILL");
    await this.exit;
    this.start();
  }

  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill("SIGKILL");
      await this.exit;
    }
  }
}

/**
 * The database in `dir` is the contract's tree on the node's chain: every
 * tagged head is a block of the node's chain (same hash), and the
 * contract's root at that block (`root(block)`, a bigint) is the head's;
 * the last head's root is the contract's now. Returns the heads checked.
 */
export async function checkAgainstChain(node, dir, root) {
  const { heads } = JSON.parse(cairn("heads", dir, "--json", "--limit", "1000000"));
  for (const head of heads) {
    const block = await node.block(head.block);
    if (block === null || block.hash !== head.block_hash) {
      throw new Error(`tagged head of block ${head.block} has hash ${head.block_hash}, the node's chain ${block?.hash ?? "no such block"}`);
    }
    if (head.size === 0) continue;
    const contract = await root(head.block);
    if (BigInt(head.root) !== contract) {
      throw new Error(`block ${head.block}: cairn's root of ${head.size} leaves is ${head.root}, the contract's 0x${contract.toString(16)}`);
    }
  }
  const withLeaves = heads.filter((head) => head.size > 0);
  if (withLeaves.length > 0) {
    const last = withLeaves[withLeaves.length - 1];
    const now = await root("latest");
    if (BigInt(last.root) !== now) throw new Error(`cairn's last root ${last.root} (block ${last.block}) is not the contract's root now, 0x${now.toString(16)}`);
    const { root: dbRoot } = JSON.parse(cairn("root", dir, "--json"));
    if (dbRoot !== last.root) throw new Error(`cairn root ${dbRoot} is not the last tagged head's ${last.root}`);
  }
  return heads;
}
