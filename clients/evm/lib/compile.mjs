// Compiles the harness contracts in contracts/ with npm's solc (the
// compiler's own wasm build), resolving imports from node_modules, and
// returns each contract's ABI, creation code and library references.
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const solc = require("solc");

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

/** Every contract the harnesses need, by name: { abi, bytecode, linkReferences }. Compiled once per process. */
export function contracts() {
  if (compiled) return compiled;
  const sources = {};
  for (const file of readdirSync(`${root}contracts`).filter((name) => name.endsWith(".sol"))) {
    sources[`contracts/${file}`] = { content: readFileSync(`${root}contracts/${file}`, "utf8") };
  }
  const input = { language: "Solidity", sources, settings: SETTINGS };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport }));
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(`solc ${solc.version()}:\n${errors.map((e) => e.formattedMessage).join("\n")}`);
  compiled = {};
  for (const [source, byName] of Object.entries(output.contracts)) {
    for (const [name, contract] of Object.entries(byName)) {
      if (compiled[name] !== undefined) throw new Error(`two contracts named ${name} (${source})`);
      compiled[name] = {
        source,
        abi: contract.abi,
        bytecode: contract.evm.bytecode.object,
        linkReferences: contract.evm.bytecode.linkReferences,
      };
    }
  }
  return compiled;
}

export const compilerVersion = () => solc.version();
