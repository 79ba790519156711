//! Tile stores over the network: S3-compatible object storage (read and
//! write) and plain HTTP(S) GET (read), through the `object_store` crate,
//! which signs S3 requests and retries failed ones with exponential
//! backoff. The traits are blocking (a proof or a publication is a short
//! run of requests), so each store owns a small tokio runtime and blocks
//! on it: call them from ordinary threads, never from inside an async
//! task.
//!
//! Where a store is comes as a URL ([`Location`]): a path or `file://`, an
//! `s3://BUCKET/PREFIX`, or an `http(s)://` base URL.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::AmazonS3Builder;
use object_store::http::HttpBuilder;
use object_store::path::Path as ObjectPath;
use object_store::{
    Attribute, Attributes, BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectStore,
    ObjectStoreExt as _, PutOptions, PutPayload, RetryConfig,
};

use crate::store::{DirStore, ObjectError, TileSink, TileSource};

/// Requests in flight at once in [`TileSource::get_many`] and
/// [`TileSink::put_many`].
const CONCURRENCY: usize = 16;

/// Where a tile store is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A directory (a path, or `file://PATH`).
    Dir(PathBuf),
    /// An S3 bucket and the prefix under which the objects are
    /// (`s3://BUCKET/PREFIX`, the prefix may be empty).
    S3 {
        /// The bucket.
        bucket: String,
        /// The key prefix, without leading or trailing `/`.
        prefix: String,
    },
    /// A base URL whose objects are read with GET (`http://` or `https://`).
    Http(String),
}

/// A store argument that names no store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocationError {
    /// `file://` without a path.
    #[error("{text}: file:// needs a path")]
    FilePath {
        /// The argument.
        text: String,
    },
    /// `s3://` without a bucket.
    #[error("{text}: s3:// needs a bucket (s3://BUCKET/PREFIX)")]
    Bucket {
        /// The argument.
        text: String,
    },
    /// An S3 prefix with an empty, `.` or `..` part.
    #[error("{text}: the prefix {prefix:?} has an empty, . or .. part")]
    Prefix {
        /// The argument.
        text: String,
        /// The prefix.
        prefix: String,
    },
    /// A scheme other than `file`, `s3`, `http` and `https`.
    #[error(
        "{text}: the scheme {scheme}:// is not supported (a path, file://, s3:// or http(s)://)"
    )]
    Scheme {
        /// The argument.
        text: String,
        /// The scheme.
        scheme: String,
    },
    /// An empty argument.
    #[error("an empty tile store location")]
    Empty,
}

/// A store that could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The store's I/O runtime did not start.
    #[error("starting the I/O runtime: {0}")]
    Runtime(std::io::Error),
    /// An S3-compatible endpoint without credentials in the environment.
    #[error(
        "{location} at {endpoint}: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    )]
    Credentials {
        /// The store.
        location: String,
        /// The endpoint.
        endpoint: String,
    },
    /// The object store client refused its configuration.
    #[error("{location}: {error}")]
    Store {
        /// The store.
        location: String,
        /// What it said.
        error: object_store::Error,
    },
    /// An HTTP(S) URL that does not parse.
    #[error("{url}: {error}")]
    Url {
        /// The URL.
        url: String,
        /// What is wrong with it.
        error: url::ParseError,
    },
    /// An HTTP(S) store URL with a query or fragment.
    #[error("{url}: a tile store URL has no query or fragment")]
    QueryOrFragment {
        /// The URL.
        url: String,
    },
    /// A directory given where a remote store is wanted.
    #[error("{path}: a directory is not remote")]
    NotRemote {
        /// The directory.
        path: String,
    },
    /// An HTTP(S) store opened for writing.
    #[error(
        "{url}: an HTTP(S) store is read-only; publish to a directory (serve it over HTTP) or to s3://"
    )]
    ReadOnly {
        /// The URL.
        url: String,
    },
    /// The HTTP client of a cairn server upstream could not be built.
    #[error("{base}: {error}")]
    Client {
        /// The server.
        base: String,
        /// What the client said.
        error: reqwest::Error,
    },
}

