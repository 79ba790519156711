//! Decoding an append's body: `{"leaves": ["0x..", ...], "block":
//! {"number": N, "hash": "0x.."}}` (JSON; the block is optional, and with
//! one the leaves may be empty) or raw 32-byte records
//! (`application/octet-stream`; its block comes in the query). The body is untrusted
//! network input: every refusal is a 4xx with the reason and the value,
//! never a panic, and counts are checked before anything is allocated per
//! leaf.
#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use std::borrow::Cow;

use axum::http::{HeaderMap, StatusCode, header};
use cairn_core::decimal::parse_field_element;
use cairn_core::hex::parse_hash;
use cairn_core::{Hash, HashKind};
use cairn_db::BlockTag;
use serde::Deserialize;

use crate::error::ApiError;

/// How a body encodes its leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    Json,
    Binary,
}

/// The encoding named by the `Content-Type` header (415 for any other).
pub(crate) fn encoding(headers: &HeaderMap) -> Result<Encoding, ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Err(unsupported("no Content-Type"));
    };
    let text = value.to_str().unwrap_or("(not text)");
    let essence = text.split(';').next().unwrap_or_default().trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(Encoding::Json)
    } else if essence.eq_ignore_ascii_case("application/octet-stream") {
        Ok(Encoding::Binary)
    } else {
        Err(unsupported(&format!("Content-Type {text:?}")))
    }
}

fn unsupported(what: &str) -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        format!(
            "{what}: send application/json ({{\"leaves\": [\"0x..\"]}}) or application/octet-stream (raw 32-byte leaves)"
        ),
    )
}

/// What an append asks for: leaves, and the block they belong to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Batch {
    pub leaves: Vec<Hash>,
    pub block: Option<BlockTag>,
}

/// The batch of a body; `query_block` is the block the query names, if
/// any (a batch may name its block in one place only).
pub(crate) fn batch(
    encoding: Encoding,
    body: &[u8],
    max_leaves: usize,
    query_block: Option<BlockTag>,
    hash: HashKind,
) -> Result<Batch, ApiError> {
    let (leaves, body_block) = values(encoding, body, max_leaves, hash)?;
    let block = match (body_block, query_block) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request(
                "the block is given twice (in the body and in the query): give it once",
            ));
        }
        (body, query) => body.or(query),
    };
    if leaves.is_empty() && block.is_none() {
        return Err(empty());
    }
    Ok(Batch { leaves, block })
}

/// The values of a body, and the block a JSON body names, if any: what
/// an append and a lookup both read (an empty list is not refused here).
pub(crate) fn values(
    encoding: Encoding,
    body: &[u8],
    max_leaves: usize,
    hash: HashKind,
) -> Result<(Vec<Hash>, Option<BlockTag>), ApiError> {
    match encoding {
        Encoding::Json => json(body, max_leaves, hash),
        Encoding::Binary => Ok((binary(body, max_leaves)?, None)),
    }
}

fn empty() -> ApiError {
    ApiError::bad_request(
        "empty batch: append at least one leaf (a block tag alone needs the block: {\"leaves\": [], \"block\": {\"number\": N}})",
    )
}

/// A block hash given as text.
pub(crate) fn block_hash(text: &str) -> Result<Hash, ApiError> {
    parse_hash(text).map_err(|e| ApiError::bad_request(format!("block hash: {e}")))
}

fn too_many(count: usize, max_leaves: usize) -> ApiError {
    ApiError::too_large(format!(
        "a batch of {count} leaves exceeds this server's limit of {max_leaves} leaves per request"
    ))
}

fn binary(body: &[u8], max_leaves: usize) -> Result<Vec<Hash>, ApiError> {
    let (records, rest) = body.as_chunks::<32>();
    if !rest.is_empty() {
        return Err(ApiError::bad_request(format!(
            "a binary body of {} bytes is not a whole number of 32-byte leaves ({} leaves and {} bytes left over)",
            body.len(),
            records.len(),
            rest.len()
        )));
    }
    if records.len() > max_leaves {
        return Err(too_many(records.len(), max_leaves));
    }
    Ok(records.to_vec())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LeavesJson<'a> {
    #[serde(borrow, default)]
    leaves: Vec<Cow<'a, str>>,
    #[serde(borrow, default)]
    block: Option<BlockJson<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockJson<'a> {
    number: u64,
    #[serde(borrow, default)]
    hash: Option<Cow<'a, str>>,
}

