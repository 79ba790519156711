// SPDX-License-Identifier: MIT
pragma solidity ^0.8.17;

// Tornado Cash's deposit as a chain follower sees it: the deposit tree of
// zk-merkle-tree's MerkleTreeWithHistory (tornado-core's, ported to 0.8),
// each insert announced by Tornado's own event, Deposit(bytes32 indexed
// commitment, uint32 leafIndex, uint256 timestamp), and a commitment
// refused twice, as Tornado's deposit() does. No denomination is taken:
// the tree and its events are what `cairn follow` reads.
import {MerkleTreeWithHistory, IHasher} from "zk-merkle-tree/contracts/MerkleTreeWithHistory.sol";

contract TornadoDepositHarness is MerkleTreeWithHistory {
    mapping(bytes32 => bool) public commitments;

    event Deposit(bytes32 indexed commitment, uint32 leafIndex, uint256 timestamp);

    constructor(uint32 levels, IHasher hasher) MerkleTreeWithHistory(levels, hasher) {}

    function deposit(bytes32 commitment) external {
        require(!commitments[commitment], "The commitment has been submitted");
        uint32 insertedIndex = _insert(commitment);
        commitments[commitment] = true;
        emit Deposit(commitment, insertedIndex, block.timestamp);
    }
}
