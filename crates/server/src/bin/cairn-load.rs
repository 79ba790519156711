//! `cairn-load`: the server's load generator, bounded
//! in time and in requests, against a loopback address only.
//!
//! - `cairn-load fill --dir D --leaves N [--arity 4 --hash blake3]` creates
//!   a database of N random leaves directly (no HTTP), checkpointed.
//! - `cairn-load run --addr 127.0.0.1:PORT --workload W` runs one
//!   workload with `--connections` keep-alive HTTP/1.1 connections, each
//!   sending its next request when the previous answer is read:
//!   `proofs` (GET /v1/proofs/{random index below the size}), `append`
//!   (POST one leaf per request), `batch` (POST `--batch-leaves` leaves per
//!   binary body), `mixed` (`--append-percent` single-leaf appends, the
//!   rest proofs). Prints throughput, p50/p99/p99.9/max per request kind
//!   and every non-200 status; `--json` adds one JSON line for scripts.
//!
//! Appended leaves are random 253-bit values (valid under Poseidon too), so
//! runs never collide with each other or with `fill`'s leaves.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use axum::body::Bytes;
use cairn_core::{Arity, Hash, HashKind, TreeConfig};
use cairn_db::{Database, DbConfig};
use clap::{Parser, Subcommand, ValueEnum};
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rand::{Rng as _, SeedableRng as _};

/// Load generator for cairn-server.
#[derive(Parser, Debug)]
#[command(name = "cairn-load")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Create a database of random leaves (no HTTP), checkpointed and closed.
    Fill(FillArgs),
    /// Run one workload against a running server.
    Run(RunArgs),
}

#[derive(clap::Args, Debug)]
struct FillArgs {
    /// The directory to create.
    #[arg(long)]
    dir: PathBuf,
    /// Leaves to append.
    #[arg(long)]
    leaves: u64,
    #[arg(long, default_value = "4")]
    arity: Arity,
    #[arg(long, default_value = "blake3")]
    hash: HashKind,
    /// Leaves per append call.
    #[arg(long, default_value_t = 1 << 20)]
    batch: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Workload {
    Proofs,
    Append,
    Batch,
    Mixed,
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// The server (a loopback address only).
    #[arg(long)]
    addr: SocketAddr,
    #[arg(long, value_enum)]
    workload: Workload,
    /// Concurrent connections (one request in flight on each).
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Stop after this many seconds...
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// ...or after this many requests, whichever comes first.
    #[arg(long, default_value_t = 10_000_000)]
    max_requests: u64,
    /// Leaves per request of the batch workload.
    #[arg(long, default_value_t = 10_000)]
    batch_leaves: usize,
    /// Percentage of single-leaf appends in the mixed workload.
    #[arg(long, default_value_t = 10)]
    append_percent: u32,
    /// A file holding the server's write token.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// The load generator's runtime threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Also print the results as one JSON line.
    #[arg(long)]
    json: bool,
}

fn main() -> anyhow::Result<()> {
    match Args::parse().command {
        Command::Fill(args) => fill(&args),
        Command::Run(args) => {
            if !args.addr.ip().is_loopback() {
                bail!(
                    "{} is not a loopback address: cairn-load only targets this machine",
                    args.addr
                );
            }
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(args.threads.max(1))
                .enable_all()
                .build()?;
            runtime.block_on(run(args))
        }
    }
}

/// A random leaf: 253 random bits (below the BN254 modulus, so canonical
/// for Poseidon as well).
fn random_leaf(rng: &mut impl rand::RngCore) -> Hash {
    let mut leaf = [0u8; 32];
    rng.fill_bytes(&mut leaf);
    leaf[0] &= 0x1f;
    leaf
}

fn fill(args: &FillArgs) -> anyhow::Result<()> {
    let tree = TreeConfig::new(args.arity, args.hash);
    let db = Database::create(&args.dir, DbConfig::new(tree))
        .with_context(|| format!("creating {}", args.dir.display()))?;
    let mut rng = rand::rngs::StdRng::from_entropy();
    let start = Instant::now();
    let mut done = 0;
    let mut batch = Vec::new();
    while done < args.leaves {
        let count = args.batch.min(args.leaves - done);
        batch.clear();
        batch.extend((0..count).map(|_| random_leaf(&mut rng)));
        db.append(&batch)?.wait(&db, Duration::from_secs(600))?;
        done += count;
        eprintln!(
            "{done} leaves durable ({:.0} leaves/s)",
            done as f64 / start.elapsed().as_secs_f64()
        );
    }
    db.checkpoint()?;
    let head = db.head();
    db.close()?;
    println!(
        "filled {} with {} leaves (arity {}, {}) in {:.1} s; root {}",
        args.dir.display(),
        head.size,
        args.arity,
        args.hash,
        start.elapsed().as_secs_f64(),
        head.root
            .map_or_else(|| "none".into(), |r| cairn_core::hex::to_hex(&r)),
    );
    Ok(())
}

/// What a worker sends next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Proof,
    Append,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Proof => "proof",
            Kind::Append => "append",
        }
    }
}

