//! The handlers, one file per family of routes: appends
//! ([`append`]), a mutable tree's updates and removals ([`changes`]), rollback and finalization ([`writes`]), lookups by value
//! ([`lookup`]), proofs ([`proofs`]), the head and its history
//! ([`history`]), leaves by index for mirrors ([`leaves`]), the signed
//! checkpoint ([`checkpoint`]), the batch circuits' witnesses
//! ([`witness`]), and the service routes ([`service`]).
//! Every handler speaks to the database through `cairn_db::Database`
//! alone, for every tree kind; what a kind cannot do the database
//! refuses (`cairn_db::Operation`), or the route table does for a whole
//! route.
//!
//! Reads answer at the durable size, never past it, so a crash can never
//! take back what a response said.

pub(crate) mod append;
pub(crate) mod changes;
pub(crate) mod checkpoint;
pub(crate) mod history;
pub(crate) mod leaves;
pub(crate) mod lookup;
pub(crate) mod proofs;
pub(crate) mod service;
pub(crate) mod witness;
pub(crate) mod writes;
