//! Accepting and serving connections (HTTP/1.1 on hyper), with the limits
//! that keep slow, silent or numerous clients from holding the server:
//!
//! - a bound on open connections, derived from the open-file limit with
//!   descriptors kept in reserve for the database's own files (and
//!   recomputed every second, as those grow); a connection over it is
//!   answered `503` with `Retry-After` at once and closed;
//! - a header-read timeout: a request's headers must arrive within it,
//!   counted from when the server is ready for them (so it also closes a
//!   keep-alive connection that sends nothing);
//! - an idle timeout: an answer the client stops reading (a write waits
//!   for the client that long with nothing moving), or a request body
//!   that sends nothing for that long (refused with 400), closes the
//!   connection. Between requests the header-read timeout applies; a
//!   handler's own time (a durability wait) is never counted.
//!
//! Both servers (lean and indexed) serve through [`serve`].

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};

use crate::config::ServerConfig;
use crate::process;

/// How a server treats its connections (see the module doc).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// How long a request's headers may take to arrive.
    pub header_read_timeout: Duration,
    /// How long a connection or a request body may move nothing.
    pub idle_timeout: Duration,
    /// The bound on open connections asked for (`None`: as many as the
    /// descriptor budget allows, up to [`DEFAULT_MAX_CONNECTIONS`]).
    pub max_connections: Option<usize>,
}

impl Limits {
    pub fn of(config: &ServerConfig) -> Limits {
        Limits {
            header_read_timeout: config.header_read_timeout,
            idle_timeout: config.idle_timeout,
            max_connections: config.max_connections,
        }
    }
}

/// The bound on open connections when none is given and the descriptor
/// limit allows more.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;

/// Connections over the bound that are being answered 503 at once, at
/// most (their descriptors come out of the reserve); past it they are
/// closed unanswered.
const REFUSING_MAX: u64 = 16;

/// How long a refused connection is kept to deliver its 503 and read what
/// the client sent (closing with unread bytes would reset the connection
/// and could destroy the answer before the client reads it).
const REFUSAL_LINGER: Duration = Duration::from_millis(500);

/// The `Retry-After` of a 503 answered because the server is full.
pub(crate) const FULL_RETRY_AFTER_SECONDS: u64 = 1;

/// The descriptors kept for everything but connections: at least this
/// many, and an eighth of the limit when that is more.
pub const RESERVED_DESCRIPTORS_MIN: u64 = 32;

/// The descriptors kept out of the connections' reach for a limit of
/// `limit`: the database's new log and level files, its temporaries and
/// directory syncs, the publisher's and mirror's sockets, the 503s.
pub fn reserved_descriptors(limit: u64) -> u64 {
    RESERVED_DESCRIPTORS_MIN.max(limit / 8)
}

/// Counts and limits of the connections, for metrics.
#[derive(Debug)]
pub(crate) struct ConnectionStats {
    /// Connections open now (watched: the shutdown waits for none).
    open: watch::Sender<u64>,
    /// The bound now (recomputed every second).
    pub bound: AtomicU64,
    /// The bound asked for or derived at start.
    pub max: AtomicU64,
    /// The open-file limit and the descriptors kept from connections (0:
    /// unknown).
    pub descriptor_limit: AtomicU64,
    pub reserved: AtomicU64,
    pub header_read_timeout_ms: AtomicU64,
    pub idle_timeout_ms: AtomicU64,
    /// The request limits (shown in metrics beside the connections').
    pub max_body_bytes: AtomicU64,
    pub max_batch_leaves: AtomicU64,
    pub max_leaves_per_read: AtomicU64,
    pub durability_timeout_ms: AtomicU64,
    pub accepted: AtomicU64,
    /// Answered 503 because the bound was reached.
    pub refused: AtomicU64,
    /// Closed unanswered: over the bound with [`REFUSING_MAX`] refusals
    /// already under way.
    pub dropped: AtomicU64,
    pub header_timeouts: AtomicU64,
    pub idle_timeouts: AtomicU64,
    /// `accept` failures (no descriptor left, say): the server pauses
    /// briefly and tries again.
    pub accept_errors: AtomicU64,
    refusing: AtomicU64,
}