impl Location {
    /// Parses a store argument: `s3://BUCKET[/PREFIX]`, `http(s)://...`,
    /// `file://PATH`, or a plain path; any other `scheme://` is refused.
    pub fn parse(text: &str) -> Result<Location, LocationError> {
        if let Some(path) = text.strip_prefix("file://") {
            if path.is_empty() {
                return Err(LocationError::FilePath { text: text.into() });
            }
            return Ok(Location::Dir(PathBuf::from(path)));
        }
        if let Some(rest) = text.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(LocationError::Bucket { text: text.into() });
            }
            let prefix = prefix.trim_matches('/');
            if prefix.split('/').any(|part| part == "." || part == "..") || prefix.contains("//") {
                return Err(LocationError::Prefix {
                    text: text.into(),
                    prefix: prefix.into(),
                });
            }
            return Ok(Location::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.to_owned(),
            });
        }
        if text.starts_with("http://") || text.starts_with("https://") {
            return Ok(Location::Http(text.trim_end_matches('/').to_owned()));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            return Err(LocationError::Scheme {
                text: text.into(),
                scheme: scheme.into(),
            });
        }
        if text.is_empty() {
            return Err(LocationError::Empty);
        }
        Ok(Location::Dir(PathBuf::from(text)))
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Dir(path) => write!(f, "{}", path.display()),
            Location::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            Location::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
            Location::Http(url) => f.write_str(url),
        }
    }
}

/// How remote stores are reached.
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    /// The S3 endpoint (`http://127.0.0.1:9000` for an S3-compatible
    /// server; requests then use path-style URLs). `None`: AWS, from
    /// `AWS_ENDPOINT_URL` if set.
    pub s3_endpoint: Option<String>,
    /// Retries of one request (connection errors, timeouts, 5xx, 429).
    pub max_retries: usize,
    /// No retry starts after this long since a request's first try.
    pub retry_timeout: Duration,
    /// The first backoff. Each next one is drawn at random between it and
    /// four times the previous one ("decorrelated jitter": the retries of
    /// many clients spread out), up to `max_backoff`.
    pub first_backoff: Duration,
    /// The longest backoff.
    pub max_backoff: Duration,
    /// One try of one request may take this long.
    pub request_timeout: Duration,
    /// S3 credentials (access key id, secret) to use instead of the
    /// environment's (for embedding and tests).
    pub s3_credentials: Option<(String, String)>,
    /// Bundles a mirror asks for at once (each 2 MiB), fetched ahead of
    /// their verification ([`crate::DEFAULT_IN_FLIGHT`] by default; a store
    /// reads at most 16 objects at once).
    pub bulk_in_flight: usize,
    /// Whether a mirror reads whole bundles where the store has them (the
    /// default); without, it reads each chunk as a range of its bundle,
    /// and leaf tiles past the last complete bundle.
    pub bulk_bundles: bool,
}

impl Default for RemoteOptions {
    /// 10 retries within 3 minutes, backoffs from 250 ms growing at random
    /// up to 15 s (ten retries span about a minute in the median case and
    /// more than 13 s in 19 cases of 20, `scripts/backoff_span.py`, so an
    /// object server that restarts or loses its quorum for a few seconds
    /// is ridden out), 30 s per try.
    fn default() -> RemoteOptions {
        RemoteOptions {
            s3_endpoint: None,
            max_retries: 10,
            retry_timeout: Duration::from_secs(180),
            first_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(15),
            request_timeout: Duration::from_secs(30),
            s3_credentials: None,
            bulk_in_flight: crate::DEFAULT_IN_FLIGHT,
            bulk_bundles: true,
        }
    }
}

impl RemoteOptions {
    fn retry(&self) -> RetryConfig {
        RetryConfig {
            backoff: BackoffConfig {
                init_backoff: self.first_backoff,
                max_backoff: self.max_backoff,
                // Each backoff is drawn uniformly between the first one and
                // `base` times the previous one, so the median grows by
                // about base / e a retry: with 2 it does not grow, and ten
                // retries were seen to end within 2.4 s, sooner than a
                // Garage node rejoins its cluster; with 4 it grows.
                base: 4.0,
            },
            max_retries: self.max_retries,
            retry_timeout: self.retry_timeout,
        }
    }

