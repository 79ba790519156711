//! A small Ethereum JSON-RPC client over HTTP(S): the five methods a
//! follower calls, each answer checked field by field. Transport failures
//! and the node's "busy" statuses (429, 5xx) are retried with exponential
//! backoff for a bounded time; an error object from the node is returned
//! to the caller, which knows whether a smaller request helps. An optional
//! minimum interval between requests keeps to a provider's rate limit.
#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::abi::Word;

/// An Ethereum address.
pub type Address = [u8; 20];

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RpcError {
    /// The node could not be reached, or kept answering busy, for as long
    /// as retries were allowed.
    #[error("{method} to {url}: {message} (gave up after {attempts} attempts over {seconds:.1} s)")]
    Unreachable {
        /// The method called.
        method: &'static str,
        /// The endpoint.
        url: String,
        /// The last failure.
        message: String,
        /// Attempts made.
        attempts: u32,
        /// Seconds spent retrying.
        seconds: f64,
    },
    /// The node answered with an HTTP status that retrying does not fix.
    #[error("{method}: HTTP status {status}: {body}")]
    Status {
        /// The method called.
        method: &'static str,
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The node answered with a JSON-RPC error object.
    #[error("{method}: node error {code}: {message}")]
    Node {
        /// The method called.
        method: &'static str,
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
    },
    /// The answer is not what the method returns.
    #[error("{method}: malformed answer: {reason}")]
    Malformed {
        /// The method called.
        method: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// A block header, as far as a follower needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Its number.
    pub number: u64,
    /// Its hash.
    pub hash: Word,
    /// Its parent's hash.
    pub parent_hash: Word,
    /// Its timestamp, in seconds.
    pub timestamp: u64,
}

/// One log of a contract.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Log {
    /// The block it is in.
    pub block_number: u64,
    /// That block's hash.
    pub block_hash: Word,
    /// Its index in the block.
    pub log_index: u64,
    /// Its topics.
    pub topics: Vec<Word>,
    /// Its data.
    pub data: Vec<u8>,
}

/// A block by number or by tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockId {
    /// A block number.
    Number(u64),
    /// `latest`, `safe` or `finalized`.
    Tag(&'static str),
}

impl BlockId {
    fn param(self) -> Value {
        match self {
            BlockId::Number(number) => json!(format!("{number:#x}")),
            BlockId::Tag(tag) => json!(tag),
        }
    }
}

/// How the client talks to the node.
#[derive(Clone, Debug)]
pub struct RpcOptions {
    /// How long one request may take.
    pub timeout: Duration,
    /// How long a request is retried while the node is unreachable or busy.
    pub retry_for: Duration,
    /// The shortest time between two requests (a rate limit); zero: none.
    pub min_interval: Duration,
}

impl Default for RpcOptions {
    fn default() -> RpcOptions {
        RpcOptions {
            timeout: Duration::from_secs(30),
            retry_for: Duration::from_secs(300),
            min_interval: Duration::ZERO,
        }
    }
}

/// What the client has done: requests, retries, time waiting on the node.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RpcStats {
    /// Requests answered.
    pub requests: u64,
    /// Attempts that failed and were retried.
    pub retries: u64,
    /// Seconds spent in requests (waiting on the node), retries included.
    pub seconds: f64,
}

/// A JSON-RPC client for one endpoint.
#[derive(Debug)]
pub struct Rpc {
    client: reqwest::blocking::Client,
    url: String,
    options: RpcOptions,
    next_id: u64,
    last_request: Option<Instant>,
    stats: RpcStats,
}

impl Rpc {
    /// A client for `url` (http or https).
    pub fn new(url: &str, options: RpcOptions) -> Result<Rpc, RpcError> {
        let client = reqwest::blocking::Client::builder()
            .timeout(options.timeout)
            .build()
            .map_err(|error| RpcError::Unreachable {
                method: "connect",
                url: url.to_owned(),
                message: error.to_string(),
                attempts: 0,
                seconds: 0.0,
            })?;
        Ok(Rpc {
            client,
            url: url.to_owned(),
            options,
            next_id: 1,
            last_request: None,
            stats: RpcStats::default(),
        })
    }

    /// What the client has done so far.
    pub fn stats(&self) -> RpcStats {
        self.stats
    }

    /// `eth_chainId`.
    pub fn chain_id(&mut self) -> Result<u64, RpcError> {
        let method = "eth_chainId";
        let answer = self.request(method, json!([]))?;
        quantity(method, &answer)
    }

    /// `eth_blockNumber`.
    pub fn block_number(&mut self) -> Result<u64, RpcError> {
        let method = "eth_blockNumber";
        let answer = self.request(method, json!([]))?;
        quantity(method, &answer)
    }

