//! A follow configuration file: several contracts, each feeding a named
//! tree of a database of several trees. JSON, every field checked, and
//! every refusal naming the field (`sources[1].contract: ...`):
//!
//! ```json
//! {
//!   "from_block": 0,
//!   "sources": [
//!     {
//!       "tree": "notes",
//!       "contract": "0x5FbDB2315678afecb367f032d93F642f64180aa3",
//!       "events": [
//!         { "signature": "Deposit(bytes32 indexed commitment, uint32 leafIndex, uint256 timestamp)",
//!           "field": "commitment" }
//!       ],
//!       "root_call": "getLastRoot()"
//!     },
//!     {
//!       "tree": "members",
//!       "contract": "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512",
//!       "events": [
//!         { "signature": "MemberAdded(uint256 indexed groupId, uint256 index, uint256 identityCommitment, uint256 merkleTreeRoot)",
//!           "field": "identityCommitment" }
//!       ],
//!       "where": { "groupId": "5" },
//!       "root_call": "getMerkleTreeRoot(uint256)",
//!       "root_args": ["5"]
//!     }
//!   ]
//! }
//! ```

use serde::Deserialize;

use crate::abi::{AbiError, Call, EventField, parse_word};
use crate::follower::Source;

/// A configuration the follower refuses: the field and why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Not JSON, or not the shape of a configuration (an unknown field, a
    /// missing one, a wrong type).
    #[error("line {line}, column {column}: {reason}")]
    Json {
        /// The line of the error.
        line: usize,
        /// Its column.
        column: usize,
        /// What serde says.
        reason: String,
    },
    /// A field whose value is refused.
    #[error("{field}: {reason}")]
    Field {
        /// The field, as a path (`sources[0].events[1].signature`).
        field: String,
        /// Why.
        reason: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    from_block: Option<u64>,
    sources: Vec<SourceFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceFile {
    tree: String,
    contract: String,
    events: Vec<EventFile>,
    #[serde(default, rename = "where")]
    filters: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    root_call: Option<String>,
    #[serde(default)]
    root_args: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventFile {
    signature: String,
    field: String,
}

/// A configuration read and checked: what to follow into which tree.
#[derive(Clone, Debug)]
pub struct FollowConfig {
    /// The first block to read, when the database has no block yet.
    pub from_block: Option<u64>,
    /// One per tree fed, each naming its tree.
    pub sources: Vec<Source>,
}

fn field(path: String) -> impl FnOnce(AbiError) -> ConfigError {
    move |error| ConfigError::Field {
        field: path,
        reason: error.to_string(),
    }
}

impl FollowConfig {
    /// Parses and checks `text` (addresses, event signatures and fields,
    /// filters, root calls; every tree named once). The trees themselves
    /// are checked against a database by [`FollowConfig::check_trees`].
    pub fn parse(text: &str) -> Result<FollowConfig, ConfigError> {
        let file: File = serde_json::from_str(text).map_err(|error| ConfigError::Json {
            line: error.line(),
            column: error.column(),
            reason: error.to_string(),
        })?;
        if file.sources.is_empty() {
            return Err(ConfigError::Field {
                field: "sources".to_owned(),
                reason: "no source: name at least one contract and the tree it feeds".to_owned(),
            });
        }
        let mut sources = Vec::with_capacity(file.sources.len());
        for (i, source) in file.sources.into_iter().enumerate() {
            let at = |name: &str| format!("sources[{i}].{name}");
            if let Some(other) = sources
                .iter()
                .position(|s: &Source| s.tree.as_deref() == Some(source.tree.as_str()))
            {
                return Err(ConfigError::Field {
                    field: at("tree"),
                    reason: format!(
                        "{:?} is fed by sources[{other}] already: one source a tree, so its values keep the contract's order",
                        source.tree
                    ),
                });
            }
            let contract = crate::parse_address(&source.contract).map_err(field(at("contract")))?;
            if source.events.is_empty() {
                return Err(ConfigError::Field {
                    field: at("events"),
                    reason: "no event: name at least one, with the field whose values are leaves"
                        .to_owned(),
                });
            }
            let mut events = Vec::with_capacity(source.events.len());
            for (j, event) in source.events.iter().enumerate() {
                let mut parsed =
                    EventField::parse(&event.signature, &event.field).map_err(|error| {
                        ConfigError::Field {
                            field: match error {
                                AbiError::Signature { .. } => at(&format!("events[{j}].signature")),
                                _ => at(&format!("events[{j}].field")),
                            },
                            reason: error.to_string(),
                        }
                    })?;
                for (name, value) in &source.filters {
                    let word = parse_word(value.trim()).map_err(|reason| ConfigError::Field {
                        field: at(&format!("where.{name}")),
                        reason,
                    })?;
                    parsed = parsed
                        .with_filter(name, word)
                        .map_err(field(at(&format!("where.{name}"))))?;
                }
                events.push(parsed);
            }
            if source.root_call.is_none() && !source.root_args.is_empty() {
                return Err(ConfigError::Field {
                    field: at("root_args"),
                    reason: "arguments without a root_call".to_owned(),
                });
            }
            let root_call = source
                .root_call
                .as_deref()
                .map(|call| Call::parse(call, &source.root_args))
                .transpose()
                .map_err(field(at("root_call")))?;
            sources.push(Source {
                tree: Some(source.tree),
                contract,
                events,
                root_call,
            });
        }
        Ok(FollowConfig {
            from_block: file.from_block,
            sources,
        })
    }

    /// Refuses a source naming a tree other than `known` (a database's
    /// trees and families, by name).
    pub fn check_trees(&self, known: &[String]) -> Result<(), ConfigError> {
        for (i, source) in self.sources.iter().enumerate() {
            let name = source.tree.as_deref().unwrap_or_default();
            if !known.iter().any(|k| k == name) {
                return Err(ConfigError::Field {
                    field: format!("sources[{i}].tree"),
                    reason: format!(
                        "no tree {name:?} in the database (it has {})",
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &str = "Leaf(uint256 indexed group, bytes32 value)";

    fn config(sources: &str) -> String {
        format!(r#"{{"from_block": 3, "sources": [{sources}]}}"#)
    }

    fn source(tree: &str, contract: &str, signature: &str, extra: &str) -> String {
        format!(
            r#"{{"tree": "{tree}", "contract": "{contract}", "events": [{{"signature": "{signature}", "field": "value"}}]{extra}}}"#
        )
    }

    const A: &str = "0x00000000000000000000000000000000000c0ffe";

    fn refused(text: &str) -> (String, String) {
        match FollowConfig::parse(text) {
            Err(ConfigError::Field { field, reason }) => (field, reason),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_config_of_two_sources_parses_with_filters_and_root_calls() {
        let text = config(&format!(
            "{}, {}",
            source(
                "notes",
                A,
                EVENT,
                r#", "where": {"group": "1"}, "root_call": "root()""#
            ),
            source(
                "nullifiers",
                "0x00000000000000000000000000000000000C0FFF",
                EVENT,
                r#", "root_call": "rootOf(uint256)", "root_args": ["0x2"]"#
            )
        ));
        let parsed = FollowConfig::parse(&text).unwrap();
        assert_eq!(parsed.from_block, Some(3));
        assert_eq!(parsed.sources.len(), 2);
        assert_eq!(parsed.sources[0].tree.as_deref(), Some("notes"));
        assert_eq!(parsed.sources[0].events[0].filters().len(), 1);
        assert_eq!(parsed.sources[1].contract[19], 0xff);
        let call = parsed.sources[1].root_call.as_ref().unwrap();
        assert_eq!(call.signature(), "rootOf(uint256)");
        assert_eq!(call.calldata()[35], 2);
        parsed
            .check_trees(&["notes".to_owned(), "nullifiers".to_owned()])
            .unwrap();
    }

    #[test]
    fn every_bad_field_is_named() {
        let (field, reason) = refused(&config(&source("a", "0x1234", EVENT, "")));
        assert_eq!(field, "sources[0].contract");
        assert!(reason.contains("40 hex digits, this has 4"), "{reason}");

        let bad_hex = format!("0x{}", "g".repeat(40));
        assert_eq!(
            refused(&config(&source("a", &bad_hex, EVENT, ""))).0,
            "sources[0].contract"
        );

        let (field, reason) = refused(&config(&format!(
            "{}, {}",
            source("a", A, EVENT, ""),
            source("b", A, "Leaf(uint256 indexed group, bytes32", "")
        )));
        assert_eq!(field, "sources[1].events[0].signature");
        assert!(reason.contains("Leaf(uint256"), "{reason}");

        let (field, reason) = refused(&config(&source(
            "a",
            A,
            "Leaf(uint256 indexed group, bytes32 other)",
            "",
        )));
        assert_eq!(field, "sources[0].events[0].field");
        assert!(reason.contains("other"), "{reason}");

        let (field, _) = refused(&config(&source(
            "a",
            A,
            EVENT,
            r#", "where": {"nope": "1"}"#,
        )));
        assert_eq!(field, "sources[0].where.nope");

        let (field, _) = refused(&config(&source(
            "a",
            A,
            EVENT,
            r#", "where": {"group": "x1"}"#,
        )));
        assert_eq!(field, "sources[0].where.group");

        let (field, reason) = refused(&config(&source(
            "a",
            A,
            EVENT,
            r#", "root_call": "root(uint256)""#,
        )));
        assert_eq!(field, "sources[0].root_call");
        assert!(reason.contains("0 arguments given"), "{reason}");

        let (field, _) = refused(&config(&source("a", A, EVENT, r#", "root_args": ["1"]"#)));
        assert_eq!(field, "sources[0].root_args");

        let (field, reason) = refused(&config(&format!(
            "{}, {}",
            source("a", A, EVENT, ""),
            source("a", A, EVENT, "")
        )));
        assert_eq!(field, "sources[1].tree");
        assert!(reason.contains("sources[0]"), "{reason}");

        assert_eq!(refused(&config("")).0, "sources");
    }

    #[test]
    fn unknown_fields_and_trees_are_refused_by_name() {
        let text = config(&source("a", A, EVENT, r#", "root_cal": "root()""#));
        match FollowConfig::parse(&text) {
            Err(ConfigError::Json { reason, line, .. }) => {
                assert!(reason.contains("unknown field `root_cal`"), "{reason}");
                assert_eq!(line, 1);
            }
            other => panic!("{other:?}"),
        }
        let parsed = FollowConfig::parse(&config(&source("a", A, EVENT, ""))).unwrap();
        match parsed.check_trees(&["notes".to_owned(), "nullifiers".to_owned()]) {
            Err(ConfigError::Field { field, reason }) => {
                assert_eq!(field, "sources[0].tree");
                assert!(reason.contains("no tree \"a\""), "{reason}");
                assert!(reason.contains("notes, nullifiers"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            FollowConfig::parse("{\"sources\": ["),
            Err(ConfigError::Json { .. })
        ));
    }
}
