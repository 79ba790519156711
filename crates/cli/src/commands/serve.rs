//! `cairn serve`: the HTTP server over a database (`crates/server`).

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::anyhow;
use cairn_server::{ServerConfig, ServerError, init_logging, read_token_file, run_db};

use crate::database::{self, Options};
use crate::failure::{Code, Failure};

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Serve the cairn database DIR over HTTP until SIGTERM or SIGINT.

Routes: POST /v1/leaves (JSON {\"leaves\":[\"0x..\"]} or application/octet-stream raw 32-byte \
records; answers once the batch is durable; 409 lists duplicates), GET /v1/root, \
GET /v1/leaves/{0xhex}, GET /v1/proofs/{index}?size=S, GET /v1/consistency?from=S1&to=S2, \
GET /healthz, GET /metrics (Prometheus), GET /openapi.json (the API document). Reads answer at \
the durable size, so nothing served can be lost by a crash.

With --token-file, writes need `Authorization: Bearer <token>` (the file's first line); reads \
never do. On shutdown the server stops accepting, finishes in-flight requests, flushes, \
checkpoints (unless --no-checkpoint-on-shutdown) and releases the directory. Prints \
`listening on ADDR` on stdout once it accepts requests (--listen 127.0.0.1:0 picks a free \
port); logs go to stderr (CAIRN_LOG=debug for every request, CAIRN_LOG_FORMAT=json).

Examples:
  cairn serve db
  cairn serve db --listen 0.0.0.0:7878 --token-file /etc/cairn/token
  curl -s localhost:7878/v1/root";

/// Serve a database over HTTP.
#[derive(clap::Args, Debug)]
pub struct ServeCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The address to listen on (port 0 picks a free one).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    listen: SocketAddr,
    /// A file holding the write token.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
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

impl ServeCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let mut config = ServerConfig::new(self.listen);
        if let Some(path) = &self.token_file {
            config.token = Some(read_token_file(path).map_err(server_failure)?);
        }
        if let Some(bytes) = self.max_body_bytes {
            config.max_body_bytes = bytes;
        }
        if let Some(leaves) = self.max_batch_leaves {
            config.max_batch_leaves = leaves;
        }
        if let Some(seconds) = self.durability_timeout {
            config.durability_timeout = Duration::from_secs(seconds);
        }
        config.checkpoint_on_shutdown = !self.no_checkpoint_on_shutdown;
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
        run_db(db, config, |addr| {
            let mut stdout = std::io::stdout();
            let _ = writeln!(stdout, "listening on {addr}");
            let _ = stdout.flush();
        })
        .map_err(server_failure)
    }
}

fn server_failure(error: ServerError) -> Failure {
    match error {
        ServerError::Db(error) => database::db_failure(error),
        ServerError::TokenFile { .. } | ServerError::Bind { .. } => {
            Failure::new(Code::Usage, anyhow!("{error}"))
        }
        error => Failure::new(Code::Input, anyhow!("{error}")),
    }
}
