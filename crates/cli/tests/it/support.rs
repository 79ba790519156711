//! Running the binary and making inputs.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use cairn_core::hex::to_hex;
use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig};

/// What one run of `cairn` did.
#[derive(Debug)]
pub struct Run {
    pub args: Vec<String>,
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// Runs `cairn args` with empty stdin.
pub fn cairn(args: &[&str]) -> Run {
    cairn_stdin(args, b"")
}

/// Runs `cairn args` with `stdin` as its standard input.
pub fn cairn_stdin(args: &[&str], stdin: &[u8]) -> Run {
    cairn_env(args, stdin, &[])
}

/// Runs `cairn args` with `stdin` and the environment variables `env` set.
pub fn cairn_env(args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(args)
        .envs(env.iter().copied())
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cairn");
    let mut pipe = child.stdin.take().expect("stdin pipe");
    let input = stdin.to_vec();
    // Write from another thread: a large input must not deadlock against
    // the child filling its stdout pipe. The child may exit without reading.
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let output = child.wait_with_output().expect("wait for cairn");
    writer.join().expect("stdin writer");
    Run {
        args: args.iter().map(|s| s.to_string()).collect(),
        code: output
            .status
            .code()
            .expect("cairn exited normally, not by a signal"),
        stdout: output.stdout,
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

impl Run {
    /// Stdout as text.
    pub fn out(&self) -> String {
        String::from_utf8(self.stdout.clone()).expect("stdout is UTF-8")
    }

    /// Asserts success with nothing on stderr; returns stdout as text.
    #[track_caller]
    pub fn success(&self) -> String {
        assert_eq!(
            self.code, 0,
            "cairn {:?} failed: {}",
            self.args, self.stderr
        );
        assert_eq!(self.stderr, "", "cairn {:?} wrote to stderr", self.args);
        self.out()
    }

    /// Asserts exit `code` with nothing on stdout and exactly one line on
    /// stderr starting with `prefix` (`"error: "` or `"invalid: "`); returns it.
    #[track_caller]
    pub fn fails(&self, code: i32, prefix: &str) -> String {
        assert_eq!(
            self.code,
            code,
            "cairn {:?}: want exit {code}, stdout {:?}, stderr {:?}",
            self.args,
            String::from_utf8_lossy(&self.stdout),
            self.stderr
        );
        assert!(
            self.stdout.is_empty(),
            "cairn {:?} wrote to stdout: {:?}",
            self.args,
            self.out()
        );
        let line = self
            .stderr
            .strip_suffix('\n')
            .unwrap_or_else(|| panic!("stderr does not end in a newline: {:?}", self.stderr));
        assert!(
            !line.contains('\n'),
            "cairn {:?}: stderr is more than one line: {:?}",
            self.args,
            self.stderr
        );
        assert!(
            line.starts_with(prefix),
            "cairn {:?}: stderr {line:?} does not start with {prefix:?}",
            self.args
        );
        assert!(
            !line.contains("panicked"),
            "cairn {:?} panicked: {line}",
            self.args
        );
        line.to_owned()
    }

    /// Asserts a failure with exit `code` reported as `error: `, mentioning
    /// every one of `needles`; returns the line.
    #[track_caller]
    pub fn error(&self, code: i32, needles: &[&str]) -> String {
        let line = self.fails(code, "error: ");
        for needle in needles {
            assert!(
                line.contains(needle),
                "cairn {:?}: {line:?} does not mention {needle:?}",
                self.args
            );
        }
        line
    }

    /// Asserts a rejected proof (exit 1, `invalid: `) mentioning `needle`.
    #[track_caller]
    pub fn invalid(&self, needle: &str) -> String {
        let line = self.fails(1, "invalid: ");
        assert!(
            line.contains(needle),
            "cairn {:?}: {line:?} does not mention {needle:?}",
            self.args
        );
        line
    }
}

/// A temporary directory holding input files.
pub struct Dir(tempfile::TempDir);

impl Dir {
    pub fn new() -> Dir {
        Dir(tempfile::tempdir().expect("create temp dir"))
    }

    /// Writes `bytes` to `name` in the directory; returns its path as a string.
    pub fn file(&self, name: &str, bytes: impl AsRef<[u8]>) -> String {
        let path = self.path(name);
        std::fs::write(&path, bytes).expect("write temp file");
        path
    }

    /// The path of `name` in the directory (which need not exist).
    pub fn path(&self, name: &str) -> String {
        let path: PathBuf = self.0.path().join(name);
        path.to_str().expect("temp paths are UTF-8").to_owned()
    }
}

/// Leaves valid under every hash (Poseidon included).
pub fn leaves(count: usize) -> Vec<Hash> {
    cairn_testkit::leaves(7, count)
}

/// `leaves` as raw bytes.
pub fn bin(leaves: &[Hash]) -> Vec<u8> {
    leaves.as_flattened().to_vec()
}

/// `leaves` one 0x-hex per line.
pub fn hex(leaves: &[Hash]) -> String {
    leaves.iter().map(|leaf| to_hex(leaf) + "\n").collect()
}

pub fn arity(n: u64) -> Arity {
    Arity::new(n).expect("test arity")
}

/// The tree the core builds over `leaves`.
pub fn tree(n: u64, hash: HashKind, leaves: &[Hash]) -> LeanImt {
    LeanImt::from_leaves(TreeConfig::new(arity(n), hash), leaves).expect("core builds the tree")
}

/// The core's root over `leaves`, as hex (`leaves` must be non-empty).
pub fn root_hex(n: u64, hash: HashKind, leaves: &[Hash]) -> String {
    to_hex(&tree(n, hash, leaves).root().expect("non-empty tree"))
}

impl Run {
    /// Asserts success with nothing on stderr; returns stdout parsed as one
    /// line of JSON.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        let out = self.success();
        assert!(
            out.ends_with('\n') && out.matches('\n').count() == 1,
            "cairn {:?}: JSON is not one line: {out:?}",
            self.args
        );
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("cairn {:?}: stdout is not JSON ({e}): {out:?}", self.args))
    }
}

/// `cairn init DIR --arity n --hash h` and any `extra` options, asserted to succeed.
pub fn init(dir: &str, n: u64, hash: HashKind, extra: &[&str]) {
    let n = n.to_string();
    let mut args = vec!["init", dir, "--arity", &n, "--hash", hash.name()];
    args.extend(extra);
    cairn(&args).success();
}

/// `cairn ingest DIR -` of `leaves` as binary on stdin, with `extra` options.
pub fn ingest(dir: &str, leaves: &[Hash], extra: &[&str]) -> Run {
    let mut args = vec!["ingest", dir];
    args.extend(extra);
    args.push("-");
    cairn_stdin(&args, &bin(leaves))
}