impl Default for ConnectionStats {
    fn default() -> ConnectionStats {
        ConnectionStats {
            open: watch::Sender::new(0),
            bound: AtomicU64::new(0),
            max: AtomicU64::new(0),
            descriptor_limit: AtomicU64::new(0),
            reserved: AtomicU64::new(0),
            header_read_timeout_ms: AtomicU64::new(0),
            idle_timeout_ms: AtomicU64::new(0),
            max_body_bytes: AtomicU64::new(0),
            max_batch_leaves: AtomicU64::new(0),
            max_leaves_per_read: AtomicU64::new(0),
            durability_timeout_ms: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            header_timeouts: AtomicU64::new(0),
            idle_timeouts: AtomicU64::new(0),
            accept_errors: AtomicU64::new(0),
            refusing: AtomicU64::new(0),
        }
    }
}

impl ConnectionStats {
    /// Connections open now.
    pub fn open(&self) -> u64 {
        *self.open.borrow()
    }

    /// Takes a connection slot if the bound allows.
    fn try_open(self: &Arc<Self>) -> Option<OpenSlot> {
        let bound = self.bound.load(Ordering::Relaxed);
        self.open
            .send_if_modified(|open| {
                if *open >= bound {
                    return false;
                }
                *open += 1;
                true
            })
            .then(|| OpenSlot(Arc::clone(self)))
    }

    /// Sets the limits at start; an error when the descriptor limit
    /// leaves no room for a connection.
    pub fn configure(&self, config: &ServerConfig) -> Result<(), String> {
        let limits = &Limits::of(config);
        if limits.header_read_timeout.is_zero() || limits.idle_timeout.is_zero() {
            return Err("the header-read and idle timeouts must be above 0".into());
        }
        let as_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        self.max_body_bytes
            .store(as_u64(config.max_body_bytes), Ordering::Relaxed);
        self.max_batch_leaves
            .store(as_u64(config.max_batch_leaves), Ordering::Relaxed);
        self.max_leaves_per_read
            .store(as_u64(config.max_leaves_per_read), Ordering::Relaxed);
        self.durability_timeout_ms.store(
            config.durability_timeout.as_millis() as u64,
            Ordering::Relaxed,
        );
        self.header_read_timeout_ms.store(
            limits.header_read_timeout.as_millis() as u64,
            Ordering::Relaxed,
        );
        self.idle_timeout_ms
            .store(limits.idle_timeout.as_millis() as u64, Ordering::Relaxed);
        let budget = Budget::now(0);
        let asked = limits.max_connections.map(|n| n as u64);
        let max = match (asked, budget) {
            (_, Some(budget)) if budget.room == 0 => {
                return Err(format!(
                    "the open-file limit ({}) leaves no descriptor for connections: {} are open (the database's files and the server's own) and {} are kept for the database's growth; raise it (ulimit -n)",
                    budget.limit, budget.open, budget.reserved
                ));
            }
            (Some(asked), Some(budget)) if asked > budget.room => {
                tracing::warn!(
                    asked,
                    allowed = budget.room,
                    limit = budget.limit,
                    "--max-connections is more than the open-file limit leaves room for: using the lower bound (raise ulimit -n for more)"
                );
                budget.room
            }
            (Some(asked), _) => asked,
            (None, Some(budget)) => budget.room.min(DEFAULT_MAX_CONNECTIONS as u64),
            (None, None) => DEFAULT_MAX_CONNECTIONS as u64,
        };
        if let Some(budget) = budget {
            self.descriptor_limit.store(budget.limit, Ordering::Relaxed);
            self.reserved.store(budget.reserved, Ordering::Relaxed);
        }
        self.max.store(max, Ordering::Relaxed);
        self.bound.store(max, Ordering::Relaxed);
        Ok(())
    }

    /// Lowers (or raises, up to the maximum) the bound to what the
    /// descriptors open now leave: the database opens files as it grows.
    fn rebudget(&self) {
        let connections = self.open() + self.refusing.load(Ordering::Relaxed);
        if let Some(budget) = Budget::now(connections) {
            let max = self.max.load(Ordering::Relaxed);
            self.bound.store(budget.room.min(max), Ordering::Relaxed);
        }
    }

    async fn wait_closed(&self) {
        let mut open = self.open.subscribe();
        let _ = open.wait_for(|&n| n == 0).await;
    }
}

/// The descriptors connections may use now.
#[derive(Clone, Copy, Debug)]
struct Budget {
    limit: u64,
    /// Open now, connections aside.
    open: u64,
    reserved: u64,
    /// What is left for connections.
    room: u64,
}

