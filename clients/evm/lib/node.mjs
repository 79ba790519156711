// A local Ethereum node for `cairn follow`'s tests: Hardhat's JSON-RPC node
// (npm `hardhat`, configured by hardhat.config.cjs), started on a free
// port of 127.0.0.1 and stopped with the test. Contracts compiled by
// lib/compile.mjs are deployed through it with their libraries linked, as
// lib/chain.mjs does in process; transactions are sent from Hardhat's
// first (unlocked) account. Blocks are mined on demand: automine is off,
// so a block holds every transaction sent since the last `mine`.
import { spawn } from "node:child_process";
import { request as httpRequest } from "node:http";
import { createServer } from "node:net";
import { Interface } from "ethers";
import { contracts, root } from "./compile.mjs";

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export class Node {
  /** Starts a node; resolves once it answers. */
  static async start() {
    const port = await freePort();
    const child = spawn(process.execPath, [`${root}node_modules/hardhat/internal/cli/cli.js`, "node", "--hostname", "127.0.0.1", "--port", String(port)], {
      cwd: root,
      env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: "true" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const started = new Promise((resolve, reject) => {
      const onData = (data) => {
        output += data;
        if (output.includes("Started HTTP")) resolve();
      };
      child.stdout.on("data", onData);
      child.stderr.on("data", onData);
      child.once("exit", (code) => reject(new Error(`hardhat node exited with ${code}: ${output.slice(-2000)}`)));
    });
    await started;
    // Drain its output from now on (a full pipe would stall it).
    child.stdout.removeAllListeners("data");
    child.stderr.removeAllListeners("data");
    child.stdout.resume();
    child.stderr.resume();
    const node = new Node(child, `http://127.0.0.1:${port}`);
    [node.from] = await node.rpc("eth_accounts");
    await node.rpc("evm_setAutomine", [false]);
    return node;
  }

  constructor(child, url) {
    this.child = child;
    this.url = url;
    this.libraries = new Map();
    this.id = 0;
  }

  // One connection a request (`agent: false`): a kept-alive socket the node
  // closes while idle would fail the next request at random ("fetch failed"),
  // and a retried eth_sendTransaction could be sent twice.
  async rpc(method, params = []) {
    const payload = JSON.stringify({ jsonrpc: "2.0", id: ++this.id, method, params });
    const text = await new Promise((resolve, reject) => {
      const request = httpRequest(this.url, { method: "POST", agent: false, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) } }, (response) => {
        let data = "";
        response.setEncoding("utf8");
        response.on("data", (chunk) => (data += chunk));
        response.on("end", () => resolve(data));
        response.on("error", reject);
      });
      request.on("error", (error) => reject(new Error(`${method}: ${error.message}`)));
      request.end(payload);
    });
    const body = JSON.parse(text);
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result;
  }

  async blockNumber() {
    return Number(await this.rpc("eth_blockNumber"));
  }

  async block(number) {
    return this.rpc("eth_getBlockByNumber", [`0x${number.toString(16)}`, false]);
  }

  /** Mines one block holding the pending transactions; returns its number. */
  async mine() {
    await this.rpc("evm_mine");
    return this.blockNumber();
  }

  /**
   * Mines `count` empty blocks (at most: pending transactions go in the
   * first), one evm_mine each: hardhat_mine's reserved blocks answer a
   * parentHash of zero, which no chain has and a follower rightly refuses.
   */
  async mineEmpty(count) {
    for (let i = 0; i < count; i += 1) await this.rpc("evm_mine");
  }

  async snapshot() {
    return this.rpc("evm_snapshot");
  }

  /** Reverts to `id` (consumed), dropping every block mined since. */
  async revert(id) {
    if ((await this.rpc("evm_revert", [id])) !== true) throw new Error(`evm_revert ${id} refused`);
  }

  /** Sends a transaction (mined by the next `mine`); returns its hash. */
  async send(to, data) {
    return this.rpc("eth_sendTransaction", [{ from: this.from, to, data, gas: `0x${(16_000_000).toString(16)}` }]);
  }

  /** Sends and mines one transaction in a block of its own; throws if it reverted. */
  async transact(to, data) {
    const hash = await this.send(to, data);
    await this.mine();
    const receipt = await this.rpc("eth_getTransactionReceipt", [hash]);
    if (receipt.status !== "0x1") throw new Error(`transaction ${hash} to ${to ?? "a new contract"} reverted`);
    return receipt;
  }

  /** An eth_call at `block` (a number, or "latest"). */
  async call(to, data, block = "latest") {
    return this.rpc("eth_call", [{ to, data }, typeof block === "number" ? `0x${block.toString(16)}` : block]);
  }

  /** Deploys compiled contract `name` with `args`, its libraries deployed and linked first. */
  async deploy(name, args = []) {
    const artifact = contracts()[name];
    if (artifact === undefined) throw new Error(`no compiled contract ${name}`);
    let code = artifact.bytecode;
    for (const [source, byName] of Object.entries(artifact.linkReferences)) {
      for (const [library, places] of Object.entries(byName)) {
        const qualified = `${source}:${library}`;
        if (!this.libraries.has(qualified)) this.libraries.set(qualified, (await this.deploy(qualified)).address);
        const address = this.libraries.get(qualified).slice(2);
        for (const { start, length } of places) code = code.slice(0, start * 2) + address + code.slice((start + length) * 2);
      }
    }
    const abi = new Interface(artifact.abi);
    return this.deployCode(name, "0x" + code + abi.encodeDeploy(args).slice(2), abi);
  }

  /** Deploys raw creation code with `abi`. */
  async deployCode(name, creationCode, abi) {
    const receipt = await this.transact(undefined, creationCode);
    return new Contract(this, name, abi instanceof Interface ? abi : new Interface(abi), receipt.contractAddress, Number(receipt.blockNumber));
  }

  async stop() {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    this.child.kill("SIGKILL");
    await exited;
  }
}

export class Contract {
  constructor(node, name, abi, address, block) {
    this.node = node;
    this.name = name;
    this.abi = abi;
    this.address = address;
    this.block = block;
  }

  /** Sends a call of `method` (mined by the node's next `mine`). */
  send(method, ...args) {
    return this.node.send(this.address, this.abi.encodeFunctionData(method, args));
  }

  /** Reads `method` at `block`. */
  async read(method, args = [], block = "latest") {
    const data = await this.node.call(this.address, this.abi.encodeFunctionData(method, args), block);
    const value = this.abi.decodeFunctionResult(method, data);
    return value.length === 1 ? value[0] : value;
  }
}
