//! cairn-db's integration tests: one binary, one module per concern.

mod adversarial;
mod backup;
mod basics;
mod callers;
mod concurrency;
mod corruption;
mod crash;
mod durable_head;
mod facade;
mod forest;
mod forest_lazy;
mod forest_read;
mod indexed;
mod indexed_crash;
mod mutable;
mod mutable_crash;
mod pending;
mod read_only;
mod rollback;
mod rollover;
mod rollover_whole;
mod setfile;
mod support;
mod tagged_power;
