//! A real S3-protocol server on 127.0.0.1 for tests: the `s3s-fs` binary
//! (installed by `scripts/install-s3-server`), started on a free port over
//! a temporary directory, stopped (SIGKILL) and restarted on the same port
//! for fault tests, killed when dropped.
//!
//! Without the binary a test is skipped with a printed reason, except
//! under `CI=true`, where a missing server is a failure.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The access key the test server accepts.
pub const ACCESS_KEY: &str = "cairn-test";
/// The secret key the test server accepts.
pub const SECRET_KEY: &str = "cairn-test-secret";

/// A running (or stopped) `s3s-fs` server.
#[derive(Debug)]
pub struct S3Server {
    binary: PathBuf,
    root: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

/// Where the `s3s-fs` binary is: `$CAIRN_S3S_FS`, else on `PATH`, else in
/// `~/.cargo/bin`.
pub fn binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CAIRN_S3S_FS") {
        return Some(PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("s3s-fs"))
            .find(|candidate| candidate.is_file())
    });
    on_path.or_else(|| {
        let home = std::env::var_os("HOME")?;
        let candidate = Path::new(&home).join(".cargo/bin/s3s-fs");
        candidate.is_file().then_some(candidate)
    })
}

impl S3Server {
    /// Starts a server holding one empty bucket, `bucket`; `None` (with the
    /// reason printed) when the binary is missing outside CI.
    ///
    /// # Panics
    /// Under `CI=true` without the binary, or when the server does not
    /// start.
    pub fn start(bucket: &str) -> Option<S3Server> {
        let Some(binary) = binary() else {
            let reason = "s3s-fs is not installed (run scripts/install-s3-server)";
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{reason}: CI=true runs the S3 tests");
            }
            eprintln!("skipped: {reason}");
            return None;
        };
        let root = tempfile::tempdir().expect("a directory for the S3 server");
        std::fs::create_dir(root.path().join(bucket)).expect("the bucket's directory");
        let mut server = S3Server {
            binary,
            root,
            port: 0,
            child: None,
        };
        server.spawn();
        Some(server)
    }

    fn spawn(&mut self) {
        let mut child = Command::new(&self.binary)
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(self.root.path())
            .env("RUST_LOG", "s3s_fs=info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", self.binary.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let marker = "server is running at http://";
        let addr = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(at) = line.find(marker) {
                        break line[at + marker.len()..].trim().to_owned();
                    }
                }
                other => {
                    let _ = child.kill();
                    panic!("s3s-fs exited before listening: {other:?}");
                }
            }
        };
        // Keep draining its output so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        self.port = addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {addr:?}"));
        self.child = Some(child);
        self.wait_listening();
    }

    fn wait_listening(&self) {
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "s3s-fs not accepting on port {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The endpoint URL (`http://127.0.0.1:PORT`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The directory the server keeps its buckets in (bucket `b`'s object
    /// `k` is the file `dir/b/k`).
    pub fn dir(&self) -> &Path {
        self.root.path()
    }

    /// The environment variables a client needs (credentials and region).
    pub fn env(&self) -> [(&'static str, &'static str); 3] {
        [
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
            ("AWS_REGION", "us-east-1"),
        ]
    }

    /// Kills the server (SIGKILL: no goodbye to clients mid-request).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port over the same directory.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.kill();
    }
}
