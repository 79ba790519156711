// SPDX-License-Identifier: MIT
pragma solidity ^0.8.4;

// A fixed-depth binary IMT kept by the public library of @zk-kit/imt.sol
// (linked, as a deployer links it), with the tree's own membership check,
// update and remove (each checks the old leaf's proof first).
import {BinaryIMT, BinaryIMTData} from "@zk-kit/imt.sol/BinaryIMT.sol";
import {InternalBinaryIMT} from "@zk-kit/imt.sol/internal/InternalBinaryIMT.sol";

contract BinaryIMTHarness {
    BinaryIMTData internal tree;

    /// `depth` levels with `zero` in empty leaves; or, with
    /// `defaultZeroes`, the library's built-in zero table (zero 0).
    constructor(uint256 depth, uint256 zero, bool defaultZeroes) {
        if (defaultZeroes) {
            BinaryIMT.initWithDefaultZeroes(tree, depth);
        } else {
            BinaryIMT.init(tree, depth, zero);
        }
    }

    function insert(uint256 leaf) external returns (uint256) {
        return BinaryIMT.insert(tree, leaf);
    }

    function root() external view returns (uint256) {
        return tree.root;
    }

    function size() external view returns (uint256) {
        return tree.numberOfLeaves;
    }

    /// The library's `verify` is private; this is the function it calls.
    function verify(uint256 leaf, uint256[] calldata siblings, uint8[] calldata pathIndices)
        external
        view
        returns (bool)
    {
        return InternalBinaryIMT._verify(tree, leaf, siblings, pathIndices);
    }

    function update(uint256 leaf, uint256 newLeaf, uint256[] calldata siblings, uint8[] calldata pathIndices) external {
        BinaryIMT.update(tree, leaf, newLeaf, siblings, pathIndices);
    }

    /// Sets `leaf` to the tree's zero value (the library's removal).
    function remove(uint256 leaf, uint256[] calldata siblings, uint8[] calldata pathIndices) external {
        BinaryIMT.remove(tree, leaf, siblings, pathIndices);
    }

    /// The library's cache of the rightmost path's pair at `level` (what
    /// its insert hashes the next leaf with).
    function lastSubtree(uint256 level) external view returns (uint256[2] memory) {
        return tree.lastSubtrees[level];
    }
}