/// A leaf written as `0x` and 64 hex digits or, for a database of a field
/// hash (Poseidon, MiMCSponge), as a decimal field element (below the
/// modulus, canonical spelling).
pub(crate) fn parse_leaf(text: &str, hash: HashKind) -> Result<Hash, String> {
    if hash.is_field_hash() && !text.starts_with("0x") && !text.starts_with("0X") {
        return parse_field_element(text).map_err(|e| e.to_string());
    }
    parse_hash(text).map_err(|e| {
        if hash.is_field_hash() {
            e.to_string()
        } else {
            format!("{e} (decimal values are taken by Poseidon and MiMCSponge databases only; this one hashes with {hash})")
        }
    })
}

fn json(
    body: &[u8],
    max_leaves: usize,
    hash: HashKind,
) -> Result<(Vec<Hash>, Option<BlockTag>), ApiError> {
    let doc: LeavesJson<'_> = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the body is not {{\"leaves\": [\"0x..\", ...], \"block\": {{\"number\": N, \"hash\": \"0x..\"}}}} (block optional): {e}"
        ))
    })?;
    if doc.leaves.len() > max_leaves {
        return Err(too_many(doc.leaves.len(), max_leaves));
    }
    let block = match doc.block {
        None => None,
        Some(block) => Some(BlockTag {
            number: block.number,
            hash: block.hash.as_deref().map(block_hash).transpose()?,
        }),
    };
    let leaves = doc
        .leaves
        .iter()
        .enumerate()
        .map(|(position, text)| {
            parse_leaf(text, hash)
                .map_err(|e| ApiError::bad_request(format!("leaf at position {position}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    Ok((leaves, block))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    fn check_refused<T: std::fmt::Debug>(
        result: Result<T, ApiError>,
        status: StatusCode,
        needle: &str,
    ) {
        let error = result.unwrap_err();
        assert_eq!(error.status, status, "{}", error.message);
        assert!(
            error.message.contains(needle),
            "{:?} lacks {needle:?}",
            error.message
        );
    }

    #[test]
    fn binary_bodies_are_whole_records_within_the_limit() {
        let mut body = vec![7u8; 64];
        assert_eq!(binary(&body, 2).unwrap(), vec![[7u8; 32]; 2]);
        check_refused(
            binary(&body, 1),
            StatusCode::PAYLOAD_TOO_LARGE,
            "limit of 1",
        );
        body.push(0);
        check_refused(binary(&body, 9), StatusCode::BAD_REQUEST, "65 bytes");
        check_refused(
            batch(Encoding::Binary, &[], 9, None, HashKind::Blake3),
            StatusCode::BAD_REQUEST,
            "empty batch",
        );
        let tag = BlockTag::number(5);
        assert_eq!(
            batch(Encoding::Binary, &[], 9, Some(tag), HashKind::Blake3).unwrap(),
            Batch {
                leaves: Vec::new(),
                block: Some(tag)
            }
        );
    }

    #[test]
    fn json_bodies_carry_an_optional_block() {
        let good = format!("0x{}", "ab".repeat(32));
        let hash = format!("0x{}", "cd".repeat(32));
        let body =
            format!(r#"{{"leaves": ["{good}"], "block": {{"number": 7, "hash": "{hash}"}}}}"#);
        let got = batch(Encoding::Json, body.as_bytes(), 9, None, HashKind::Blake3).unwrap();
        assert_eq!(got.leaves, vec![[0xab; 32]]);
        assert_eq!(
            got.block,
            Some(BlockTag {
                number: 7,
                hash: Some([0xcd; 32])
            })
        );
        let alone = batch(
            Encoding::Json,
            br#"{"leaves": [], "block": {"number": 8}}"#,
            9,
            None,
            HashKind::Blake3,
        )
        .unwrap();
        assert_eq!(alone.block, Some(BlockTag::number(8)));
        assert!(alone.leaves.is_empty());
        check_refused(
            batch(
                Encoding::Json,
                body.as_bytes(),
                9,
                Some(BlockTag::number(7)),
                HashKind::Blake3,
            ),
            StatusCode::BAD_REQUEST,
            "given twice",
        );
        check_refused(
            batch(
                Encoding::Json,
                br#"{"leaves": [], "block": {"number": 8, "hash": "0x12"}}"#,
                9,
                None,
                HashKind::Blake3,
            ),
            StatusCode::BAD_REQUEST,
            "block hash",
        );
        check_refused(
            batch(
                Encoding::Json,
                br#"{"leaves": [], "block": {"number": -1}}"#,
                9,
                None,
                HashKind::Blake3,
            ),
            StatusCode::BAD_REQUEST,
            "not {\"leaves\"",
        );
        check_refused(
            batch(
                Encoding::Json,
                br#"{"leaves": [], "block": {"number": 1, "extra": 2}}"#,
                9,
                None,
                HashKind::Blake3,
            ),
            StatusCode::BAD_REQUEST,
            "unknown field",
        );
    }

    #[test]
    fn json_bodies_name_the_bad_leaf() {
        let good = format!("0x{}", "ab".repeat(32));
        let body = format!(
            r#"{{"leaves": ["{good}", "{}"]}}"#,
            good.to_uppercase().replace("0X", "0x")
        );
        assert_eq!(
            json(body.as_bytes(), 2, HashKind::Blake3).unwrap().0,
            vec![[0xab; 32]; 2]
        );
        check_refused(
            json(body.as_bytes(), 1, HashKind::Blake3),
            StatusCode::PAYLOAD_TOO_LARGE,
            "2 leaves",
        );
        let body = format!(r#"{{"leaves": ["{good}", "0x12"]}}"#);
        check_refused(
            json(body.as_bytes(), 9, HashKind::Blake3),
            StatusCode::BAD_REQUEST,
            "position 1",
        );
        check_refused(
            json(body.as_bytes(), 9, HashKind::Blake3),
            StatusCode::BAD_REQUEST,
            "\"0x12\"",
        );
        check_refused(
            batch(
                Encoding::Json,
                br#"{"leaves": []}"#,
                9,
                None,
                HashKind::Blake3,
            ),
            StatusCode::BAD_REQUEST,
            "empty batch",
        );
        check_refused(
            json(br#"{"leaf": []}"#, 9, HashKind::Blake3),
            StatusCode::BAD_REQUEST,
            "unknown field",
        );
        check_refused(
            json(b"[1,2", 9, HashKind::Blake3),
            StatusCode::BAD_REQUEST,
            "not {\"leaves\"",
        );
    }

    #[test]
    fn content_types_pick_the_encoding() {
        let mut headers = HeaderMap::new();
        let status = encoding(&headers).unwrap_err().status;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        for (value, want) in [
            ("application/json", Encoding::Json),
            ("Application/JSON; charset=utf-8", Encoding::Json),
            ("application/octet-stream", Encoding::Binary),
        ] {
            headers.insert(header::CONTENT_TYPE, value.parse().unwrap());
            assert_eq!(encoding(&headers).unwrap(), want, "{value}");
        }
        headers.insert(header::CONTENT_TYPE, "text/plain".parse().unwrap());
        assert!(
            encoding(&headers)
                .unwrap_err()
                .message
                .contains("text/plain")
        );
    }

    #[test]
    fn poseidon_bodies_take_decimal_field_elements_below_p() {
        let p = "21888242871839275222246405745257275088548364400416034343698204186575808495617";
        let mut five = [0u8; 32];
        five[31] = 5;
        let hex = cairn_core::hex::to_hex(&five);
        let body = format!(r#"{{"leaves": ["5", "{hex}"]}}"#);
        assert_eq!(
            json(body.as_bytes(), 9, HashKind::Poseidon).unwrap().0,
            vec![five; 2]
        );
        let body = format!(r#"{{"leaves": ["5", "{p}"]}}"#);
        check_refused(
            json(body.as_bytes(), 9, HashKind::Poseidon),
            StatusCode::BAD_REQUEST,
            "position 1: decimal value",
        );
        check_refused(
            json(br#"{"leaves": ["05"]}"#, 9, HashKind::Poseidon),
            StatusCode::BAD_REQUEST,
            "leading zero",
        );
        check_refused(
            json(br#"{"leaves": ["5"]}"#, 9, HashKind::Sha256),
            StatusCode::BAD_REQUEST,
            "Poseidon and MiMCSponge databases only",
        );
    }
}
