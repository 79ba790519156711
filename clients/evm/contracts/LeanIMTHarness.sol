// SPDX-License-Identifier: MIT
pragma solidity ^0.8.4;

// A LeanIMT kept by the public library of @zk-kit/lean-imt.sol (linked, as
// a deployer links it), exposed so the tests can insert, update and remove
// leaves, read the root and present membership proofs.
import {LeanIMT, LeanIMTData} from "@zk-kit/lean-imt.sol/LeanIMT.sol";

contract LeanIMTHarness {
    LeanIMTData internal tree;

    function insert(uint256 leaf) external returns (uint256) {
        return LeanIMT.insert(tree, leaf);
    }

    function insertMany(uint256[] calldata leaves) external returns (uint256) {
        return LeanIMT.insertMany(tree, leaves);
    }

    function root() external view returns (uint256) {
        return LeanIMT.root(tree);
    }

    function size() external view returns (uint256) {
        return tree.size;
    }

    /// The library has no verify: its update is what checks a membership
    /// proof, recomputing the root from `oldLeaf` and `siblings` (zk-kit's
    /// proof siblings) and reverting with WrongSiblingNodes when it differs.
    /// The tests call this in a call whose state change is thrown away.
    function update(uint256 oldLeaf, uint256 newLeaf, uint256[] calldata siblings) external returns (uint256) {
        return LeanIMT.update(tree, oldLeaf, newLeaf, siblings);
    }

    /// Sets `oldLeaf` to 0 (the library's removal), given its proof siblings.
    function remove(uint256 oldLeaf, uint256[] calldata siblings) external returns (uint256) {
        return LeanIMT.remove(tree, oldLeaf, siblings);
    }
}