impl Budget {
    /// From the process's limit and open descriptors, `connections` of
    /// which are connections; `None` where the platform does not say.
    fn now(connections: u64) -> Option<Budget> {
        let limit = process::descriptor_limit()?;
        let open = process::open_descriptors()?.saturating_sub(connections);
        let reserved = reserved_descriptors(limit);
        Some(Budget {
            limit,
            open,
            reserved,
            room: limit.saturating_sub(open + reserved),
        })
    }
}

/// A connection's place in the count, given back when it closes.
struct OpenSlot(Arc<ConnectionStats>);

impl Drop for OpenSlot {
    fn drop(&mut self) {
        self.0.open.send_modify(|open| *open -= 1);
    }
}

/// Accepts connections on `listener` and serves `router` on each until
/// `shutdown` completes; then stops accepting, lets every connection
/// finish the request it is in (closing idle ones at once) and returns
/// once all are closed.
pub(crate) async fn serve<F>(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    stats: Arc<ConnectionStats>,
    shutdown: F,
) -> io::Result<()>
where
    F: Future<Output = ()> + Send,
{
    let (closing, _) = watch::channel(false);
    let mut rebudget = tokio::time::interval(Duration::from_secs(1));
    rebudget.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_accept_warning: Option<Instant> = None;
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            _ = rebudget.tick() => {
                stats.rebudget();
                continue;
            }
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                accept_failed(&stats, &error, &mut last_accept_warning).await;
                continue;
            }
        };
        stats.accepted.fetch_add(1, Ordering::Relaxed);
        // Answers are small and written at once: do not let Nagle hold
        // them back waiting for the client's ACK.
        let _ = stream.set_nodelay(true);
        let Some(slot) = stats.try_open() else {
            refuse(stream, &stats);
            continue;
        };
        tokio::spawn(connection(
            stream,
            router.clone(),
            limits,
            closing.subscribe(),
            Arc::clone(&stats),
            slot,
        ));
    }
    drop(listener);
    closing.send_replace(true);
    stats.wait_closed().await;
    Ok(())
}

/// An `accept` that failed: a connection the client gave up on is passed
/// over; anything else (no descriptor left, no memory) pauses the loop
/// briefly, since trying again at once would fail again at once.
async fn accept_failed(stats: &ConnectionStats, error: &io::Error, warned: &mut Option<Instant>) {
    if matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    ) {
        return;
    }
    stats.accept_errors.fetch_add(1, Ordering::Relaxed);
    if warned.is_none_or(|at| at.elapsed() >= Duration::from_secs(10)) {
        *warned = Some(Instant::now());
        tracing::warn!(
            error = %error,
            open = stats.open(),
            "cannot accept connections (retrying every 50 ms; counted in cairn_http_accept_errors_total)"
        );
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// Answers a connection over the bound `503` with `Retry-After`, without
/// waiting for its request, and closes it (at most [`REFUSING_MAX`] at
/// once; past that it is closed unanswered).
fn refuse(stream: TcpStream, stats: &Arc<ConnectionStats>) {
    stats.refused.fetch_add(1, Ordering::Relaxed);
    let taken = stats
        .refusing
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < REFUSING_MAX).then_some(n + 1)
        });
    if taken.is_err() {
        stats.dropped.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let stats = Arc::clone(stats);
    let open = stats.open();
    tokio::spawn(async move {
        let mut stream = stream;
        let body = format!(
            "{{\"error\":\"the server has {open} connections open, as many as it allows: try again in {FULL_RETRY_AFTER_SECONDS} s\"}}"
        );
        let answer = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: {FULL_RETRY_AFTER_SECONDS}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = tokio::time::timeout(REFUSAL_LINGER, async {
            stream.write_all(answer.as_bytes()).await?;
            stream.shutdown().await?;
            // Read what the client sends until it closes, so that the
            // close is not a reset that could discard the answer.
            let mut sink = [0u8; 4096];
            while stream.read(&mut sink).await? > 0 {}
            Ok::<(), io::Error>(())
        })
        .await;
        stats.refusing.fetch_sub(1, Ordering::AcqRel);
    });
}

