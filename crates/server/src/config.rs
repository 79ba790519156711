//! How the server runs: where it listens, the write token and the limits.
//! The token is a secret: it never appears in `Debug` output or logs.

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cairn_note::Signer;

use crate::companions::{MirrorSettings, PublishSettings};
use crate::cors::CorsPolicy;
use crate::error::ServerError;

/// The default of [`ServerConfig::max_leaves_per_read`]: 2^16 leaves,
/// 2 MiB of binary body.
pub const DEFAULT_MAX_LEAVES_PER_READ: usize = 1 << 16;

/// Everything the server needs besides the database.
#[derive(Clone)]
pub struct ServerConfig {
    /// The address to listen on (port 0 picks a free port; see
    /// [`crate::Server::local_addr`]).
    pub listen: SocketAddr,
    /// If set, `POST` requests need `Authorization: Bearer <token>`; reads
    /// never do. Read it with [`read_token_file`].
    pub token: Option<String>,
    /// Request bodies above this many bytes are refused with 413 (before
    /// they are read when `Content-Length` says so).
    pub max_body_bytes: usize,
    /// Batches above this many leaves are refused with 413.
    pub max_batch_leaves: usize,
    /// `GET /v1/leaves` answers at most this many leaves (400 above it).
    pub max_leaves_per_read: usize,
    /// How long an append waits for its leaves to become durable before
    /// answering 503 (the leaves stay appended and may still become durable).
    pub durability_timeout: Duration,
    /// After the shutdown signal, how long in-flight requests may run
    /// before their connections are closed.
    pub shutdown_grace: Duration,
    /// How long a request's headers may take to arrive, counted from when
    /// the server is ready for them: a connection that takes longer (a
    /// client sending them slowly, or a keep-alive connection that sends
    /// nothing) is closed.
    pub header_read_timeout: Duration,
    /// How long a connection may move no byte while none of its requests
    /// is being handled (an answer the client does not read), and a
    /// request body may send nothing, before the connection is closed.
    pub idle_timeout: Duration,
    /// The most connections open at once; more are answered 503 with
    /// `Retry-After` and closed. `None`: as many as the open-file limit
    /// leaves room for after the descriptors open at start and those kept
    /// for the database's own files (an eighth of the limit, at least 32),
    /// at most 4096. A number above that room is lowered to it. The room
    /// is recomputed every second, as the database opens more files.
    pub max_connections: Option<usize>,
    /// Checkpoint the database on graceful shutdown (a faster next open).
    pub checkpoint_on_shutdown: bool,
    /// Which browser origins may call the server (none by default).
    pub cors: CorsPolicy,
    /// The key that signs `GET /v1/checkpoint` (404 without one).
    pub signer: Option<Arc<Signer>>,
    /// Sign the finalized head instead of the durable one (a head no
    /// rollback can undo, for chain followers).
    pub sign_finalized: bool,
    /// Refuse every write route (403): a mirror, or a copy served for reads.
    pub read_only: bool,
    /// Publish tiles in the background (`--publish`).
    pub publish: Option<PublishSettings>,
    /// Follow an upstream as a verifying mirror (`--mirror-from`).
    pub mirror: Option<MirrorSettings>,
    /// Accept writes without a token on an address beyond loopback
    /// (`--allow-open-writes`); by default such a server refuses them.
    pub allow_open_writes: bool,
    /// A database opened read-only (beside its writer): how often the
    /// directory is looked at and, when it changed, opened again.
    pub refresh_interval: Duration,
    /// `/readyz` answers 503 while a mirror or a read-only opening has
    /// not caught up within this long.
    pub ready_max_staleness: Duration,
}

/// The file in a database directory that holds its signer key, if it has
/// one (`cairn init --sign-key`, `cairn sign-key`; docs/file-format.md).
pub const SIGNER_KEY_FILE: &str = "signer.key";