/// One worker's observations.
#[derive(Default)]
struct Record {
    /// Latencies in microseconds of 200 answers, per kind.
    latencies: BTreeMap<Kind, Vec<u32>>,
    /// Non-200 answers, per kind and status (0: a transport error).
    failures: BTreeMap<(Kind, u16), u64>,
    leaves: u64,
}

struct Plan {
    addr: SocketAddr,
    workload: Workload,
    size: u64,
    deadline: Instant,
    max_requests: u64,
    batch_leaves: usize,
    append_percent: u32,
    authorization: Option<String>,
    tickets: AtomicU64,
}

async fn run(args: RunArgs) -> anyhow::Result<()> {
    let token = match &args.token_file {
        Some(path) => Some(cairn_server::read_token_file(path)?),
        None => None,
    };
    let mut probe = connect(args.addr).await?;
    let (status, body) = send(&mut probe, get("/v1/root")).await?;
    if status != 200 {
        bail!("GET /v1/root answered {status}");
    }
    let root: serde_json::Value = serde_json::from_slice(&body)?;
    let size = root["size"].as_u64().context("the root has no size")?;
    if size == 0 && matches!(args.workload, Workload::Proofs | Workload::Mixed) {
        bail!("the tree is empty: fill it first (cairn-load fill)");
    }
    let plan = Arc::new(Plan {
        addr: args.addr,
        workload: args.workload,
        size,
        deadline: Instant::now() + Duration::from_secs_f64(args.seconds),
        max_requests: args.max_requests,
        batch_leaves: args.batch_leaves,
        append_percent: args.append_percent,
        authorization: token.map(|t| format!("Bearer {t}")),
        tickets: AtomicU64::new(0),
    });
    let start = Instant::now();
    let workers: Vec<_> = (0..args.connections)
        .map(|_| tokio::spawn(worker(Arc::clone(&plan))))
        .collect();
    let mut total = Record::default();
    for handle in workers {
        let record = handle.await??;
        for (kind, latencies) in record.latencies {
            total.latencies.entry(kind).or_default().extend(latencies);
        }
        for (key, count) in record.failures {
            *total.failures.entry(key).or_default() += count;
        }
        total.leaves += record.leaves;
    }
    let elapsed = start.elapsed().as_secs_f64();
    report(&args, size, elapsed, total);
    Ok(())
}