    /// `eth_getBlockByNumber` without transactions; `None` when the node
    /// has no such block (beyond its head, or a tag it does not know yet).
    pub fn header(&mut self, block: BlockId) -> Result<Option<Header>, RpcError> {
        let method = "eth_getBlockByNumber";
        let answer = self.request(method, json!([block.param(), false]))?;
        if answer.is_null() {
            return Ok(None);
        }
        let header = Header {
            number: quantity(method, field(method, &answer, "number")?)?,
            hash: word(method, field(method, &answer, "hash")?)?,
            parent_hash: word(method, field(method, &answer, "parentHash")?)?,
            timestamp: quantity(method, field(method, &answer, "timestamp")?)?,
        };
        if let BlockId::Number(number) = block
            && header.number != number
        {
            return Err(RpcError::Malformed {
                method,
                reason: format!("asked for block {number}, got block {}", header.number),
            });
        }
        Ok(Some(header))
    }

    /// `eth_getLogs` of `address` whose topic `i` is one of `topics[i]`
    /// (an empty list: any), blocks `from..=to`, in the node's order
    /// (block, then log index).
    pub fn logs(
        &mut self,
        address: &Address,
        topics: &[Vec<Word>],
        from: u64,
        to: u64,
    ) -> Result<Vec<Log>, RpcError> {
        let filter = json!({
            "address": hex_bytes(address),
            "topics": topic_filter(topics),
            "fromBlock": format!("{from:#x}"),
            "toBlock": format!("{to:#x}"),
        });
        let logs = self.get_logs(filter)?;
        if let Some(log) = logs
            .iter()
            .find(|log| log.block_number < from || log.block_number > to)
        {
            return Err(RpcError::Malformed {
                method: "eth_getLogs",
                reason: format!(
                    "a log of block {} in an answer for blocks {from} to {to}",
                    log.block_number
                ),
            });
        }
        Ok(logs)
    }

    /// `eth_getLogs` of one block by its hash (EIP-234): the logs of
    /// exactly that block, whatever the chain's head is now.
    pub fn logs_at(
        &mut self,
        address: &Address,
        topics: &[Vec<Word>],
        block: &Header,
    ) -> Result<Vec<Log>, RpcError> {
        let filter = json!({
            "address": hex_bytes(address),
            "topics": topic_filter(topics),
            "blockHash": hex_bytes(&block.hash),
        });
        let logs = self.get_logs(filter)?;
        if let Some(log) = logs
            .iter()
            .find(|log| log.block_hash != block.hash || log.block_number != block.number)
        {
            return Err(RpcError::Malformed {
                method: "eth_getLogs",
                reason: format!(
                    "a log of block {} in an answer for block {}",
                    log.block_number, block.number
                ),
            });
        }
        Ok(logs)
    }

    fn get_logs(&mut self, filter: Value) -> Result<Vec<Log>, RpcError> {
        let method = "eth_getLogs";
        let answer = self.request(method, json!([filter]))?;
        let Some(items) = answer.as_array() else {
            return Err(malformed(method, "not an array"));
        };
        let mut logs = Vec::with_capacity(items.len());
        for item in items {
            if item.get("removed").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let Some(topics) = field(method, item, "topics")?.as_array() else {
                return Err(malformed(method, "topics is not an array"));
            };
            logs.push(Log {
                block_number: quantity(method, field(method, item, "blockNumber")?)?,
                block_hash: word(method, field(method, item, "blockHash")?)?,
                log_index: quantity(method, field(method, item, "logIndex")?)?,
                topics: topics
                    .iter()
                    .map(|topic| word(method, topic))
                    .collect::<Result<_, _>>()?,
                data: bytes(method, field(method, item, "data")?)?,
            });
        }
        Ok(logs)
    }

    /// `eth_call` of `to` with `data` at block `block`; the returned bytes.
    pub fn call(&mut self, to: &Address, data: &[u8], block: u64) -> Result<Vec<u8>, RpcError> {
        let method = "eth_call";
        let answer = self.request(
            method,
            json!([{"to": hex_bytes(to), "data": hex_bytes(data)}, format!("{block:#x}")]),
        )?;
        bytes(method, &answer)
    }

    /// One request, retried while the node is unreachable or busy.
    fn request(&mut self, method: &'static str, params: Value) -> Result<Value, RpcError> {
        let started = Instant::now();
        let mut attempts = 0u32;
        let mut backoff = Duration::from_millis(50);
        let result = loop {
            if let Some(last) = self.last_request {
                let wait = self.options.min_interval.saturating_sub(last.elapsed());
                std::thread::sleep(wait);
            }
            self.last_request = Some(Instant::now());
            attempts += 1;
            let id = self.next_id;
            self.next_id += 1;
            let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            let failure = match self.client.post(&self.url).json_body(&body).send() {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let text = response.text();
                    match (status, text) {
                        (200, Ok(text)) => break answer(method, id, &text),
                        (429 | 500..=599, _) => format!("HTTP status {status}"),
                        (_, Ok(text)) => {
                            break Err(RpcError::Status {
                                method,
                                status,
                                body: text.chars().take(200).collect(),
                            });
                        }
                        (_, Err(error)) => error.to_string(),
                    }
                }
                Err(error) => error.to_string(),
            };
            if started.elapsed() + backoff > self.options.retry_for {
                break Err(RpcError::Unreachable {
                    method,
                    url: self.url.clone(),
                    message: failure,
                    attempts,
                    seconds: started.elapsed().as_secs_f64(),
                });
            }
            self.stats.retries += 1;
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(5));
        };
        self.stats.requests += 1;
        self.stats.seconds += started.elapsed().as_secs_f64();
        result
    }
}