/// The default of [`ServerConfig::max_body_bytes`]: 64 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 << 20;
/// The default of [`ServerConfig::max_batch_leaves`]: 2^20.
pub const DEFAULT_MAX_BATCH_LEAVES: usize = 1 << 20;
/// The default of [`ServerConfig::durability_timeout`], in seconds.
pub const DEFAULT_DURABILITY_TIMEOUT_SECONDS: u64 = 30;
/// The default of [`ServerConfig::header_read_timeout`], in seconds.
pub const DEFAULT_HEADER_READ_TIMEOUT_SECONDS: u64 = 10;
/// The default of [`ServerConfig::idle_timeout`], in seconds.
pub const DEFAULT_IDLE_TIMEOUT_SECONDS: u64 = 30;
/// The default of [`ServerConfig::refresh_interval`], in milliseconds.
pub const DEFAULT_REFRESH_INTERVAL_MS: u64 = 1000;
/// The default of [`ServerConfig::ready_max_staleness`], in seconds.
pub const DEFAULT_READY_MAX_STALENESS_SECONDS: u64 = 60;

impl ServerConfig {
    /// Defaults for `listen`: no token, 64 MiB bodies, batches of up to
    /// 2^20 leaves, reads of up to 2^16 leaves, a 30 s durability wait, a
    /// 30 s shutdown grace, a checkpoint on shutdown, 10 s for a request's
    /// headers, 30 s idle, connections bounded by the open-file limit.
    pub fn new(listen: SocketAddr) -> ServerConfig {
        ServerConfig {
            listen,
            token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_batch_leaves: DEFAULT_MAX_BATCH_LEAVES,
            max_leaves_per_read: DEFAULT_MAX_LEAVES_PER_READ,
            durability_timeout: Duration::from_secs(DEFAULT_DURABILITY_TIMEOUT_SECONDS),
            shutdown_grace: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(DEFAULT_HEADER_READ_TIMEOUT_SECONDS),
            idle_timeout: Duration::from_secs(DEFAULT_IDLE_TIMEOUT_SECONDS),
            max_connections: None,
            checkpoint_on_shutdown: true,
            cors: CorsPolicy::None,
            signer: None,
            sign_finalized: false,
            read_only: false,
            publish: None,
            mirror: None,
            allow_open_writes: false,
            refresh_interval: Duration::from_millis(DEFAULT_REFRESH_INTERVAL_MS),
            ready_max_staleness: Duration::from_secs(DEFAULT_READY_MAX_STALENESS_SECONDS),
        }
    }
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("listen", &self.listen)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_batch_leaves", &self.max_batch_leaves)
            .field("max_leaves_per_read", &self.max_leaves_per_read)
            .field("durability_timeout", &self.durability_timeout)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_connections", &self.max_connections)
            .field("checkpoint_on_shutdown", &self.checkpoint_on_shutdown)
            .field("cors", &self.cors)
            .field("signer", &self.signer)
            .field("sign_finalized", &self.sign_finalized)
            .field("read_only", &self.read_only)
            .field("publish", &self.publish)
            .field("mirror", &self.mirror)
            .field("allow_open_writes", &self.allow_open_writes)
            .field("refresh_interval", &self.refresh_interval)
            .field("ready_max_staleness", &self.ready_max_staleness)
            .finish()
    }
}

/// The longest token accepted (a header value a client can send).
const TOKEN_MAX_BYTES: usize = 4096;

