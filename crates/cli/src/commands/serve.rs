//! `cairn serve`: the HTTP server over a database (`crates/server`).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use cairn_core::{Arity, HashKind, TreeConfig};
use cairn_db::{Db, DbConfig};
use cairn_server::{ServeOptions, ServerError, init_logging, run_db};

use crate::args::{parse_arity, parse_hash_kind};
use crate::database::{self, Options};
use crate::failure::{Code, Failure};

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Serve the cairn database DIR over HTTP until SIGTERM or SIGINT.

Routes: POST /v1/leaves (JSON {\"leaves\":[\"0x..\"]} or application/octet-stream raw 32-byte \
records; answers once the batch is durable; 409 lists duplicates), GET /v1/root, \
GET /v1/leaves/{0xhex}, GET /v1/proofs/{index}?size=S[&format=zkkit|circom|zkkit-circom], \
GET /v1/consistency?from=S1&to=S2, GET /healthz, GET /metrics (Prometheus), GET /openapi.json \
(the API document). Reads answer at the durable size, so nothing served can be lost by a crash. \
A Poseidon database also takes leaves as decimal field elements (\"123\").

Browsers: --cors-origin '*' lets pages on every origin read; --cors-origin ORIGIN (repeatable, \
such as https://app.example.org) lets that origin read and write. Proof answers carry an ETag \
(If-None-Match answers 304), and Cache-Control: immutable when asked at an explicit size at or \
below the finalized size, which no rollback can change.

With --token-file, writes need `Authorization: Bearer <token>` (the file's first line); reads \
never do. On shutdown the server stops accepting, finishes in-flight requests, flushes, \
checkpoints (unless --no-checkpoint-on-shutdown) and releases the directory. Prints \
`listening on ADDR` on stdout once it accepts requests (--listen 127.0.0.1:0 picks a free \
port); logs go to stderr (CAIRN_LOG=debug for every request, CAIRN_LOG_FORMAT=json).

With --create --arity N --hash H, a DIR holding no database is created first (as `cairn init \
DIR --arity N --hash H` would); a DIR already holding one is opened if its arity and hash are \
N and H, refused otherwise (exit 2).

Examples:
  cairn serve db
  cairn serve db --create --arity 4 --hash blake3 --listen 127.0.0.1:0
  cairn serve db --listen 0.0.0.0:7878 --token-file /etc/cairn/token
  cairn serve db --cors-origin https://app.example.org --token-file /etc/cairn/token
  curl -s localhost:7878/v1/root";

/// Serve a database over HTTP.
#[derive(clap::Args, Debug)]
pub struct ServeCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Create the database first if DIR holds none (needs --arity and --hash).
    #[arg(long, requires_all = ["arity", "hash"])]
    create: bool,
    /// With --create: children per internal node, 2 to 16.
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_arity, requires = "create")]
    arity: Option<Arity>,
    /// With --create: node hash (blake3, sha256, keccak256, poseidon or mimcsponge).
    #[arg(long, value_name = "HASH", value_parser = parse_hash_kind, requires = "create")]
    hash: Option<HashKind>,
    /// Listening, token and limits.
    #[command(flatten)]
    options: ServeOptions,
}

impl ServeCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let config = self.options.config().map_err(server_failure)?;
        if let (true, Some(arity), Some(hash)) = (self.create, self.arity, self.hash) {
            create_or_check(&self.dir, arity, hash)?;
        }
        let ready = |addr: std::net::SocketAddr| {
            let mut stdout = std::io::stdout();
            let _ = writeln!(stdout, "listening on {addr}");
            let _ = stdout.flush();
        };
        if database::is_indexed_dir(&self.dir) {
            let db = crate::indexed::open(
                &self.dir,
                Options {
                    background: true,
                    verify: false,
                },
            )?;
            init_logging();
            return cairn_server::run_indexed(db, config, ready).map_err(server_failure);
        }
        // The store's background flush and automatic checkpoints run while
        // serving.
        let db = database::open(
            &self.dir,
            Options {
                background: true,
                verify: false,
            },
        )?;
        init_logging();
        run_db(db, config, ready).map_err(server_failure)
    }
}

/// Creates a database in `dir` unless it holds one; one it holds must have
/// `arity` and `hash`, so that `--create` never serves a tree the caller did
/// not ask for.
fn create_or_check(dir: &Path, arity: Arity, hash: HashKind) -> Result<(), Failure> {
    if database::is_database(dir) {
        let stored = database::stored(dir)?.tree;
        if stored.arity != arity || stored.hash != hash {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "{} already holds a database of arity {} and hash {}, not arity {arity} and hash {hash}",
                    dir.display(),
                    stored.arity,
                    stored.hash,
                ),
            ));
        }
        return Ok(());
    }
    let mut config = DbConfig::new(TreeConfig::new(arity, hash));
    config.store.flush_interval = None;
    config.store.checkpoint = Default::default();
    let db = Db::create(dir, config).map_err(database::db_failure)?;
    db.close().map_err(database::db_failure)
}

fn server_failure(error: ServerError) -> Failure {
    match error {
        ServerError::Db(error) => database::db_failure(error),
        ServerError::TokenFile { .. } | ServerError::Bind { .. } | ServerError::Usage(_) => {
            Failure::new(Code::Usage, anyhow!("{error}"))
        }
        error => Failure::new(Code::Input, anyhow!("{error}")),
    }
}
