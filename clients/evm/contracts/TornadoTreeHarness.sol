// SPDX-License-Identifier: MIT
pragma solidity ^0.8.17;

// The deposit tree of Tornado Cash as the zk-merkle-tree package publishes
// it (its MerkleTreeWithHistory.sol, a port of tornado-core's to Solidity
// 0.8 with the same zero value, zero table and MiMCSponge hashing), with
// the insert that Tornado's deposit() performs made callable.
import {MerkleTreeWithHistory, IHasher} from "zk-merkle-tree/contracts/MerkleTreeWithHistory.sol";

contract TornadoTreeHarness is MerkleTreeWithHistory {
    constructor(uint32 levels, IHasher hasher) MerkleTreeWithHistory(levels, hasher) {}

    function insert(bytes32 leaf) external returns (uint32) {
        return _insert(leaf);
    }
}