/// Reads a write token from `path`: the file's content without surrounding
/// whitespace, which must be one line of 1..=4096 visible ASCII characters
/// (what an HTTP header can carry). A file of two lines is refused rather
/// than read in part: it is not what a token file holds (a key, a token
/// with a comment), and using its first line could let a server start
/// with a token its clients do not have. Warns when other users may read
/// the file. The token itself never appears in an error.
pub fn read_token_file(path: &Path) -> Result<String, ServerError> {
    let refuse = |reason: String| ServerError::TokenFile {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| refuse(e.to_string()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(refuse(
            "the file holds no token (empty or only whitespace)".into(),
        ));
    }
    if token.len() > TOKEN_MAX_BYTES {
        return Err(refuse(format!(
            "the token has {} bytes, at most {TOKEN_MAX_BYTES} are allowed",
            token.len()
        )));
    }
    let lines = token.lines().count();
    if lines > 1 {
        return Err(refuse(format!(
            "the file holds {lines} lines, a token is one"
        )));
    }
    if let Some(position) = token.bytes().position(|b| !b.is_ascii_graphic()) {
        return Err(refuse(format!(
            "the token has a character at byte {position} that is not visible ASCII (a header cannot carry it)"
        )));
    }
    warn_if_readable_by_others(path);
    Ok(token.to_owned())
}

#[cfg(unix)]
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            path = %path.display(),
            mode = format_args!("{:o}", meta.permissions().mode() & 0o777),
            "the token file is readable by other users; chmod 600 it"
        );
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_path: &Path) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_the_token() {
        let mut config = ServerConfig::new("127.0.0.1:0".parse().unwrap());
        config.token = Some("hunter2-secret".into());
        let shown = format!("{config:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn token_file_is_trimmed_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "  abc-123\n").unwrap();
        assert_eq!(read_token_file(&path).unwrap(), "abc-123");
        std::fs::write(&path, "\n \n").unwrap();
        let error = read_token_file(&path).unwrap_err().to_string();
        assert!(error.contains("holds no token"), "{error}");
        std::fs::write(&path, "two words").unwrap();
        let error = read_token_file(&path).unwrap_err().to_string();
        assert!(error.contains("byte 3"), "{error}");
        assert!(!error.contains("words"), "{error}");
        // Two lines are refused, not cut to the first.
        std::fs::write(&path, "first-line\nsecond\n").unwrap();
        let error = read_token_file(&path).unwrap_err().to_string();
        assert!(error.contains("holds 2 lines, a token is one"), "{error}");
        assert!(!error.contains("first-line"), "{error}");
        let missing = dir.path().join("missing");
        assert!(read_token_file(&missing).is_err());
    }
}