fn report(args: &RunArgs, size: u64, elapsed: f64, mut total: Record) {
    println!(
        "workload {:?}: {} connections, {elapsed:.2} s, tree of {size} leaves at the start",
        args.workload, args.connections
    );
    let mut json = serde_json::json!({
        "workload": format!("{:?}", args.workload).to_lowercase(),
        "connections": args.connections,
        "seconds": elapsed,
        "initial_size": size,
    });
    for (kind, latencies) in &mut total.latencies {
        latencies.sort_unstable();
        let at = |q: f64| {
            let i = ((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len()) - 1;
            f64::from(latencies[i]) / 1000.0
        };
        let count = latencies.len();
        let rate = count as f64 / elapsed;
        println!(
            "  {:<6} {count:>9} ok  {rate:>10.0} req/s  p50 {:>7.2} ms  p99 {:>7.2} ms  p99.9 {:>7.2} ms  max {:>7.2} ms",
            kind.name(),
            at(0.5),
            at(0.99),
            at(0.999),
            at(1.0),
        );
        json[kind.name()] = serde_json::json!({
            "ok": count, "per_second": rate,
            "p50_ms": at(0.5), "p99_ms": at(0.99), "p999_ms": at(0.999), "max_ms": at(1.0),
        });
    }
    if total.leaves > 0 {
        let rate = total.leaves as f64 / elapsed;
        println!(
            "  leaves acknowledged durable: {} ({rate:.0} leaves/s)",
            total.leaves
        );
        json["leaves"] = total.leaves.into();
        json["leaves_per_second"] = rate.into();
    }
    let errors: u64 = total.failures.values().sum();
    for ((kind, status), count) in &total.failures {
        let what = if *status == 0 {
            "transport error".to_string()
        } else {
            format!("status {status}")
        };
        println!("  {} {what}: {count}", kind.name());
    }
    println!("  errors: {errors}");
    json["errors"] = errors.into();
    if args.json {
        println!("{json}");
    }
}

type Connection = SendRequest<Full<Bytes>>;

async fn connect(addr: SocketAddr) -> anyhow::Result<Connection> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connecting to {addr}"))?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

fn get(path: &str) -> Request<Full<Bytes>> {
    Request::get(path)
        .header("host", "127.0.0.1")
        .body(Full::new(Bytes::new()))
        .expect("a valid request")
}

async fn send(
    connection: &mut Connection,
    request: Request<Full<Bytes>>,
) -> anyhow::Result<(u16, Bytes)> {
    connection.ready().await?;
    let response = connection.send_request(request).await?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, body))
}

async fn worker(plan: Arc<Plan>) -> anyhow::Result<Record> {
    let mut rng = rand::rngs::StdRng::from_entropy();
    let mut record = Record::default();
    let mut connection = None;
    while Instant::now() < plan.deadline
        && plan.tickets.fetch_add(1, Ordering::Relaxed) < plan.max_requests
    {
        let kind = match plan.workload {
            Workload::Proofs => Kind::Proof,
            Workload::Append | Workload::Batch => Kind::Append,
            Workload::Mixed if rng.gen_range(0..100) < plan.append_percent => Kind::Append,
            Workload::Mixed => Kind::Proof,
        };
        let leaves = match (kind, plan.workload) {
            (Kind::Proof, _) => 0,
            (Kind::Append, Workload::Batch) => plan.batch_leaves,
            (Kind::Append, _) => 1,
        };
        let request = match kind {
            Kind::Proof => get(&format!("/v1/proofs/{}", rng.gen_range(0..plan.size))),
            Kind::Append => {
                let mut body = Vec::with_capacity(leaves * 32);
                for _ in 0..leaves {
                    body.extend_from_slice(&random_leaf(&mut rng));
                }
                let mut builder = Request::post("/v1/leaves")
                    .header("host", "127.0.0.1")
                    .header("content-type", "application/octet-stream");
                if let Some(authorization) = &plan.authorization {
                    builder = builder.header("authorization", authorization);
                }
                builder.body(Full::new(Bytes::from(body)))?
            }
        };
        if connection.is_none() {
            connection = Some(connect(plan.addr).await?);
        }
        let Some(open) = connection.as_mut() else {
            unreachable!("connected above")
        };
        let start = Instant::now();
        match send(open, request).await {
            Ok((200, _)) => {
                let micros = u32::try_from(start.elapsed().as_micros()).unwrap_or(u32::MAX);
                record.latencies.entry(kind).or_default().push(micros);
                record.leaves += leaves as u64;
            }
            Ok((status, _)) => *record.failures.entry((kind, status)).or_default() += 1,
            Err(_) => {
                *record.failures.entry((kind, 0)).or_default() += 1;
                connection = None;
            }
        }
    }
    Ok(record)
}
