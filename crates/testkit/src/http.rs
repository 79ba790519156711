//! A static file server on 127.0.0.1 for tests: `GET /PATH` answers the
//! file `DIR/PATH` (200 with its length, 404 when missing), one request
//! per connection. Hand-written because tests need nothing more than what
//! a CDN does for tiles, and counting the requests it answered is the
//! figure the tile tests measure.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A running static server; stops when dropped.
#[derive(Debug)]
pub struct StaticServer {
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
    paths: Arc<Mutex<Vec<String>>>,
}

impl StaticServer {
    /// Serves `dir` on a free port.
    ///
    /// # Panics
    /// If no port can be bound.
    pub fn start(dir: impl Into<PathBuf>) -> StaticServer {
        let dir: PathBuf = dir.into();
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let addr = listener.local_addr().expect("its address");
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicU64::new(0));
        let bytes = Arc::new(AtomicU64::new(0));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (s, r, b) = (Arc::clone(&stop), Arc::clone(&requests), Arc::clone(&bytes));
        let p = Arc::clone(&paths);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (dir, r, b, p) = (dir.clone(), Arc::clone(&r), Arc::clone(&b), Arc::clone(&p));
                std::thread::spawn(move || {
                    if let Some((path, sent)) = answer(&dir, stream) {
                        r.fetch_add(1, Ordering::SeqCst);
                        b.fetch_add(sent, Ordering::SeqCst);
                        p.lock().unwrap_or_else(|e| e.into_inner()).push(path);
                    }
                });
            }
        });
        StaticServer {
            addr,
            stop,
            requests,
            bytes,
            paths,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// GET requests answered so far (200 or 404).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// The paths of the requests answered so far (200 or 404), in the
    /// order their answers were sent.
    pub fn paths(&self) -> Vec<String> {
        self.paths.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Body bytes sent so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::SeqCst)
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Answers one request; its path and the body bytes sent, `None` if it
/// was not a GET or HEAD.
fn answer(dir: &Path, mut stream: TcpStream) -> Option<(String, u64)> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    // Skip the headers.
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 || header.trim().is_empty() {
            break;
        }
    }
    let mut words = line.split_whitespace();
    let (method, target) = (words.next()?, words.next()?);
    if method != "GET" && method != "HEAD" {
        let _ = stream.write_all(
            b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        );
        return None;
    }
    let path = target.split('?').next()?.trim_start_matches('/');
    let safe = !path.split('/').any(|part| part == ".." || part.is_empty());
    let body = if safe {
        std::fs::read(dir.join(path)).ok()
    } else {
        None
    };
    let (status, body) = match body {
        Some(body) => ("200 OK", body),
        None => ("404 Not Found", Vec::new()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\ncontent-type: application/octet-stream\r\naccess-control-allow-origin: *\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).ok()?;
    if method == "GET" {
        stream.write_all(&body).ok()?;
    }
    let sent = if method == "GET" {
        body.len() as u64
    } else {
        0
    };
    Some((path.to_owned(), sent))
}
