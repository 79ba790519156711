//! The README's command-line examples, run as written: each ```console
//! block in a fresh empty directory with the built `cairn` first on PATH,
//! every `$ ` command through bash, its output (stdout and stderr) compared
//! with the lines the README shows under it, when it shows any. A `# exit N`
//! comment gives the expected exit status (else 0). A command ending in `&`
//! is a server: started in the background, its first line compared, its
//! `127.0.0.1:7878` replaced by the address it got (port 0, so parallel
//! runs never collide), and `kill %1` stops it with SIGTERM. ```sh blocks
//! are run too where they run `cairn` (`cargo run --bin cairn --` becomes
//! the built binary); the cargo builds, test runs and CI gate they also
//! show are left to CI itself.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The README's example address, replaced by the server's real one.
const EXAMPLE_ADDR: &str = "127.0.0.1:7878";

#[derive(Debug)]
struct Example {
    /// The README line the command starts on (for messages).
    line: usize,
    command: String,
    expected: Vec<String>,
}

#[derive(Debug)]
struct Block {
    line: usize,
    examples: Vec<Example>,
}

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(path).expect("README.md")
}

/// The runnable blocks: console blocks as written, and the `cairn`
/// commands of sh blocks.
fn blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((number, line)) = lines.next() {
        let kind = line.trim();
        if kind != "```console" && kind != "```sh" {
            continue;
        }
        let mut block = Block {
            line: number + 1,
            examples: Vec::new(),
        };
        for (number, line) in lines.by_ref() {
            if line.trim() == "```" {
                break;
            }
            let continues = |examples: &[Example]| {
                examples
                    .last()
                    .is_some_and(|e: &Example| e.command.ends_with('\\'))
            };
            if continues(&block.examples) {
                let last = block.examples.last_mut().unwrap();
                last.command.pop();
                last.command.push_str(line.trim_start());
            } else if kind == "```sh" {
                let command = line.trim();
                let cairn = command.strip_prefix("cargo run --release --bin cairn -- ");
                if let Some(rest) = cairn.or_else(|| command.strip_prefix("cairn ")) {
                    block.examples.push(Example {
                        line: number + 1,
                        command: format!("cairn {rest}"),
                        expected: Vec::new(),
                    });
                }
            } else if let Some(command) = line.strip_prefix("$ ") {
                block.examples.push(Example {
                    line: number + 1,
                    command: command.to_owned(),
                    expected: Vec::new(),
                });
            } else if let Some(last) = block.examples.last_mut() {
                last.expected.push(line.to_owned());
            } else {
                panic!("README.md:{}: output before any command", number + 1);
            }
        }
        if !block.examples.is_empty() {
            blocks.push(block);
        }
    }
    blocks
}

/// The status a `# ... exit N` comment announces, else 0.
fn expected_code(command: &str) -> i32 {
    let Some((_, comment)) = command.rsplit_once(" # ") else {
        return 0;
    };
    let words: Vec<&str> = comment.split_whitespace().collect();
    words
        .windows(2)
        .find(|pair| pair[0] == "exit")
        .and_then(|pair| pair[1].trim_end_matches([',', ';']).parse().ok())
        .unwrap_or(0)
}

