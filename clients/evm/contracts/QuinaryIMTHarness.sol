// SPDX-License-Identifier: MIT
pragma solidity ^0.8.4;

// A fixed-depth 5-ary IMT kept by the public library of @zk-kit/imt.sol
// (linked, as a deployer links it), with the tree's own membership check.
import {QuinaryIMT, QuinaryIMTData} from "@zk-kit/imt.sol/QuinaryIMT.sol";
import {InternalQuinaryIMT} from "@zk-kit/imt.sol/internal/InternalQuinaryIMT.sol";

contract QuinaryIMTHarness {
    QuinaryIMTData internal tree;

    constructor(uint256 depth, uint256 zero) {
        QuinaryIMT.init(tree, depth, zero);
    }

    function insert(uint256 leaf) external {
        QuinaryIMT.insert(tree, leaf);
    }

    function root() external view returns (uint256) {
        return tree.root;
    }

    function size() external view returns (uint256) {
        return tree.numberOfLeaves;
    }

    /// The library's `verify` is private; this is the function it calls.
    function verify(uint256 leaf, uint256[4][] calldata siblings, uint8[] calldata pathIndices)
        external
        view
        returns (bool)
    {
        return InternalQuinaryIMT._verify(tree, leaf, siblings, pathIndices);
    }
}
