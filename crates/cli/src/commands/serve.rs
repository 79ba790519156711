//! `cairn serve`: the HTTP server over a database (`crates/server`).

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::anyhow;
use cairn_server::{ServeOptions, ServerError, init_logging, run_db};

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
    /// Listening, token and limits.
    #[command(flatten)]
    options: ServeOptions,
}

impl ServeCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let config = self.options.config().map_err(server_failure)?;
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