/// How log lines are written (`--log-format`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The command-line options of a server (`cairn serve` and the
/// `cairn-server` binary share them).
#[derive(clap::Args, Debug, Clone)]
pub struct ServeOptions {
    /// The address to listen on (port 0 picks a free one).
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:7878",
        env = "CAIRN_LISTEN"
    )]
    pub listen: SocketAddr,
    /// A file holding the write token (one line; surrounding white space is ignored, a second line is refused): POST requests then need `Authorization: Bearer <token>`. Warns if other users can read it.
    #[arg(long, value_name = "FILE", env = "CAIRN_TOKEN_FILE")]
    pub token_file: Option<std::path::PathBuf>,
    /// Listening beyond loopback without --token-file, accept writes from anyone who can reach the server (by default they are refused with 403).
    #[arg(long, conflicts_with = "token_file")]
    pub allow_open_writes: bool,
    /// How log lines on stderr are written: text, or json (one JSON object per line, the schema in docs/operations.md) [default: json if CAIRN_LOG_FORMAT=json, else text].
    #[arg(long, value_name = "FORMAT")]
    pub log_format: Option<LogFormat>,
    /// Refuse request bodies above this many bytes (413).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    /// Refuse batches above this many leaves (413).
    #[arg(long, value_name = "LEAVES", default_value_t = DEFAULT_MAX_BATCH_LEAVES)]
    pub max_batch_leaves: usize,
    /// Answer at most this many leaves per `GET /v1/leaves` (400 above it).
    #[arg(long, value_name = "LEAVES", default_value_t = DEFAULT_MAX_LEAVES_PER_READ)]
    pub max_leaves_per_read: usize,
    /// Seconds an append waits to become durable before answering 503.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_DURABILITY_TIMEOUT_SECONDS)]
    pub durability_timeout: u64,
    /// Close a connection whose request headers have not all arrived this many seconds after the server was ready for them (a keep-alive connection that sends nothing too).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_HEADER_READ_TIMEOUT_SECONDS, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_read_timeout: u64,
    /// Close a connection that moves nothing for this many seconds while none of its requests is being handled (an answer not read), or whose request body sends nothing for that long.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_IDLE_TIMEOUT_SECONDS, value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout: u64,
    /// At most this many connections open at once; more are answered 503 with Retry-After: 1 and closed [default: what the open-file limit (ulimit -n) leaves after the descriptors open at start and those kept for the database's own files (an eighth of the limit, at least 32), at most 4096; recomputed every second].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: Option<u64>,
    /// Do not checkpoint on graceful shutdown (by default the server checkpoints then).
    #[arg(long)]
    pub no_checkpoint_on_shutdown: bool,
    /// A browser origin allowed to call the server (repeat for more): '*' lets every origin read; a named origin (`https://app.example.org`) may also write.
    #[arg(long, value_name = "ORIGIN")]
    pub cors_origin: Vec<String>,
    /// A signer key file (`cairn keygen`): GET /v1/checkpoint serves the head signed with it, and --publish signs the tile store's checkpoint with it (default: DIR/signer.key, if the database has one).
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<std::path::PathBuf>,
    /// Sign the finalized head instead of the durable one (a chain follower's heads above the finalized size may be rolled back).
    #[arg(long)]
    pub sign_finalized: bool,
    /// Refuse every write route with 403 (a mirror, or a copy served for reads). Without --mirror-from and --publish the directory is opened read-only, without the writer's lock, so the server runs beside a writer of the same directory and follows it (--refresh-interval-ms).
    #[arg(long)]
    pub read_only: bool,
    /// With --read-only: milliseconds between looks at the directory; when a file of it changed, it is opened again and the new opening serves (reads trail the writer's durable head by about this long).
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_REFRESH_INTERVAL_MS, requires = "read_only", value_parser = clap::value_parser!(u64).range(1..))]
    pub refresh_interval_ms: u64,
    /// GET /readyz answers 503 while a mirror (--mirror-from) or a read-only server beside its writer has not caught up within this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_READY_MAX_STALENESS_SECONDS, value_parser = clap::value_parser!(u64).range(1..))]
    pub ready_max_staleness: u64,
    /// Publish tiles in the background to a directory, file://DIR or s3://BUCKET/PREFIX.
    #[arg(long, value_name = "STORE")]
    pub publish: Option<String>,
    /// With --publish: publish the finalized size only (for databases that are rolled back).
    #[arg(long, requires = "publish")]
    pub publish_finalized: bool,
    /// With --publish: milliseconds between looks for new durable leaves.
    #[arg(long, value_name = "MS", default_value_t = 200, requires = "publish")]
    pub publish_interval_ms: u64,
    /// With --publish or --mirror-from: seconds within which a failed request to a remote store is retried (the background work then tries again later).
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub publish_retry_seconds: u64,
    /// The endpoint of an S3-compatible server (http://HOST:PORT) for s3:// stores.
    #[arg(long, value_name = "URL")]
    pub s3_endpoint: Option<String>,
    /// Follow a tile store or cairn server as a verifying mirror (needs --read-only).
    #[arg(long, value_name = "URL", requires = "read_only")]
    pub mirror_from: Option<String>,
    /// With --mirror-from: milliseconds between looks at upstream.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 1000,
        requires = "mirror_from"
    )]
    pub mirror_interval_ms: u64,
    /// With --mirror-from: a file of verifier keys (one per line, as `cairn keygen` prints); the tile store's checkpoint must be signed by one of them (repeatable).
    #[arg(long, value_name = "FILE", requires = "mirror_from")]
    pub verify_key: Vec<std::path::PathBuf>,
}

