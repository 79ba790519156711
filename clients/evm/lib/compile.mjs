// Compiles the contracts in contracts/ with npm's solc (the compiler's own
// wasm build), resolving imports from node_modules, and returns each
// contract's ABI, creation code and library references. contracts/*.sol
// take the current compiler; contracts/solc-X.Y.Z/*.sol the release a
// protocol pinned (Semaphore v3's `pragma solidity 0.8.4`), installed as
// the npm alias solc-X.Y.Z.
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const solc = require("solc");
const PINNED = /^solc-(\d+\.\d+\.\d+)$/;

export const root = fileURLToPath(new URL("../", import.meta.url));

// zk-merkle-tree's MerkleTreeWithHistory.sol imports Hardhat's console
// library for debugging but calls nothing in it; rather than install all of
// Hardhat for an unused import, the compiler is given an empty library of
// that name (a call into it would fail to compile, so nothing can hide).
const STAND_INS = { "hardhat/console.sol": "// SPDX-License-Identifier: MIT\npragma solidity >=0.4.22;\nlibrary console {}\n" };

function findImport(path) {
  if (STAND_INS[path] !== undefined) return { contents: STAND_INS[path] };
  try {
    return { contents: readFileSync(require.resolve(path), "utf8") };
  } catch (error) {
    return { error: `cannot resolve import ${path}: ${error.message}` };
  }
}

// The settings a deployment would typically use; nothing here changes what
// the contracts compute, only their gas.
const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.bytecode.linkReferences"] } },
};

let compiled;

/**
 * Every contract the harnesses need, by fully qualified name ("source:Name")
 * and, where no other contract has its name, by name alone:
 * { name, source, abi, bytecode, linkReferences }.
 */
export function contracts() {
  if (compiled) return compiled;
  // Each check runs in its own process: they share the compiler's output
  // through a cache keyed by everything it depends on (the contracts, and
  // the installed packages, compilers included, through the lockfile).
  const folders = ["contracts", ...readdirSync(`${root}contracts`).filter((name) => PINNED.test(name)).map((name) => `contracts/${name}`)];
  const key = createHash("sha256").update(JSON.stringify([SETTINGS, STAND_INS, readFileSync(`${root}package-lock.json`, "utf8"), folders.map((folder) => solFiles(folder))])).digest("hex");
  const cache = `${root}node_modules/.cache/cairn-evm/${key}.json`;
  try {
    return (compiled = JSON.parse(readFileSync(cache, "utf8")));
  } catch {}
  const outputs = folders.map((folder) => {
    const pinned = folder.split("/")[1];
    if (pinned === undefined) return compile(solc, folder);
    const compiler = require(pinned);
    if (!compiler.version().startsWith(`${pinned.match(PINNED)[1]}+`)) throw new Error(`${pinned} is solc ${compiler.version()}`);
    return compile(compiler, folder);
  });
  compiled = {};
  const byName = new Map();
  for (const [source, named] of outputs.flatMap((output) => Object.entries(output.contracts))) {
    for (const [name, contract] of Object.entries(named)) {
      const artifact = {
        name,
        source,
        abi: contract.abi,
        bytecode: contract.evm.bytecode.object,
        linkReferences: contract.evm.bytecode.linkReferences,
      };
      if (compiled[`${source}:${name}`] !== undefined) throw new Error(`${source}:${name} compiled twice`);
      compiled[`${source}:${name}`] = artifact;
      byName.set(name, byName.has(name) ? null : artifact);
    }
  }
  for (const [name, artifact] of byName) if (artifact !== null) compiled[name] = artifact;
  mkdirSync(`${root}node_modules/.cache/cairn-evm`, { recursive: true });
  writeFileSync(`${cache}.${process.pid}`, JSON.stringify(compiled));
  renameSync(`${cache}.${process.pid}`, cache);
  return compiled;
}

/** The .sol files of `folder` as solc's sources: { "folder/file.sol": { content } }. */
function solFiles(folder) {
  const sources = {};
  for (const file of readdirSync(`${root}${folder}`).filter((name) => name.endsWith(".sol"))) {
    sources[`${folder}/${file}`] = { content: readFileSync(`${root}${folder}/${file}`, "utf8") };
  }
  return sources;
}

/** The .sol files of `folder` (relative to this package) compiled with `compiler`: solc's standard JSON output. */
function compile(compiler, folder) {
  const sources = solFiles(folder);
  const input = { language: "Solidity", sources, settings: SETTINGS };
  const output = JSON.parse(compiler.compile(JSON.stringify(input), { import: findImport }));
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(`solc ${compiler.version()}:\n${errors.map((e) => e.formattedMessage).join("\n")}`);
  return output;
}

/**
 * One generated contract (`content`, a whole .sol file that imports
 * nothing, e.g. a verifier snarkjs exported) compiled with the current
 * solc and the settings above: { name, abi, bytecode } of contract `name`.
 */
export function compileSource(file, content, name) {
  const input = { language: "Solidity", sources: { [file]: { content } }, settings: SETTINGS };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(`solc ${solc.version()} on ${file}:\n${errors.map((e) => e.formattedMessage).join("\n")}`);
  const contract = output.contracts[file]?.[name];
  if (contract === undefined) throw new Error(`${file} has no contract ${name}`);
  return { name, abi: contract.abi, bytecode: contract.evm.bytecode.object };
}
