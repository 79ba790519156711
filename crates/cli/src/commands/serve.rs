//! `cairn serve`: the HTTP server over a database (`crates/server`).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use cairn_core::{Arity, HashKind, TreeConfig};
use cairn_db::{Database, DbConfig, Operation};
use cairn_server::{ServeOptions, ServerError, init_logging_as, run_db};

use crate::args::{KindArgs, parse_arity, parse_hash_kind};
use crate::commands::publish::RemoteArgs;
use crate::commands::repair::RepairCmd;
use crate::database::{self, Options};
use crate::failure::{Code, Failure};

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Serve the cairn database DIR over HTTP until SIGTERM or SIGINT.

Routes: POST /v1/leaves (JSON {\"leaves\":[\"0x..\"]} or application/octet-stream raw 32-byte \
records; answers once the batch is durable; 409 lists duplicates), GET /v1/root, \
GET /v1/leaves/{0xhex}, GET /v1/proofs/{index}?size=S[&format=zkkit|circom|zkkit-circom], \
GET /v1/consistency?from=S1&to=S2, GET /v1/checkpoint (the durable head as a signed note, with \
a signer key: --sign-key FILE, else DIR/signer.key if the database has one; --sign-finalized \
signs the finalized head instead), GET /healthz (liveness), GET /readyz (readiness: 503 while \
acknowledgements are stopped or a mirror or read-only server has not caught up within \
--ready-max-staleness), GET /metrics (Prometheus, with cairn_build_info), GET /openapi.json \
(the API document). Reads answer at the durable size, so nothing served can be lost by a crash. \
A Poseidon database also takes leaves as decimal field elements (\"123\").

Browsers: --cors-origin '*' lets pages on every origin read; --cors-origin ORIGIN (repeatable, \
such as https://app.example.org) lets that origin read and write. Proof answers carry an ETag \
(If-None-Match answers 304), and Cache-Control: immutable when asked at an explicit size at or \
below the finalized size, which no rollback can change.

With --token-file, writes need `Authorization: Bearer <token>` (the file holds the token on one \
line, white space around it ignored; a file of more lines is refused, and one other users can \
read is warned about); reads never do. On shutdown the server stops accepting, finishes in-flight requests, flushes, \
checkpoints (unless --no-checkpoint-on-shutdown) and releases the directory. Prints \
`listening on ADDR` on stdout once it accepts requests (--listen 127.0.0.1:0 picks a free \
port); logs go to stderr (CAIRN_LOG=debug for every request; --log-format json or \
CAIRN_LOG_FORMAT=json for one JSON object per line). Listening beyond loopback (0.0.0.0) without \
--token-file, writes are refused with 403 unless --allow-open-writes. If the address cannot be \
bound (in use by another process, say), the exit status is 5.

Limits: --max-connections N connections at once (by default what the open-file limit, ulimit -n, \
leaves after the descriptors open at start and those kept for the database's own files, an \
eighth of the limit and at least 32, at most 4096; recomputed every second); one more is \
answered 503 with Retry-After: 1 and closed. --header-read-timeout (10 s) closes a connection \
whose request headers do not arrive in time, or that sends nothing between requests; \
--idle-timeout (30 s) closes one that moves nothing while no request of it is handled, or whose \
request body stalls. /metrics shows every limit (cairn_http_*, cairn_max_*, \
cairn_durability_timeout_seconds); /healthz says `degraded` (200) while a checkpoint fails and \
is retried (appends go on) or a file of the database removed under the server could not be \
written back, and `failing` (503) once acknowledgements stopped.

Scaling reads: --publish STORE keeps a tile store (a directory, file://DIR or s3://BUCKET/PREFIX \
with --s3-endpoint and the AWS_* credentials) at the durable size in the background: the tiles added since the store's checkpoint, then the checkpoint, retried \
with backoff, resumed from the store's checkpoint after a restart (--publish-finalized publishes \
the finalized size, for databases that are rolled back). Each published size is made final \
first (a database checkpoint per publication, unless it is final already), so no rollback can \
contradict the store. With a signer key (--sign-key FILE, else \
DIR/signer.key) the store's checkpoint is the signed note GET /v1/checkpoint serves. /metrics \
then shows cairn_publish_published_size, cairn_publish_durable_size, cairn_publish_lag_leaves and \
cairn_publish_failures_total. --read-only answers every write with 403; without --mirror-from and \
--publish it opens DIR without the writer's lock, so it runs beside `cairn serve DIR` (or an \
ingest) on the same directory: every --refresh-interval-ms (1000) it looks at DIR and, when a \
file changed, opens it again and serves the new opening (reads trail the writer's durable head \
by about that long; /metrics shows cairn_reader_size and cairn_reader_staleness_seconds). --read-only \
--mirror-from URL makes the server a verifying mirror of a tile store or a cairn server (see \
`cairn mirror --help`; --verify-key FILE trusts only checkpoints signed by its keys), creating \
DIR from upstream's arity and hash if it holds no database; /metrics then shows \
cairn_mirror_adopted_size and cairn_mirror_refusals_total.

With --repair-from URL [--repair-key FILE] a DIR that does not open because it is damaged (a \
file and offset named) is first repaired from that replica as `cairn repair` does, refusing to \
lose acknowledged data; the report goes to stderr.

With --create --arity N --hash H [--kind imt --depth D --zero Z], a DIR holding no database is \
created first (as `cairn init DIR --arity N --hash H ..` would); a DIR already holding one is \
opened if its arity, hash and kind are those, refused otherwise (exit 2).

Examples:
  cairn serve db
  cairn serve db --create --arity 4 --hash blake3 --listen 127.0.0.1:0
  cairn serve db --listen 0.0.0.0:7878 --token-file /etc/cairn/token
  cairn serve db --cors-origin https://app.example.org --token-file /etc/cairn/token
  cairn serve db --publish s3://tiles/nullifiers --s3-endpoint http://127.0.0.1:9000
  cairn serve replica --read-only --mirror-from https://tiles.example.org/nullifiers
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
    /// With --create: the tree's kind (--kind imt --depth D [--zero Z] for zk-kit's fixed-depth IMT).
    #[command(flatten)]
    kind: KindArgs,
    /// If DIR does not open because it is damaged, repair it from this replica first (see `cairn repair`).
    #[arg(long, value_name = "URL")]
    repair_from: Option<String>,
    /// With --repair-from: trust only checkpoints signed by a key in this file (repeatable).
    #[arg(long, value_name = "FILE", requires = "repair_from")]
    repair_key: Vec<PathBuf>,
    /// Listening, token and limits.
    #[command(flatten)]
    options: ServeOptions,
}

impl ServeCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        // First: reading the options warns (a token file others can read).
        init_logging_as(self.options.log_format);
        if let Some(from) = &self.repair_from {
            self.repair_if_damaged(from)?;
        }
        let config = self.options.config_for(&self.dir).map_err(server_failure)?;
        if !self.create && !self.kind.given().is_empty() {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "{} {} for --create: a database stores its kind",
                    self.kind.given().join(" and "),
                    if self.kind.given().len() == 1 {
                        "is"
                    } else {
                        "are"
                    }
                ),
            ));
        }
        if let (true, Some(arity), Some(hash)) = (self.create, self.arity, self.hash) {
            let tree = TreeConfig::new(arity, hash).with_kind(self.kind.resolve(hash)?);
            create_or_check(&self.dir, tree)?;
        }
        if let Some(from) = &self.options.mirror_from {
            // A new mirror takes upstream's arity and hash.
            let remote = config
                .mirror
                .as_ref()
                .map(|m| m.remote.clone())
                .unwrap_or_default();
            let trusted = config.mirror.as_ref().and_then(|m| m.trusted.as_ref());
            let mut upstream = cairn_server::open_upstream(from, &remote, trusted)
                .map_err(|why| Failure::new(Code::Usage, anyhow!("{why}")))?;
            crate::commands::mirror::create_for(&self.dir, &mut *upstream, false)?;
        }
        let ready = |addr: std::net::SocketAddr| {
            let mut stdout = std::io::stdout();
            let _ = writeln!(stdout, "listening on {addr}");
            let _ = stdout.flush();
        };
        if cairn_db::is_forest(&self.dir) {
            return self.serve_forest(config, ready);
        }
        // What the database's kind cannot serve, refused before it opens.
        let kind = database::stored(&self.dir)?.tree().kind;
        let needs = [
            (
                config.signer.is_some(),
                "signed checkpoints (--sign-key, DIR/signer.key)",
                Operation::SignedCheckpoint,
            ),
            (config.publish.is_some(), "--publish", Operation::Tiles),
            (config.mirror.is_some(), "--mirror-from", Operation::Tiles),
        ];
        for (asked, what, operation) in needs {
            if let (true, Err(refusal)) = (asked, operation.check(kind)) {
                return Err(Failure::new(
                    Code::Usage,
                    anyhow!(
                        "{} cannot be served with {what}: {refusal}",
                        self.dir.display()
                    ),
                ));
            }
        }
        // A read-only server that neither mirrors nor publishes writes
        // nothing: it opens without the writer's lock, beside a writer of
        // the same directory, and follows it by opening it again.
        let db = if config.read_only && config.mirror.is_none() && config.publish.is_none() {
            database::open_read_only(&self.dir, Options::default())?
        } else {
            // The store's background flush and automatic checkpoints run
            // while serving.
            database::open(
                &self.dir,
                Options {
                    background: true,
                    verify: false,
                },
            )?
        };
        run_db(db, config, ready).map_err(server_failure)
    }

    /// Serves every tree of a database of several: `/v1/trees/{name}/...`,
    /// the routes without a prefix for the default tree, `POST /v1/blocks`.
    fn serve_forest(
        &self,
        config: cairn_server::ServerConfig,
        ready: impl FnOnce(std::net::SocketAddr),
    ) -> Result<(), Failure> {
        if config.publish.is_some() || config.mirror.is_some() {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "{} holds several trees: --publish and --mirror-from serve a database of one tree",
                    self.dir.display()
                ),
            ));
        }
        if config.read_only {
            return cairn_server::run_read_only_forest(&self.dir, config, ready)
                .map_err(server_failure);
        }
        let forest = cairn_db::Forest::open(&self.dir).map_err(database::db_failure)?;
        cairn_server::run_forest(forest, config, ready).map_err(server_failure)
    }
}