/// A JSON body on a blocking request (reqwest's `json` would pull in its
/// serde feature for one call).
trait JsonBody {
    fn json_body(self, body: &Value) -> Self;
}

impl JsonBody for reqwest::blocking::RequestBuilder {
    fn json_body(self, body: &Value) -> Self {
        self.header("content-type", "application/json")
            .body(body.to_string())
    }
}

/// The result of a JSON-RPC answer, or its error object.
fn answer(method: &'static str, id: u64, text: &str) -> Result<Value, RpcError> {
    let mut value: Value = serde_json::from_str(text)
        .map_err(|error| malformed(method, &format!("not JSON: {error}")))?;
    if value.get("id").and_then(Value::as_u64) != Some(id) {
        return Err(malformed(method, &format!("id is not {id}")));
    }
    if let Some(error) = value.get("error") {
        return Err(RpcError::Node {
            method,
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
                .to_owned(),
        });
    }
    match value.get_mut("result") {
        Some(result) => Ok(result.take()),
        None => Err(malformed(method, "neither result nor error")),
    }
}

fn malformed(method: &'static str, reason: &str) -> RpcError {
    RpcError::Malformed {
        method,
        reason: reason.to_owned(),
    }
}

fn field<'a>(method: &'static str, value: &'a Value, name: &str) -> Result<&'a Value, RpcError> {
    value
        .get(name)
        .ok_or_else(|| malformed(method, &format!("no {name}")))
}

fn hex_str<'a>(method: &'static str, value: &'a Value) -> Result<&'a str, RpcError> {
    value
        .as_str()
        .and_then(|text| text.strip_prefix("0x"))
        .ok_or_else(|| malformed(method, &format!("{value} is not a 0x-hex string")))
}

/// A hex quantity (`0x1a`) as a number.
fn quantity(method: &'static str, value: &Value) -> Result<u64, RpcError> {
    let digits = hex_str(method, value)?;
    u64::from_str_radix(digits, 16)
        .map_err(|_| malformed(method, &format!("{value} is not a 64-bit quantity")))
}

/// Hex data as bytes.
fn bytes(method: &'static str, value: &Value) -> Result<Vec<u8>, RpcError> {
    hex::decode(hex_str(method, value)?)
        .map_err(|_| malformed(method, &format!("{value} is not hex data")))
}

/// Hex data of exactly 32 bytes.
fn word(method: &'static str, value: &Value) -> Result<Word, RpcError> {
    let data = bytes(method, value)?;
    data.as_slice()
        .try_into()
        .map_err(|_| malformed(method, &format!("{value} is {} bytes, want 32", data.len())))
}

/// Topics as a filter: per position, null (any) or the words allowed.
fn topic_filter(topics: &[Vec<Word>]) -> Value {
    Value::Array(
        topics
            .iter()
            .map(|words| {
                if words.is_empty() {
                    Value::Null
                } else {
                    Value::Array(words.iter().map(|w| json!(hex_bytes(w))).collect())
                }
            })
            .collect(),
    )
}

fn hex_bytes(bytes: &[u8]) -> String {
    format!("0x{}", hex::encode(bytes))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked_for_their_id_and_error() {
        assert_eq!(
            answer("m", 3, r#"{"jsonrpc":"2.0","id":3,"result":"0x10"}"#).unwrap(),
            json!("0x10")
        );
        assert!(matches!(
            answer("m", 3, r#"{"jsonrpc":"2.0","id":4,"result":"0x10"}"#),
            Err(RpcError::Malformed { .. })
        ));
        assert!(matches!(
            answer(
                "m",
                3,
                r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32005,"message":"query returned more than 10000 results"}}"#
            ),
            Err(RpcError::Node { code: -32005, .. })
        ));
        assert!(matches!(
            answer("m", 3, "<html>"),
            Err(RpcError::Malformed { .. })
        ));
    }

    #[test]
    fn quantities_and_words_are_strict() {
        assert_eq!(quantity("m", &json!("0x1a")).unwrap(), 26);
        assert!(quantity("m", &json!("1a")).is_err());
        assert!(quantity("m", &json!("0x1ffffffffffffffff")).is_err());
        assert!(word("m", &json!(format!("0x{}", "ab".repeat(32)))).is_ok());
        assert!(word("m", &json!(format!("0x{}", "ab".repeat(31)))).is_err());
    }
}