/// The keys in the verifier key files `paths` (`--verify-key`), or `None`
/// when none is given.
pub fn trusted_keys(
    paths: &[std::path::PathBuf],
) -> Result<Option<cairn_tiles::SignedBy>, cairn_note::KeyError> {
    if paths.is_empty() {
        return Ok(None);
    }
    let mut keys = Vec::new();
    for path in paths {
        keys.extend(cairn_note::file::read_verifier_keys(path)?);
    }
    Ok(Some(
        cairn_tiles::SignedBy::new(keys).expect("read_verifier_keys refuses a file without a key"),
    ))
}

impl ServeOptions {
    /// The server configuration these options describe (reads the token file).
    pub fn config(&self) -> Result<ServerConfig, ServerError> {
        let mut config = ServerConfig::new(self.listen);
        if let Some(path) = &self.token_file {
            config.token = Some(read_token_file(path)?);
        }
        config.max_body_bytes = self.max_body_bytes;
        config.max_batch_leaves = self.max_batch_leaves;
        config.max_leaves_per_read = self.max_leaves_per_read;
        config.durability_timeout = Duration::from_secs(self.durability_timeout);
        config.header_read_timeout = Duration::from_secs(self.header_read_timeout);
        config.idle_timeout = Duration::from_secs(self.idle_timeout);
        config.max_connections = self
            .max_connections
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        config.checkpoint_on_shutdown = !self.no_checkpoint_on_shutdown;
        config.cors = CorsPolicy::from_origins(&self.cors_origin).map_err(ServerError::Usage)?;
        config.read_only = self.read_only;
        config.allow_open_writes = self.allow_open_writes;
        config.refresh_interval = Duration::from_millis(self.refresh_interval_ms);
        config.ready_max_staleness = Duration::from_secs(self.ready_max_staleness);
        // Background work retries on its own: a request gives up sooner
        // than a one-shot command's would.
        let remote = cairn_tiles::RemoteOptions {
            s3_endpoint: self.s3_endpoint.clone(),
            retry_timeout: Duration::from_secs(self.publish_retry_seconds),
            ..cairn_tiles::RemoteOptions::default()
        };
        if let Some(store) = &self.publish {
            config.publish = Some(PublishSettings {
                location: cairn_tiles::Location::parse(store)
                    .map_err(|e| ServerError::Usage(e.to_string()))?,
                remote: remote.clone(),
                finalized: self.publish_finalized,
                interval: Duration::from_millis(self.publish_interval_ms.max(1)),
            });
        }
        if let Some(from) = &self.mirror_from {
            config.mirror = Some(MirrorSettings {
                from: from.clone(),
                remote,
                interval: Duration::from_millis(self.mirror_interval_ms.max(1)),
                chunk_leaves: cairn_tiles::DEFAULT_CHUNK_LEAVES,
                trusted: trusted_keys(&self.verify_key)?,
            });
        }
        if let Some(path) = &self.sign_key {
            config.signer = Some(Arc::new(read_signer_key_file(path)?));
        }
        config.sign_finalized = self.sign_finalized;
        Ok(config)
    }

    /// [`ServeOptions::config`] for the database in `dir`: without
    /// `--sign-key`, the database's own signer key, if it has one.
    pub fn config_for(&self, dir: &Path) -> Result<ServerConfig, ServerError> {
        let mut config = self.config()?;
        let in_database = dir.join(SIGNER_KEY_FILE);
        if config.signer.is_none() && in_database.exists() {
            config.signer = Some(Arc::new(read_signer_key_file(&in_database)?));
        }
        if config.sign_finalized && config.signer.is_none() {
            return Err(ServerError::Usage(format!(
                "--sign-finalized needs a signer key: give --sign-key FILE, or add one to {} with `cairn sign-key`",
                dir.display()
            )));
        }
        Ok(config)
    }
}

/// Reads a signer key file, warning when other users can read it.
pub fn read_signer_key_file(path: &Path) -> Result<Signer, ServerError> {
    let signer = cairn_note::file::read_signer_key(path)?;
    if cairn_note::file::readable_by_others(path) {
        tracing::warn!(
            path = %path.display(),
            "the signer key file is readable by other users; chmod 600 it"
        );
    }
    Ok(signer)
}
