//! CLI integration tests: the real `cairn` binary on temp files and stdin,
//! plus in-process property tests of leaf parsing.

mod bad_input;
mod consistency;
mod db;
mod demo;
mod help_examples;
mod indexed;
mod ingest;
mod interop;
mod leaves;
mod plan;
mod proofs;
mod readme;
mod rollback;
mod root;
mod serve;
mod support;
mod tiles;
mod usage;