impl ServeCmd {
    /// Repairs DIR from `from` if it does not open because it is damaged
    /// (a file and offset named); any other failure to open is the
    /// normal open's to report.
    fn repair_if_damaged(&self, from: &str) -> Result<(), Failure> {
        if !self.dir.join(cairn_db::META_FILE).exists() && !self.dir.join("log").exists() {
            return Ok(());
        }
        let opened = cairn_db::OpenOptions::new()
            .read_only(true)
            .background(false)
            .open(&self.dir);
        let error = match opened {
            Ok(db) => return db.close().map_err(database::db_failure),
            Err(error) if error.corrupt_location().is_some() => error,
            Err(_) => return Ok(()),
        };
        eprintln!(
            "warning: {} is damaged ({error}): repairing it from {from}",
            self.dir.display()
        );
        let remote = RemoteArgs {
            s3_endpoint: self.options.s3_endpoint.clone(),
            ..RemoteArgs::default()
        };
        RepairCmd::new(
            self.dir.clone(),
            from.to_owned(),
            self.repair_key.clone(),
            remote,
        )
        .run()
    }
}

/// Creates a database of `tree` in `dir` unless it holds one; one it holds
/// must have its arity, hash and kind, so that `--create` never serves a
/// tree the caller did not ask for.
fn create_or_check(dir: &Path, tree: TreeConfig) -> Result<(), Failure> {
    let TreeConfig {
        arity, hash, kind, ..
    } = tree;
    if database::is_database(dir) {
        let stored = database::stored(dir)?.tree();
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
        if stored.kind != kind {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "{} already holds a database of kind {:?}, not {kind:?}",
                    dir.display(),
                    stored.kind,
                ),
            ));
        }
        return Ok(());
    }
    let mut config = DbConfig::new(tree);
    config.store.flush_interval = None;
    config.store.checkpoint = Default::default();
    let db = Database::create(dir, config).map_err(database::db_failure)?;
    db.close().map_err(database::db_failure)
}

fn server_failure(error: ServerError) -> Failure {
    match error {
        ServerError::Db(error) => database::db_failure(error),
        ServerError::SignerKey(error) => crate::signing::key_failure(error),
        ServerError::Bind { .. } => Failure::new(Code::Listen, anyhow!("{error}")),
        ServerError::TokenFile { .. } | ServerError::Usage(_) => {
            Failure::new(Code::Usage, anyhow!("{error}"))
        }
        error => Failure::new(Code::Input, anyhow!("{error}")),
    }
}
