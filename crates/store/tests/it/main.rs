//! cairn-store's integration tests: one binary, one module per concern.

mod basics;
mod crash;
mod faults;
mod files;
mod integrity;
mod notify;
mod power;
mod rollback;
mod rollback_crash;
mod rollback_edges;
mod support;
mod upkeep;