    fn client(&self, allow_http: bool) -> ClientOptions {
        ClientOptions::new()
            .with_allow_http(allow_http)
            .with_timeout(self.request_timeout)
            .with_connect_timeout(self.request_timeout.min(Duration::from_secs(5)))
    }
}

/// Opens the store at `location` for reading.
pub fn open_source(
    location: &Location,
    options: &RemoteOptions,
) -> Result<Box<dyn TileSource>, OpenError> {
    match location {
        Location::Dir(path) => Ok(Box::new(DirStore::new(path))),
        _ => Ok(Box::new(RemoteStore::open(location, options)?)),
    }
}

/// Opens the store at `location` for publishing (an `http(s)://` URL is
/// read-only).
pub fn open_sink(
    location: &Location,
    options: &RemoteOptions,
) -> Result<Box<dyn TileSink>, OpenError> {
    match location {
        Location::Dir(path) => Ok(Box::new(DirStore::new(path))),
        Location::Http(url) => Err(OpenError::ReadOnly { url: url.clone() }),
        Location::S3 { .. } => Ok(Box::new(RemoteStore::open(location, options)?)),
    }
}

/// An S3 bucket or an HTTP(S) base URL, through `object_store`.
pub struct RemoteStore {
    store: Arc<dyn ObjectStore>,
    /// Prepended to every object path (`a/b` for `s3://bucket/a/b`).
    prefix: String,
    shown: String,
    runtime: tokio::runtime::Runtime,
}

impl fmt::Debug for RemoteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteStore")
            .field("location", &self.shown)
            .finish()
    }
}

