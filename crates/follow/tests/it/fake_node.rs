//! A scripted Ethereum JSON-RPC node in the test process: a chain of
//! blocks (each a contract's `Leaf(uint256 indexed group, bytes32 value)`
//! logs) that a test replaces at will (a reorganisation, a node restarted
//! with another chain), answering the methods a follower calls over HTTP
//! on 127.0.0.1, with busy answers (429), server errors (503), dropped
//! connections and a limit on `eth_getLogs` ranges injected on a schedule.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};

use cairn_core::{Arity, HashKind, LeanImt, TreeConfig};
use serde_json::{Value, json};

pub type Word = [u8; 32];

/// The contract every log comes from.
pub const CONTRACT: &str = "0x00000000000000000000000000000000000c0ffe";
/// A second contract: it emits the logs of group 2 only, and its `root()`
/// answers group 2's tree.
pub const CONTRACT2: &str = "0x00000000000000000000000000000000000c0fff";
/// Its event, as declared (both contracts').
pub const EVENT: &str = "Leaf(uint256 indexed group, bytes32 value)";

/// The tree the contract keeps (one per group): what its `root()` answers.
pub fn tree_config() -> TreeConfig {
    TreeConfig::new(Arity::new(2).expect("arity 2"), HashKind::Blake3)
}

/// One block: its number, hash, parent hash and logs (group, value).
#[derive(Clone, Debug)]
pub struct Block {
    pub number: u64,
    pub hash: Word,
    pub parent: Word,
    pub logs: Vec<(u64, Word)>,
}

/// Faults injected, each every N-th request (0: never).
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    /// Answer 429 Too Many Requests.
    pub busy_every: u64,
    /// Answer 503 Service Unavailable.
    pub error_every: u64,
    /// Close the connection without answering.
    pub drop_every: u64,
    /// Refuse `eth_getLogs` over more blocks than this (0: any range),
    /// with a JSON-RPC error as providers do.
    pub max_range: u64,
}

/// The node's state, shared with the test.
#[derive(Debug, Default)]
pub struct Chain {
    pub blocks: Vec<Block>,
    /// What the `finalized` tag answers (`None`: no such block yet).
    pub finalized: Option<u64>,
    /// What the `safe` tag answers.
    pub safe: Option<u64>,
    /// The group whose tree `root()` answers.
    pub root_group: u64,
    /// Added to every root answered (a contract whose tree differs).
    pub root_skew: u8,
    pub faults: Faults,
    /// Requests received.
    pub requests: u64,
    /// Faults injected.
    pub faulted: u64,
    /// `eth_getLogs` ranges refused.
    pub ranges_refused: u64,
    /// Values made so far (every value is distinct).
    pub made: u64,
}

/// A block hash: the branch (fork) and the number, distinct for each.
fn block_hash(fork: u64, number: u64) -> Word {
    let mut hash = [0u8; 32];
    hash[0] = 0xb1;
    hash[8..16].copy_from_slice(&fork.to_be_bytes());
    hash[24..].copy_from_slice(&number.to_be_bytes());
    hash
}

impl Chain {
    /// Replaces every block from `from` on with `count` blocks of branch
    /// `fork` (`from` 0: a new chain from genesis); each block has 0 to 3
    /// logs of groups 1 and 2, chosen by `seed`.
    pub fn branch(&mut self, from: u64, fork: u64, count: u64, seed: u64) {
        self.blocks.truncate(from as usize);
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for number in from..from + count {
            let parent = self.blocks.last().map_or([0; 32], |b| b.hash);
            let mut logs = Vec::new();
            for _ in 0..next() % 4 {
                self.made += 1;
                let mut value = [0u8; 32];
                value[..8].copy_from_slice(&next().to_be_bytes());
                value[24..].copy_from_slice(&self.made.to_be_bytes());
                logs.push((1 + next() % 2, value));
            }
            self.blocks.push(Block {
                number,
                hash: block_hash(fork, number),
                parent,
                logs,
            });
        }
    }

    /// The values of `group` in blocks `..=block`, in log order.
    pub fn values(&self, group: u64, block: u64) -> Vec<Word> {
        self.blocks
            .iter()
            .take_while(|b| b.number <= block)
            .flat_map(|b| b.logs.iter().filter(|(g, _)| *g == group).map(|(_, v)| *v))
            .collect()
    }

    pub fn head(&self) -> u64 {
        self.blocks.last().map_or(0, |b| b.number)
    }

    pub fn hash(&self, number: u64) -> Word {
        self.blocks[number as usize].hash
    }

    fn header(&self, number: u64) -> Value {
        match self.blocks.get(number as usize) {
            Some(block) => json!({
                "number": format!("{:#x}", block.number),
                "hash": hex(&block.hash),
                "parentHash": hex(&block.parent),
                "timestamp": format!("{:#x}", 1_700_000_000 + block.number * 12),
            }),
            None => Value::Null,
        }
    }

