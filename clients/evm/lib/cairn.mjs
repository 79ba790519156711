// The cairn side of the cross-checks: the `cairn` binary driven through its
// CLI (init, ingest, root, prove, update, remove) on a database in a
// temporary directory.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root } from "./compile.mjs";

const repo = `${root}../../`;

/** $CAIRN_BIN, else the workspace's release or debug build; null if none (an error under CI). */
export function cairnBinary() {
  const candidates = [process.env.CAIRN_BIN, `${repo}target/release/cairn`, `${repo}target/debug/cairn`];
  const found = candidates.find((candidate) => candidate && existsSync(candidate));
  if (!found && process.env.CI) throw new Error("CI: no cairn binary (cargo build --release -p cairn-cli, or set CAIRN_BIN)");
  return found ?? null;
}

const binary = cairnBinary();

function run(...args) {
  return execFileSync(binary, args, { maxBuffer: 1 << 28, stdio: ["ignore", "pipe", "pipe"] }).toString();
}

/** Whether this cairn has the fixed-depth tree kind (`cairn init --kind imt`). */
export function hasImtKind() {
  if (binary === null) return false;
  return /--kind\b/.test(run("init", "--help"));
}

const hex32 = (value) => "0x" + value.toString(16).padStart(64, "0");

/** A cairn database in a fresh temporary directory. */
export class CairnTree {
  /**
   * `options`: { arity, hash } and, for the fixed-depth kind,
   * { kind: "imt", depth, zero } (zero a bigint), for the indexed kind
   * { kind: "indexed" }; { mutable: true } makes
   * a mutable tree, { readmit: true } one that takes removed values back.
   */
  static create(options) {
    if (binary === null) throw new Error("no cairn binary");
    const work = mkdtempSync(join(tmpdir(), "cairn-evm-"));
    const dir = join(work, "db");
    const args = ["init", dir, "--arity", String(options.arity), "--hash", options.hash];
    if (options.kind !== undefined) args.push("--kind", options.kind);
    if (options.depth !== undefined) args.push("--depth", String(options.depth));
    if (options.zero !== undefined) args.push("--zero", hex32(options.zero));
    if (options.mutable) args.push("--mutable");
    if (options.readmit) args.push("--readmit-removed");
    run(...args);
    return new CairnTree(work, dir);
  }

  constructor(work, dir) {
    this.work = work;
    this.dir = dir;
    this.batches = 0;
  }

  /** Appends `leaves` (bigints) durably, as one `cairn ingest`; returns its JSON report. */
  ingest(leaves) {
    return JSON.parse(run("ingest", this.dir, this.leafFile(leaves), "--format", "hex", "--json"));
  }

  /** `cairn ingest` of `leaves` that must fail: its exit status and stderr. */
  ingestRefused(leaves) {
    try {
      run("ingest", this.dir, this.leafFile(leaves), "--format", "hex");
    } catch (error) {
      return { status: error.status, stderr: error.stderr.toString() };
    }
    throw new Error(`cairn ingest of ${leaves.length} leaves into ${this.dir}: accepted, want a refusal`);
  }

  leafFile(leaves) {
    const file = join(this.work, `batch-${this.batches++}.hex`);
    writeFileSync(file, leaves.map(hex32).join("\n") + "\n");
    return file;
  }

  /** The current root as a bigint (null for a tree without one) and the size. */
  root() {
    const report = JSON.parse(run("root", this.dir, "--json"));
    return { size: report.size, root: report.root === null ? null : BigInt(report.root) };
  }

  /** The root of the tree of the first `size` leaves (the root of a historical zkkit proof). */
  rootAt(size) {
    return BigInt(JSON.parse(run("prove", this.dir, "--index", "0", "--size", String(size), "--proof-format", "zkkit")).root);
  }

  /** `cairn prove DIR --index I --proof-format zkkit`, parsed. */
  proveZkkit(index) {
    return JSON.parse(run("prove", this.dir, "--index", String(index), "--proof-format", "zkkit"));
  }

  /** `cairn update DIR I V --proof-format zkkit`: leaf `index` becomes `value`; the old leaf's proof, parsed. */
  updateLeaf(index, value) {
    return JSON.parse(run("update", this.dir, String(index), hex32(value), "--proof-format", "zkkit"));
  }

  /** `cairn remove DIR I --proof-format zkkit`: leaf `index` becomes the zero leaf; the old leaf's proof, parsed. */
  removeLeaf(index) {
    return JSON.parse(run("remove", this.dir, String(index), "--proof-format", "zkkit"));
  }

  /** `cairn update DIR I V` that must fail: its exit status and stderr. */
  updateRefused(index, value) {
    try {
      run("update", this.dir, String(index), hex32(value));
    } catch (error) {
      return { status: error.status, stderr: error.stderr.toString() };
    }
    throw new Error(`cairn update ${this.dir} ${index}: accepted, want a refusal`);
  }

  /** `cairn prove DIR --append-witness FROM..TO --circuit-depth D`: the batch-append circuit's inputs, parsed. */
  appendWitness(from, to, depth) {
    return JSON.parse(run("prove", this.dir, "--append-witness", `${from}..${to}`, "--circuit-depth", String(depth)));
  }

  /** `cairn prove DIR --insert-witness V1,V2,.. --circuit-depth D`: the indexed batch circuit's inputs for inserting `values` (bigints) at the head, parsed; nothing is inserted. */
  insertWitness(values, depth) {
    return JSON.parse(run("prove", this.dir, "--insert-witness", values.map(String).join(","), "--circuit-depth", String(depth)));
  }

  remove() {
    rmSync(this.work, { recursive: true, force: true });
  }
}

export { binary, hex32 };
