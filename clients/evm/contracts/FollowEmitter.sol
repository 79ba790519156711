// SPDX-License-Identifier: MIT
pragma solidity ^0.8.4;

// Events without a tree, for measuring `cairn follow`'s catch-up where the
// node's cost of producing them must stay small: each call emits `count`
// Leaf events whose values are distinct BN254 field elements
// (keccak256 of the index, reduced mod p).
contract FollowEmitter {
    uint256 internal constant P = 21888242871839275222246405745257275088548364400416034343698204186575808495617;
    uint256 public emitted;

    event Leaf(uint256 indexed index, uint256 value);

    function emitMany(uint256 count) external {
        uint256 start = emitted;
        for (uint256 i = start; i < start + count; i++) {
            emit Leaf(i, uint256(keccak256(abi.encode(i))) % P);
        }
        emitted = start + count;
    }
}