/// Serves one connection until it closes, times out, or (after the
/// shutdown began) finishes its request.
async fn connection(
    stream: TcpStream,
    router: Router,
    limits: Limits,
    mut closing: watch::Receiver<bool>,
    stats: Arc<ConnectionStats>,
    _slot: OpenSlot,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Tracked {
        stream,
        activity: Arc::clone(&activity),
    });
    let idle = limits.idle_timeout;
    let stalls = Arc::clone(&stats);
    let tower = TowerToHyperService::new(router);
    let service = service_fn(move |request: hyper::Request<Incoming>| {
        let request = request.map(|body| IdleBody::new(body, idle, Arc::clone(&stalls)));
        hyper::service::Service::call(&tower, request)
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let mut draining = false;
    if *closing.borrow_and_update() {
        conn.as_mut().graceful_shutdown();
        draining = true;
    }
    loop {
        tokio::select! {
            served = conn.as_mut() => {
                if let Err(error) = served {
                    if error.is_timeout() {
                        stats.header_timeouts.fetch_add(1, Ordering::Relaxed);
                    } else {
                        tracing::debug!(error = %error, "connection ended with an error");
                    }
                }
                return;
            }
            _ = closing.changed(), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
            () = activity.idle(idle) => {
                stats.idle_timeouts.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(idle_seconds = idle.as_secs_f64(), "closing a connection that moved nothing");
                return;
            }
        }
    }
}

/// When a connection last moved a byte, and whether its last write found
/// the client's side full (the client does not read).
#[derive(Debug)]
struct Activity {
    start: Instant,
    /// Milliseconds after `start` of the last read or write that moved
    /// bytes.
    last_ms: AtomicU64,
    /// The last write could not go (the socket's buffer is full).
    blocked: AtomicBool,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            blocked: AtomicBool::new(false),
        }
    }

    fn moved(&self) {
        let ms = self.start.elapsed().as_millis() as u64;
        self.last_ms.fetch_max(ms, Ordering::Relaxed);
    }

    fn wrote(&self) {
        self.blocked.store(false, Ordering::Relaxed);
        self.moved();
    }

    /// A write that could not go: the client's side is full.
    fn blocked(&self) {
        self.blocked.store(true, Ordering::Relaxed);
    }

    /// Completes once a write has been waiting for the client for `limit`
    /// with nothing moved meanwhile.
    async fn idle(&self, limit: Duration) {
        loop {
            let last = self.last_ms.load(Ordering::Relaxed);
            let deadline = self.start + Duration::from_millis(last) + limit;
            tokio::time::sleep_until(deadline).await;
            if !self.blocked.load(Ordering::Relaxed) {
                // Waiting for a request (the header timeout's business),
                // reading its body (the body's own timeout) or in a
                // handler: look again a period later.
                tokio::time::sleep(limit).await;
                continue;
            }
            if self.last_ms.load(Ordering::Relaxed) == last {
                return;
            }
        }
    }
}

/// The connection's socket, noting every read and write that moves bytes.
struct Tracked {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.moved();
        }
        polled
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        match polled {
            Poll::Ready(Ok(n)) if n > 0 => self.activity.wrote(),
            Poll::Pending => self.activity.blocked(),
            _ => {}
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        match polled {
            Poll::Ready(Ok(n)) if n > 0 => self.activity.wrote(),
            Poll::Pending => self.activity.blocked(),
            _ => {}
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// A request body that fails once nothing of it arrives for its limit
/// (counted from the handler's first read, then from each part).
struct IdleBody {
    inner: Incoming,
    limit: Duration,
    /// Armed at the first poll.
    timer: Option<Pin<Box<Sleep>>>,
    stats: Arc<ConnectionStats>,
}

impl IdleBody {
    fn new(inner: Incoming, limit: Duration, stats: Arc<ConnectionStats>) -> IdleBody {
        IdleBody {
            inner,
            limit,
            timer: None,
            stats,
        }
    }
}

/// The error a stalled request body ends with.
#[derive(Debug)]
struct BodyStalled(Duration);

impl std::fmt::Display for BodyStalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no part of the request body arrived for {} s (the server's idle timeout)",
            self.0.as_secs_f64()
        )
    }
}

impl std::error::Error for BodyStalled {}

impl Body for IdleBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        let limit = this.limit;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                if let Some(timer) = &mut this.timer {
                    timer.as_mut().reset(Instant::now() + limit);
                }
                Poll::Ready(frame.map(|result| result.map_err(Into::into)))
            }
            Poll::Pending => {
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        this.stats.idle_timeouts.fetch_add(1, Ordering::Relaxed);
                        Poll::Ready(Some(Err(Box::new(BodyStalled(limit)))))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