impl RemoteStore {
    /// Opens an `s3://` or `http(s)://` location. S3 credentials and the
    /// region come from the usual `AWS_*` environment variables
    /// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
    /// `AWS_REGION`, default `us-east-1`).
    pub fn open(location: &Location, options: &RemoteOptions) -> Result<RemoteStore, OpenError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(OpenError::Runtime)?;
        let _entered = runtime.enter();
        let (store, prefix): (Arc<dyn ObjectStore>, String) = match location {
            Location::S3 { bucket, prefix } => {
                let mut builder = AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .with_retry(options.retry());
                if std::env::var_os("AWS_REGION").is_none()
                    && std::env::var_os("AWS_DEFAULT_REGION").is_none()
                {
                    builder = builder.with_region("us-east-1");
                }
                if let Some((key, secret)) = &options.s3_credentials {
                    builder = builder
                        .with_access_key_id(key)
                        .with_secret_access_key(secret);
                }
                let mut allow_http = false;
                if let Some(endpoint) = &options.s3_endpoint {
                    // An S3-compatible server has no instance metadata to
                    // take credentials from: say so rather than ask it.
                    let from_env = std::env::var_os("AWS_ACCESS_KEY_ID").is_some()
                        && std::env::var_os("AWS_SECRET_ACCESS_KEY").is_some();
                    if options.s3_credentials.is_none() && !from_env {
                        return Err(OpenError::Credentials {
                            location: location.to_string(),
                            endpoint: endpoint.clone(),
                        });
                    }
                    allow_http = endpoint.starts_with("http://");
                    // S3-compatible servers are addressed path-style
                    // (http://endpoint/bucket/key).
                    builder = builder
                        .with_endpoint(endpoint.trim_end_matches('/'))
                        .with_virtual_hosted_style_request(false);
                }
                let store = builder
                    .with_client_options(options.client(allow_http))
                    .build()
                    .map_err(|error| OpenError::Store {
                        location: location.to_string(),
                        error,
                    })?;
                (Arc::new(store), prefix.clone())
            }
            Location::Http(url) => {
                let parsed = url::Url::parse(url).map_err(|error| OpenError::Url {
                    url: url.clone(),
                    error,
                })?;
                let origin = parsed.origin().ascii_serialization();
                let prefix = parsed.path().trim_matches('/').to_owned();
                if parsed.query().is_some() || parsed.fragment().is_some() {
                    return Err(OpenError::QueryOrFragment { url: url.clone() });
                }
                let store = HttpBuilder::new()
                    .with_url(origin)
                    .with_retry(options.retry())
                    .with_client_options(options.client(url.starts_with("http://")))
                    .build()
                    .map_err(|error| OpenError::Store {
                        location: url.clone(),
                        error,
                    })?;
                (Arc::new(store), prefix)
            }
            Location::Dir(path) => {
                return Err(OpenError::NotRemote {
                    path: path.display().to_string(),
                });
            }
        };
        Ok(RemoteStore {
            store,
            prefix,
            shown: location.to_string(),
            runtime,
        })
    }

    fn key(&self, path: &str) -> ObjectPath {
        if self.prefix.is_empty() {
            ObjectPath::from(path)
        } else {
            ObjectPath::from(format!("{}/{path}", self.prefix))
        }
    }

    fn error(&self, op: &'static str, path: &str, error: &object_store::Error) -> ObjectError {
        ObjectError {
            op,
            store: self.shown.clone(),
            path: path.to_owned(),
            message: one_line(error),
            missing: matches!(error, object_store::Error::NotFound { .. }),
            too_large: false,
        }
    }

    async fn get_async(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ObjectError> {
        let key = self.key(path);
        let result = self
            .store
            .get(&key)
            .await
            .map_err(|e| self.error("get", path, &e))?;
        // The length the store announced: refuse before reading the body.
        if result.meta.size > max_bytes {
            return Err(ObjectError::too_large(
                self.shown.clone(),
                path,
                result.meta.size,
                max_bytes,
            ));
        }
        let bytes = result
            .bytes()
            .await
            .map_err(|e| self.error("get", path, &e))?;
        if bytes.len() as u64 > max_bytes {
            return Err(ObjectError::too_large(
                self.shown.clone(),
                path,
                bytes.len() as u64,
                max_bytes,
            ));
        }
        Ok(bytes.to_vec())
    }

    /// A ranged GET (`Range: bytes=a-b`): the answer's `Content-Range`
    /// gives the whole object's length, checked before the body is read.
    /// Where a ranged GET cannot be served (a server that ignores `Range`
    /// answers 200 with the whole object, which `object_store` refuses, or
    /// says the store cannot range), the whole object is asked for instead,
    /// accepted only at exactly `whole` bytes, and cut.
    async fn get_range_async(
        &self,
        path: &str,
        offset: u64,
        len: u64,
        whole: u64,
    ) -> Result<Vec<u8>, ObjectError> {
        let options = GetOptions {
            range: Some(GetRange::Bounded(offset..offset + len)),
            ..GetOptions::default()
        };
        let result = match self.store.get_opts(&self.key(path), options).await {
            Ok(result) => result,
            // The HTTP store says "Range request not supported" (a server
            // without ranges); S3 clients "non-partial response".
            Err(e)
                if matches!(e, object_store::Error::NotSupported { .. })
                    || one_line(&e).contains("non-partial") =>
            {
                let bytes = self.get_async(path, whole).await?;
                return crate::store::cut_range(
                    self.shown.clone(),
                    path,
                    &bytes,
                    offset,
                    len,
                    whole,
                );
            }
            Err(e) => return Err(self.error("get", path, &e)),
        };
        if result.meta.size != whole {
            return Err(ObjectError::wrong_length(
                self.shown.clone(),
                path,
                result.meta.size,
                whole,
            ));
        }
        let bytes = result
            .bytes()
            .await
            .map_err(|e| self.error("get", path, &e))?;
        if bytes.len() as u64 != len {
            return Err(ObjectError {
                message: format!(
                    "asked for bytes {offset}..{}, got {} bytes",
                    offset + len,
                    bytes.len()
                ),
                ..ObjectError::wrong_length(self.shown.clone(), path, whole, whole)
            });
        }
        Ok(bytes.to_vec())
    }

    async fn put_async(&self, path: &str, bytes: Vec<u8>) -> Result<(), ObjectError> {
        let mut attributes = Attributes::new();
        // Every object but the checkpoint is immutable: a CDN may keep it
        // forever; the checkpoint is the one object to fetch fresh.
        let (cache, content_type) = if path == crate::publish::CHECKPOINT {
            ("no-cache", "text/plain; charset=utf-8")
        } else {
            (
                "public, max-age=31536000, immutable",
                "application/octet-stream",
            )
        };
        attributes.insert(Attribute::CacheControl, cache.into());
        attributes.insert(Attribute::ContentType, content_type.into());
        let options = PutOptions {
            attributes,
            ..PutOptions::default()
        };
        self.store
            .put_opts(&self.key(path), PutPayload::from(bytes), options)
            .await
            .map(|_| ())
            .map_err(|e| self.error("put", path, &e))
    }
}

