// SPDX-License-Identifier: MIT
pragma solidity 0.8.4;

// Semaphore v3's contract, as @semaphore-protocol/contracts@3 publishes it,
// compiled as is: its groups are @zk-kit/incremental-merkle-tree.sol's
// IncrementalBinaryTree, whose PoseidonT3 the deployer links to
// circomlibjs's generated Poseidon contract. No harness: createGroup,
// addMember, getMerkleTreeRoot and removeMember are Semaphore's own.
import {Semaphore} from "@semaphore-protocol/contracts/Semaphore.sol";
