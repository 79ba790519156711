//! The server's integration tests: one binary, modules by subject. Every
//! test talks to a real server on 127.0.0.1 (in process, or the
//! `cairn-server` binary as a child) through a real HTTP client.

mod api;
mod auth;
mod browsers;
mod chain;
mod checkpoint;
mod concurrency;
mod connections;
mod crash;
mod forest;
mod indexed;
mod limits;
mod mirror;
mod mutable;
mod openapi;
mod operations;
mod pending;
mod shutdown;
mod store_faults;
mod support;
mod witness;
