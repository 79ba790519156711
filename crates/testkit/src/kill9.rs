//! The kill -9 harness the crash tests of the store and the database share.
//!
//! A crash test is two tests of one test binary: a *child* test that does
//! nothing unless its environment names a directory, and a *parent* that
//! starts the binary again to run only the child, kills it with SIGKILL at
//! a random moment, reopens what it left and checks it. [`Victim`] is that
//! child process: it starts it, notices when it has opened its database
//! (the child prints a line `opened`), kills it, and hands back what it
//! printed. [`AckFile`] is how a child acknowledges: a line counts only
//! once it is on disk, so a kill can never take an acknowledgement back.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::thread::JoinHandle;
use std::time::Duration;

/// A child test process started to be killed.
#[derive(Debug)]
pub struct Victim {
    name: String,
    child: Child,
    stdout: JoinHandle<Vec<String>>,
    stderr: JoinHandle<String>,
    opened: Receiver<()>,
}

impl Victim {
    /// Starts test `name` (its path in the test binary, such as
    /// `crash::crash_child`) of the running test binary, alone and with
    /// its output uncaptured, with `envs` added to the environment.
    ///
    /// # Panics
    /// If the process cannot be started.
    pub fn start<I, K, V>(name: &str, envs: I) -> Victim
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let exe = std::env::current_exe().expect("the test binary's path");
        let mut child = Command::new(exe)
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .envs(envs)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let (opened_tx, opened) = channel();
        let stdout = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .map(|line| {
                    let line = own_line(&line).to_owned();
                    if line == "opened" {
                        let _ = opened_tx.send(());
                    }
                    line
                })
                .collect()
        });
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Victim {
            name: name.to_owned(),
            child,
            stdout,
            stderr,
            opened,
        }
    }

    /// Waits until the child printed `opened`, at most `timeout`: whether
    /// it did.
    pub fn opened(&self, timeout: Duration) -> bool {
        self.opened.recv_timeout(timeout).is_ok()
    }

    /// Kills the child with SIGKILL and returns every line it printed (a
    /// line the kill cut short included).
    ///
    /// # Panics
    /// If the child ended by itself before the kill (with its standard
    /// error in the message): a crash test whose child stopped early tests
    /// nothing.
    pub fn kill(mut self) -> Vec<String> {
        self.child.kill().expect("SIGKILL the child");
        let status = self.child.wait().expect("reap the child");
        let stdout = self.stdout.join().expect("the stdout reader");
        let stderr = self.stderr.join().expect("the stderr reader");
        assert_eq!(
            status.signal(),
            Some(9),
            "{} ended by itself ({status}) before it was killed:\n{stderr}",
            self.name
        );
        stdout
    }
}

/// A line of a child's output without what libtest printed before it on
/// the same line (`test crash::crash_child ... ` precedes the first one).
fn own_line(line: &str) -> &str {
    line.rsplit_once(" ... ").map_or(line, |(_, ours)| ours)
}

/// An append-only file of acknowledgements: what [`AckFile::record`]
/// wrote is on disk before it returns.
#[derive(Debug)]
pub struct AckFile(File);

impl AckFile {
    /// Opens (creating) the file at `path` for appending.
    ///
    /// # Panics
    /// If it cannot be opened.
    pub fn open(path: impl AsRef<Path>) -> AckFile {
        let path = path.as_ref();
        AckFile(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        )
    }

    /// Appends `lines` (each ending in a newline) and syncs them to disk.
    ///
    /// # Panics
    /// If the write or the sync fails.
    pub fn record(&mut self, lines: &str) {
        debug_assert!(lines.is_empty() || lines.ends_with('\n'));
        self.0
            .write_all(lines.as_bytes())
            .expect("write acknowledgements");
        self.0.sync_data().expect("sync acknowledgements");
    }
}

/// The complete lines of an acknowledgement file (a last line the kill
/// cut short is not one; an absent file has none).
pub fn acknowledged_lines(path: impl AsRef<Path>) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete.lines().map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_childs_line_loses_libtests_prefix_only() {
        assert_eq!(own_line("test crash::crash_child ... opened"), "opened");
        assert_eq!(own_line("ack 12"), "ack 12");
        assert_eq!(own_line("append 3 ab 4"), "append 3 ab 4");
    }

    #[test]
    fn only_complete_acknowledgements_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acks");
        assert!(acknowledged_lines(&path).is_empty());
        let mut acks = AckFile::open(&path);
        acks.record("durable 3\n");
        acks.record("");
        acks.record("durable 5\nrollback 4\n");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"durable 9")
            .unwrap();
        assert_eq!(
            acknowledged_lines(&path),
            ["durable 3", "durable 5", "rollback 4"]
        );
    }
}
