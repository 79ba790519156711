//! `cairn-server DIR --listen ADDR [--token-file F]`: serves the database in
//! DIR until SIGTERM or SIGINT (the same server as `cairn serve`). With
//! `--create-arity N --create-hash H` it first creates the database if DIR
//! holds none (for tests and trials). Prints `listening on ADDR` on stdout
//! once it accepts requests (so `--listen 127.0.0.1:0` is usable); logs go
//! to stderr (`CAIRN_LOG`, `CAIRN_LOG_FORMAT=json`).

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use cairn_core::{Arity, HashKind, TreeConfig};
use cairn_db::{Database, DbConfig};
use cairn_server::{ServeOptions, init_logging_as, run_db};
use clap::Parser;

/// Serve a cairn database over HTTP.
#[derive(Parser, Debug)]
#[command(name = "cairn-server", version)]
struct Args {
    /// The database directory.
    dir: PathBuf,
    /// Listening, token and limits.
    #[command(flatten)]
    options: ServeOptions,
    /// Create the database with this arity if DIR holds none.
    #[arg(long, value_name = "N", requires = "create_hash")]
    create_arity: Option<Arity>,
    /// Create the database with this hash if DIR holds none.
    #[arg(long, value_name = "HASH", requires = "create_arity")]
    create_hash: Option<HashKind>,
}

fn open(args: &Args) -> anyhow::Result<Database> {
    let holds_db = cairn_db::is_database(&args.dir);
    match (args.create_arity, args.create_hash) {
        (Some(arity), Some(hash)) if !holds_db => {
            let tree = TreeConfig::new(arity, hash);
            Database::create(&args.dir, DbConfig::new(tree))
                .with_context(|| format!("cannot create a database in {}", args.dir.display()))
        }
        _ => Database::open(&args.dir)
            .with_context(|| format!("cannot open the database in {}", args.dir.display())),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    init_logging_as(args.options.log_format);
    let result = args
        .options
        .config_for(&args.dir)
        .map_err(anyhow::Error::from)
        .and_then(|config| {
            if cairn_db::is_forest(&args.dir) {
                // A database of several trees: every tree served.
                let served = if config.read_only {
                    cairn_server::run_read_only_forest(&args.dir, config, announce)
                } else {
                    let forest = cairn_db::Forest::open(&args.dir).with_context(|| {
                        format!("cannot open the database in {}", args.dir.display())
                    })?;
                    cairn_server::run_forest(forest, config, announce)
                };
                return served.with_context(|| describe(&args.dir));
            }
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