fn shell(command: &str, dir: &Path) -> Command {
    let bin = Path::new(env!("CARGO_BIN_EXE_cairn")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut shell = Command::new("bash");
    shell
        .args(["--norc", "--noprofile", "-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("RUST_BACKTRACE");
    shell
}

/// A background server, killed if a failed assertion leaves it running.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn stop(server: &mut Option<Server>, at: &str) {
    if let Some(Server(child)) = server.as_mut() {
        let pid = child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let status = child.wait().unwrap();
        assert!(status.success(), "{at}: the server exited with {status}");
    }
    *server = None;
}

fn run_block(block: &Block) {
    let dir = tempfile::tempdir().unwrap();
    let mut server: Option<Server> = None;
    let mut addr = EXAMPLE_ADDR.to_owned();
    for example in &block.examples {
        let at = format!("README.md:{}", example.line);
        let command = example.command.replace(EXAMPLE_ADDR, &addr);
        let expected: Vec<String> = example
            .expected
            .iter()
            .map(|line| line.replace(EXAMPLE_ADDR, &addr))
            .collect();
        if command.split_whitespace().next() == Some("curl")
            && Command::new("curl").arg("--version").output().is_err()
        {
            eprintln!("{at}: no curl here, skipped");
            continue;
        }
        if command.starts_with("kill %1") {
            stop(&mut server, &at);
            continue;
        }
        if let Some(background) = command.trim_end().strip_suffix('&') {
            let background = background.replace(EXAMPLE_ADDR, "127.0.0.1:0");
            let mut child = shell(&format!("exec {background}"), dir.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut first = String::new();
            BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut first)
                .unwrap();
            let got = first.trim().strip_prefix("listening on ");
            addr = got.unwrap_or_else(|| panic!("{at}: {first:?}")).to_owned();
            server = Some(Server(child));
            let want = example.expected.join("\n").replace(EXAMPLE_ADDR, &addr);
            assert_eq!(first.trim_end(), want, "{at}: {command}");
            continue;
        }
        // On its own line: a trailing comment must not swallow the redirect.
        let output = shell(&format!("{{ {command}\n}} 2>&1"), dir.path())
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(expected_code(&command)),
            "{at}: {command}\n{shown}"
        );
        if !expected.is_empty() {
            assert_eq!(shown.trim_end(), expected.join("\n"), "{at}: {command}");
        }
    }
    stop(&mut server, &format!("README.md:{}", block.line));
}

#[test]
fn readme_cli_examples_run_as_written() {
    let blocks = blocks(&readme());
    let commands: usize = blocks.iter().map(|b| b.examples.len()).sum();
    // The CLI, file-based, server and demo blocks at least.
    assert!(blocks.len() >= 4 && commands >= 25, "{blocks:#?}");
    for block in &blocks {
        run_block(block);
    }
}

#[test]
fn example_parsing_reads_commands_outputs_continuations_and_exit_codes() {
    let text = "```console\n$ printf 'a\\n'   # exit 0\na\n$ false \\\n    --x   # exit 1\n```\n```sh\ncargo test --workspace\ncargo run --release --bin cairn -- demo\n```\n";
    let blocks = blocks(text);
    assert_eq!(blocks.len(), 2);
    let first = &blocks[0].examples;
    assert_eq!(first.len(), 2);
    assert_eq!(first[0].expected, ["a"]);
    assert_eq!(first[1].command, "false --x   # exit 1");
    assert_eq!(expected_code(&first[1].command), 1);
    assert_eq!(expected_code(&first[0].command), 0);
    assert_eq!(blocks[1].examples.len(), 1);
    assert_eq!(blocks[1].examples[0].command, "cairn demo");
}

/// Where `text` speaks of the work's history rather than to a user: an
/// issue number, a work session, the team's internal guide.
fn history_talk(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut found = Vec::new();
    for (at, _) in lower.match_indices("issue ") {
        let after = &lower[at + "issue ".len()..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            found.push(format!("issue {}", &after[..digits]));
        }
    }
    // Spelled in two pieces so that this file does not cite the guide.
    let guide = ["shared", "/guide"].concat();
    for word in ["session", guide.as_str()] {
        if lower.contains(word) {
            found.push(word.to_owned());
        }
    }
    found
}

#[test]
fn user_documentation_and_help_carry_no_work_history() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![
        root.join("README.md"),
        root.join("crates/server/README.md"),
        root.join("test-vectors/README.md"),
    ];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let found = history_talk(&text);
        assert!(found.is_empty(), "{}: {found:?}", file.display());
    }
    let help = crate::support::cairn(&["--help"]).success();
    assert!(history_talk(&help).is_empty(), "cairn --help");
    let listed = help.split_once("\nCommands:\n").unwrap().1;
    let names = listed.lines().take_while(|l| !l.trim().is_empty());
    for name in names.filter_map(|l| l.split_whitespace().next()) {
        if name == "help" {
            continue;
        }
        let text = crate::support::cairn(&[name, "--help"]).success();
        let found = history_talk(&text);
        assert!(found.is_empty(), "cairn {name} --help: {found:?}");
    }
    assert_eq!(
        history_talk("see Issue 7 of the previous Session"),
        ["issue 7", "session"]
    );
}