/// An `object_store` error on one line, with its causes.
fn one_line(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl TileSource for RemoteStore {
    fn get(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ObjectError> {
        self.runtime.block_on(self.get_async(path, max_bytes))
    }

    fn location(&self) -> String {
        self.shown.clone()
    }

    fn get_range(
        &self,
        path: &str,
        offset: u64,
        len: u64,
        whole: u64,
    ) -> Result<Vec<u8>, ObjectError> {
        self.runtime
            .block_on(self.get_range_async(path, offset, len, whole))
    }

    fn get_many(&self, paths: &[String], max_bytes: u64) -> Vec<Result<Vec<u8>, ObjectError>> {
        self.runtime.block_on(async {
            let mut out = Vec::with_capacity(paths.len());
            for chunk in paths.chunks(CONCURRENCY) {
                let answers =
                    futures_join(chunk.iter().map(|p| self.get_async(p, max_bytes))).await;
                out.extend(answers);
            }
            out
        })
    }
}

impl TileSink for RemoteStore {
    fn put(&self, path: &str, bytes: &[u8]) -> Result<(), ObjectError> {
        self.runtime.block_on(self.put_async(path, bytes.to_vec()))
    }

    fn put_many(&self, objects: &[(String, Vec<u8>)]) -> Result<(), ObjectError> {
        self.runtime.block_on(async {
            for chunk in objects.chunks(CONCURRENCY) {
                let answers =
                    futures_join(chunk.iter().map(|(p, b)| self.put_async(p, b.clone()))).await;
                answers
                    .into_iter()
                    .collect::<Result<Vec<()>, ObjectError>>()?;
            }
            Ok(())
        })
    }

    /// A PUT is durable once S3 acknowledges it.
    fn sync(&self) -> Result<(), ObjectError> {
        Ok(())
    }
}

/// Runs `futures` concurrently on the current task and returns their
/// outputs in order (a handful at a time: no spawning needed).
/// Hand-written because tokio's `JoinSet` takes only `'static` futures
/// (these borrow the store) and this is the one join the crate needs,
/// not worth the `futures` crate.
async fn futures_join<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut pinned: Vec<_> = futures.map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = (0..pinned.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, slot) in pinned.iter_mut().zip(out.iter_mut()) {
            if slot.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *slot = Some(value),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter()
        .map(|slot| slot.expect("every future completed"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_and_show_as_given() {
        let cases = [
            (
                "s3://bucket/a/b",
                Location::S3 {
                    bucket: "bucket".into(),
                    prefix: "a/b".into(),
                },
            ),
            (
                "s3://bucket",
                Location::S3 {
                    bucket: "bucket".into(),
                    prefix: String::new(),
                },
            ),
            (
                "s3://bucket/",
                Location::S3 {
                    bucket: "bucket".into(),
                    prefix: String::new(),
                },
            ),
            ("file:///tmp/x", Location::Dir("/tmp/x".into())),
            ("public", Location::Dir("public".into())),
            (
                "https://cdn.example.org/tiles/",
                Location::Http("https://cdn.example.org/tiles".into()),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(Location::parse(text), Ok(want), "{text}");
        }
        assert_eq!(
            Location::parse("s3://bucket/a/b").unwrap().to_string(),
            "s3://bucket/a/b"
        );
        for bad in ["gs://bucket/x", "s3:///x", "s3://b/a/../c", "file://", ""] {
            assert!(Location::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_http_store_is_read_only() {
        let location = Location::parse("http://127.0.0.1:9/x").unwrap();
        let Err(error) = open_sink(&location, &RemoteOptions::default()) else {
            panic!("an http store opened for writing");
        };
        assert!(matches!(error, OpenError::ReadOnly { .. }), "{error}");
        assert!(error.to_string().contains("read-only"), "{error}");
    }
}
