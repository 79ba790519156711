// An Ethereum chain in this process (@ethereumjs/vm, mainnet rules at its
// latest hardfork): contracts are deployed and called through signed
// transactions, so gas figures are whole-transaction gas, intrinsic cost
// and calldata included. Reads and throwaway calls run on a checkpoint of
// the state that is then reverted.
import { createLegacyTx } from "@ethereumjs/tx";
import { Account, bytesToHex, createAddressFromPrivateKey, hexToBytes } from "@ethereumjs/util";
import { createVM, runTx } from "@ethereumjs/vm";
import { Interface } from "ethers";
import { contracts } from "./compile.mjs";

// A test key (never funded anywhere but here).
const KEY = hexToBytes("0x" + "42".repeat(32));
const GAS_LIMIT = 30_000_000n;

// Libraries whose published source has empty bodies, for the deployer to
// link a generated contract in their place (Semaphore v3 links circomlibjs's
// Poseidon contracts where @zk-kit/incremental-merkle-tree.sol declares
// PoseidonT3 and PoseidonT6): deploying the empty bodies would give zeros.
const STUBS = new Set(["@zk-kit/incremental-merkle-tree.sol/Hashes.sol:PoseidonT3", "@zk-kit/incremental-merkle-tree.sol/Hashes.sol:PoseidonT6"]);

export class Chain {
  static async create() {
    const vm = await createVM();
    const sender = createAddressFromPrivateKey(KEY);
    await vm.stateManager.putAccount(sender, new Account(0n, 10n ** 24n));
    return new Chain(vm, sender);
  }

  constructor(vm, sender) {
    this.vm = vm;
    this.sender = sender;
    this.nonce = 0n;
    this.libraries = new Map();
  }

  async transact(to, data) {
    const tx = createLegacyTx({ nonce: this.nonce, gasPrice: 7n, gasLimit: GAS_LIMIT, to, data }, { common: this.vm.common }).sign(KEY);
    const result = await runTx(this.vm, { tx, skipBlockGasLimitValidation: true });
    this.nonce += 1n;
    return result;
  }

  /**
   * Deploys the compiled contract `name` (a name or "source:Name") with
   * constructor `args`, first deploying (once per chain) and linking the
   * libraries it references.
   */
  async deploy(name, args = []) {
    const artifact = contracts()[name];
    if (artifact === undefined) throw new Error(`no compiled contract ${name} (or more than one of that name: qualify it as source:Name)`);
    if (/^0*$/.test(artifact.bytecode)) throw new Error(`${name} has no code (an interface or an abstract contract)`);
    let code = artifact.bytecode;
    for (const [source, byName] of Object.entries(artifact.linkReferences)) {
      for (const [library, places] of Object.entries(byName)) {
        const address = (await this.library(`${source}:${library}`)).slice(2);
        for (const { start, length } of places) {
          code = code.slice(0, start * 2) + address + code.slice((start + length) * 2);
        }
      }
    }
    if (code.includes("__$")) throw new Error(`${name}: unlinked library placeholder left in its code`);
    const abi = new Interface(artifact.abi);
    const result = await this.transact(undefined, hexToBytes("0x" + code + abi.encodeDeploy(args).slice(2)));
    failOnRevert(result, abi, `deploy ${name}`);
    return new Deployed(this, artifact.name, abi, result.createdAddress, result.totalGasSpent);
  }

  /**
   * The address of library `qualified` ("source:Name") on this chain: the
   * one `provide` gave, else the compiled library, deployed on first use.
   * A library whose source only declares it (a stub that the deployer
   * replaces at link time) must be provided.
   */
  async library(qualified) {
    if (!this.libraries.has(qualified)) {
      if (STUBS.has(qualified)) throw new Error(`${qualified} is a declaration only: provide the library to link (Chain.provide)`);
      this.libraries.set(qualified, (await this.deploy(qualified)).address.toString());
    }
    return this.libraries.get(qualified);
  }

  /** Links library `qualified` ("source:Name") to the contract at `address` from now on. */
  provide(qualified, address) {
    if (this.libraries.has(qualified)) throw new Error(`${qualified} is already linked on this chain`);
    this.libraries.set(qualified, address.toString());
  }

  /** Deploys raw creation code (a contract not compiled from Solidity) with `abi`. */
  async deployCode(name, creationCode, abi) {
    const iface = new Interface(abi);
    const result = await this.transact(undefined, hexToBytes(creationCode));
    failOnRevert(result, iface, `deploy ${name}`);
    return new Deployed(this, name, iface, result.createdAddress, result.totalGasSpent);
  }
}

function failOnRevert(result, abi, what) {
  const error = result.execResult.exceptionError;
  if (error) throw new Error(`${what}: ${error.error}: ${describeRevert(abi, result.execResult.returnValue)}`);
}

let errors;

/**
 * A revert's reason: a custom error's name (one declared by any compiled
 * contract, as a library's error bubbles up through its caller), an
 * Error(string)'s text, or the raw bytes.
 */
export function describeRevert(abi, data) {
  const hex = bytesToHex(data);
  if (hex === "0x") return "no revert data";
  errors ??= new Interface(
    [...new Map(Object.values(contracts()).flatMap((c) => c.abi.filter((f) => f.type === "error").map((f) => [f.name, f]))).values()],
  );
  for (const iface of [abi, errors]) {
    try {
      const parsed = iface.parseError(hex);
      if (parsed) return parsed.args.length ? `${parsed.name}(${parsed.args.join(", ")})` : parsed.name;
    } catch {}
  }
  return hex;
}

export class Deployed {
  constructor(chain, name, abi, address, deployGas) {
    this.chain = chain;
    this.name = name;
    this.abi = abi;
    this.address = address;
    this.deployGas = deployGas;
  }

  /** Sends a transaction calling `method`; returns { gas, value } or throws with the revert reason. */
  async send(method, ...args) {
    const result = await this.chain.transact(this.address, hexToBytes(this.abi.encodeFunctionData(method, args)));
    failOnRevert(result, this.abi, `${this.name}.${method}`);
    const fragment = this.abi.getFunction(method);
    const value = fragment.outputs.length ? this.abi.decodeFunctionResult(method, result.execResult.returnValue) : [];
    return { gas: result.totalGasSpent, value: value.length === 1 ? value[0] : value };
  }

  /**
   * Runs `method` without keeping its state change (an eth_call):
   * { ok: true, value, gas } or { ok: false, reason } when it reverts;
   * `gas` is the execution's alone (no intrinsic or calldata cost).
   */
  async call(method, ...args) {
    const { vm, sender } = this.chain;
    await vm.stateManager.checkpoint();
    try {
      const result = await vm.evm.runCall({
        caller: sender,
        origin: sender,
        to: this.address,
        gasLimit: GAS_LIMIT,
        data: hexToBytes(this.abi.encodeFunctionData(method, args)),
      });
      const { exceptionError, returnValue } = result.execResult;
      if (exceptionError) return { ok: false, reason: describeRevert(this.abi, returnValue) };
      const value = this.abi.decodeFunctionResult(method, returnValue);
      return { ok: true, value: value.length === 1 ? value[0] : value, gas: result.execResult.executionGasUsed };
    } finally {
      await vm.stateManager.revert();
    }
  }

  /** `call` that must succeed: its value. */
  async read(method, ...args) {
    const result = await this.call(method, ...args);
    if (!result.ok) throw new Error(`${this.name}.${method} reverted: ${result.reason}`);
    return result.value;
  }
}

