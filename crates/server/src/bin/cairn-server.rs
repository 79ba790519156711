//! `cairn-server DIR --listen ADDR [--token-file F]`: serves the database in
//! DIR until SIGTERM or SIGINT (what `cairn serve` will run). With
//! `--create-arity N --create-hash H` it first creates the database if DIR
//! holds none (for tests and trials). Prints `listening on ADDR` on stdout
//! once it accepts requests (so `--listen 127.0.0.1:0` is usable); logs go
//! to stderr (`CAIRN_LOG`, `CAIRN_LOG_FORMAT=json`).

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use cairn_core::{Arity, HashKind, TreeConfig};
use cairn_db::{Db, DbConfig};
use cairn_server::{ServerConfig, init_logging, read_token_file, run_db};
use clap::Parser;

/// Serve a cairn database over HTTP.
#[derive(Parser, Debug)]
#[command(name = "cairn-server", version)]
struct Args {
    /// The database directory.
    dir: PathBuf,
    /// The address to listen on (port 0 picks a free one).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    listen: SocketAddr,
    /// A file holding the write token: POST requests then need `Authorization: Bearer <token>`.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Create the database with this arity if DIR holds none.
    #[arg(long, value_name = "N", requires = "create_hash")]
    create_arity: Option<Arity>,
    /// Create the database with this hash if DIR holds none.
    #[arg(long, value_name = "HASH", requires = "create_arity")]
    create_hash: Option<HashKind>,
    /// Refuse request bodies above this many bytes (413).
    #[arg(long, value_name = "BYTES")]
    max_body_bytes: Option<usize>,
    /// Refuse batches above this many leaves (413).
    #[arg(long, value_name = "LEAVES")]
    max_batch_leaves: Option<usize>,
    /// Seconds an append waits to become durable before answering 503.
    #[arg(long, value_name = "SECONDS")]
    durability_timeout: Option<u64>,
    /// Do not checkpoint on graceful shutdown.
    #[arg(long)]
    no_checkpoint_on_shutdown: bool,
}

fn open(args: &Args) -> anyhow::Result<Db> {
    let holds_db = args.dir.join("cairn.meta").exists();
    match (args.create_arity, args.create_hash) {
        (Some(arity), Some(hash)) if !holds_db => {
            let tree = TreeConfig::new(arity, hash);
            Db::create(&args.dir, DbConfig::new(tree))
                .with_context(|| format!("cannot create a database in {}", args.dir.display()))
        }
        _ => Db::open(&args.dir)
            .with_context(|| format!("cannot open the database in {}", args.dir.display())),
    }
}

fn config(args: &Args) -> anyhow::Result<ServerConfig> {
    let mut config = ServerConfig::new(args.listen);
    if let Some(path) = &args.token_file {
        config.token = Some(read_token_file(path)?);
    }
    if let Some(bytes) = args.max_body_bytes {
        config.max_body_bytes = bytes;
    }
    if let Some(leaves) = args.max_batch_leaves {
        config.max_batch_leaves = leaves;
    }
    if let Some(seconds) = args.durability_timeout {
        config.durability_timeout = Duration::from_secs(seconds);
    }
    config.checkpoint_on_shutdown = !args.no_checkpoint_on_shutdown;
    Ok(config)
}

fn main() -> ExitCode {
    let args = Args::parse();
    init_logging();
    let result = config(&args).and_then(|config| {
        let db = open(&args)?;
        run_db(db, config, announce).with_context(|| describe(&args.dir))
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn describe(dir: &Path) -> String {
    format!("serving {}", dir.display())
}

fn announce(addr: SocketAddr) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "listening on {addr}");
    let _ = stdout.flush();
}