    fn logs(&self, filter: &Value) -> Result<Value, (i64, String)> {
        let address = filter["address"].as_str().unwrap_or_default();
        let only = match address {
            CONTRACT => None,
            CONTRACT2 => Some(2),
            _ => return Ok(json!([])),
        };
        let blocks: Vec<&Block> = if let Some(hash) = filter["blockHash"].as_str() {
            match self.blocks.iter().find(|b| hex(&b.hash) == hash) {
                Some(block) => vec![block],
                None => return Err((-32000, format!("unknown block {hash}"))),
            }
        } else {
            let from = number(&filter["fromBlock"]);
            let to = number(&filter["toBlock"]).min(self.head());
            if self.faults.max_range > 0 && to.saturating_sub(from) + 1 > self.faults.max_range {
                return Err((
                    -32005,
                    format!("query exceeds {} blocks", self.faults.max_range),
                ));
            }
            self.blocks
                .iter()
                .filter(|b| b.number >= from && b.number <= to)
                .collect()
        };
        let topic0 = hex(&cairn_follow::EventField::parse(EVENT, "value")
            .expect("the event parses")
            .topic());
        let wanted = filter["topics"].as_array().cloned().unwrap_or_default();
        let mut out = Vec::new();
        for block in blocks {
            for (index, (group, value)) in block.logs.iter().enumerate() {
                if only.is_some_and(|g| g != *group) {
                    continue;
                }
                let topics = [topic0.clone(), hex(&word(*group))];
                let pass = wanted.iter().enumerate().all(|(i, allowed)| match allowed {
                    Value::Null => true,
                    Value::String(one) => topics.get(i) == Some(one),
                    Value::Array(any) => topics
                        .get(i)
                        .is_some_and(|t| any.iter().any(|a| a.as_str() == Some(t))),
                    _ => false,
                });
                if pass {
                    out.push(json!({
                        "address": address,
                        "blockNumber": format!("{:#x}", block.number),
                        "blockHash": hex(&block.hash),
                        "logIndex": format!("{index:#x}"),
                        "topics": topics,
                        "data": hex(value),
                        "removed": false,
                    }));
                }
            }
        }
        Ok(Value::Array(out))
    }

    /// `root()` at `block`: the root of `group`'s tree then (zero when
    /// empty).
    fn root(&self, group: u64, block: u64) -> Value {
        let values = self.values(group, block);
        let mut root = if values.is_empty() {
            [0; 32]
        } else {
            LeanImt::from_leaves(tree_config(), &values)
                .expect("a tree")
                .head()
                .root
                .unwrap_or([0; 32])
        };
        root[31] = root[31].wrapping_add(self.root_skew);
        json!(hex(&root))
    }

    fn answer(&mut self, method: &str, params: &Value) -> Result<Value, (i64, String)> {
        match method {
            "eth_blockNumber" => Ok(json!(format!("{:#x}", self.head()))),
            "eth_getBlockByNumber" => {
                let number = match params[0].as_str() {
                    Some("latest") => Some(self.head()),
                    Some("finalized") => self.finalized,
                    Some("safe") => self.safe,
                    _ => Some(number(&params[0])),
                };
                Ok(number.map_or(Value::Null, |n| self.header(n)))
            }
            "eth_getLogs" => {
                let answer = self.logs(&params[0]);
                if matches!(answer, Err((-32005, _))) {
                    self.ranges_refused += 1;
                }
                answer
            }
            "eth_call" => {
                let block = number(&params[1]);
                if block > self.head() {
                    return Err((-32000, format!("header not found: {block}")));
                }
                let group = if params[0]["to"].as_str() == Some(CONTRACT2) {
                    2
                } else {
                    self.root_group
                };
                Ok(self.root(group, block))
            }
            other => Err((-32601, format!("the method {other} does not exist"))),
        }
    }
}

fn number(value: &Value) -> u64 {
    let text = value.as_str().expect("a quantity");
    u64::from_str_radix(text.trim_start_matches("0x"), 16).expect("a hex quantity")
}

pub fn word(n: u64) -> Word {
    let mut w = [0u8; 32];
    w[24..].copy_from_slice(&n.to_be_bytes());
    w
}

pub fn hex(bytes: &[u8]) -> String {
    format!("0x{}", ::hex::encode(bytes))
}

/// The node: its URL and its chain.
pub struct FakeNode {
    pub url: String,
    chain: Arc<Mutex<Chain>>,
}

impl FakeNode {
    /// Starts answering on a free port of 127.0.0.1 (until the process
    /// ends).
    pub fn start(chain: Chain) -> FakeNode {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        let chain = Arc::new(Mutex::new(chain));
        let shared = Arc::clone(&chain);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                serve(stream, &shared);
            }
        });
        FakeNode { url, chain }
    }

    /// The chain, to read or rewrite.
    pub fn chain(&self) -> MutexGuard<'_, Chain> {
        self.chain.lock().expect("the chain's lock")
    }

    /// A handle on the chain for a closure.
    pub fn shared(&self) -> Arc<Mutex<Chain>> {
        Arc::clone(&self.chain)
    }
}

/// One request on one connection, then the connection is closed.
fn serve(stream: TcpStream, chain: &Mutex<Chain>) {
    let mut reader = BufReader::new(&stream);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let request: Value = serde_json::from_slice(&body).expect("a JSON request");
    let (status, text) = {
        let mut chain = chain.lock().expect("the chain's lock");
        chain.requests += 1;
        let n = chain.requests;
        let every = |k: u64| k > 0 && n.is_multiple_of(k);
        let faults = chain.faults;
        if every(faults.drop_every) {
            chain.faulted += 1;
            return;
        }
        if every(faults.busy_every) {
            chain.faulted += 1;
            (429, "slow down".to_owned())
        } else if every(faults.error_every) {
            chain.faulted += 1;
            (503, "upstream unavailable".to_owned())
        } else {
            let id = request["id"].clone();
            let method = request["method"].as_str().unwrap_or_default().to_owned();
            let answer = match chain.answer(&method, &request["params"]) {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err((code, message)) => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
                }
            };
            (200, answer.to_string())
        }
    };
    let reason = match status {
        200 => "OK",
        429 => "Too Many Requests",
        _ => "Service Unavailable",
    };
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = (&stream).write_all(response.as_bytes());
}
