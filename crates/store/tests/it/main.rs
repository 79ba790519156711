//! cairn-store's integration tests: one binary, one module per concern.

mod basics;
mod crash;
mod faults;
mod files;
mod integrity;
mod model;
mod notify;
mod power;
mod power_loss;
mod rollback;
mod rollback_crash;
mod rollback_edges;
mod rollback_model;
mod support;
mod upkeep;
