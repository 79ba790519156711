//! CLI integration tests: the real `cairn` binary on temp files and stdin,
//! plus in-process property tests of leaf parsing.

mod bad_input;
mod boundary;
mod consistency;
mod damage;
mod db;
mod demo;
mod forest_tiles;
mod formats;
mod help_examples;
mod imt;
mod indexed;
mod ingest;
mod interop;
mod json_fields;
mod leaves;
mod mutable;
mod notecheck;
mod operations;
mod plan;
mod proofs;
mod readme;
mod repair;
mod rollback;
mod root;
mod scale_out;
mod serve;
mod signing;
mod support;
mod tidy;
mod tiles;
mod tiles_signed;
mod trees;
mod usage;
