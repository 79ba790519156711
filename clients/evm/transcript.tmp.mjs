import { execFileSync } from "node:child_process";
import { mimcSpongecontract } from "circomlibjs";
import { Node } from "./lib/node.mjs";
import { random } from "./lib/random.mjs";
const node = await Node.start();
const hasher = await node.deployCode("MiMCSponge", mimcSpongecontract.createCode("mimcsponge", 220), mimcSpongecontract.abi);
const c = await node.deploy("TornadoDepositHarness", [20, hasher.address]);
const rng = random(5);
for (let b = 0; b < 6; b++) { for (let i = 0; i < 1 + (b % 3); i++) await c.send("deposit", "0x" + rng.field().toString(16).padStart(64, "0")); await node.mine(); }
await node.mineEmpty(2);
const cairn = "/work/wt/follow/target/release/cairn";
execFileSync("rm", ["-rf", "/tmp/tr"]); execFileSync("mkdir", ["/tmp/tr"]);
console.log(execFileSync(cairn, ["init", "/tmp/tr/deposits", "--kind", "imt", "--depth", "20", "--arity", "2", "--hash", "mimcsponge", "--zero", "0x2fe54c60d3acabf3343a35b6eba15db4821b340f76e741e2249685ed4899af6c", "--finality", "explicit"]).toString());
console.log("URL", node.url, "ADDR", c.address, "FROM", c.block);
const out = execFileSync(cairn, ["follow", "/tmp/tr/deposits", "--rpc", node.url, "--contract", c.address, "--from-block", String(c.block), "--event", "Deposit(bytes32 indexed commitment, uint32 leafIndex, uint256 timestamp)", "--field", "commitment", "--root-call", "getLastRoot()", "--confirmations", "3", "--exit-at-head"]).toString();
console.log(out);
console.log(execFileSync(cairn, ["heads", "/tmp/tr/deposits"]).toString());
console.log("contract root", await c.read("getLastRoot"));
await node.stop();
