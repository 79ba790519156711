//! Helpers shared by the server's tests: an in-process server on
//! 127.0.0.1:0, the server binary as a child process, and an HTTP client
//! that checks every answer's status against the committed OpenAPI
//! document (so a status the code returns but the document omits fails
//! whichever test meets it).

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, LazyLock};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Request};
use cairn_core::hex::to_hex;
use cairn_core::{Arity, Hash, HashKind, LeanImt, MembershipProof, TreeConfig, TreeHead};
use cairn_db::{Database, DbConfig};
use cairn_server::{OPENAPI_JSON, Server, ServerConfig, ServerError};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub const TOKEN: &str = "t0ken-for-tests_9f8e7d";

pub fn tree(n: u64, hash: HashKind) -> TreeConfig {
    TreeConfig::new(Arity::new(n).unwrap(), hash)
}

/// Value `i` of stream `seed` (canonical under Poseidon too).
pub fn leaf(seed: u64, i: u64) -> Hash {
    cairn_testkit::leaf(seed, i)
}

pub fn leaves(seed: u64, count: u64) -> Vec<Hash> {
    (0..count).map(|i| leaf(seed, i)).collect()
}

/// The in-memory tree of `leaves`: the reference for roots and proofs.
pub fn local_tree(config: TreeConfig, leaves: &[Hash]) -> LeanImt {
    LeanImt::from_leaves(config, leaves).unwrap()
}

/// A database in a fresh temporary directory.
pub fn temp_db(config: DbConfig) -> (TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("db"), config).unwrap();
    (dir, db)
}

/// A server running in this test's runtime.
pub struct TestServer {
    pub addr: SocketAddr,
    pub db: Arc<Database>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), ServerError>>>,
    _dir: Option<TempDir>,
}

impl TestServer {
    /// A server for a fresh database of arity `n` under `hash`.
    pub async fn new(n: u64, hash: HashKind) -> TestServer {
        TestServer::with(DbConfig::new(tree(n, hash)), |_| {}).await
    }

    /// A server for a fresh database of `config`, its server config edited
    /// by `edit`.
    pub async fn with(config: DbConfig, edit: impl FnOnce(&mut ServerConfig)) -> TestServer {
        let (dir, db) = temp_db(config);
        let mut server = TestServer::start(db, edit).await;
        server._dir = Some(dir);
        server
    }

    /// A server for `db`.
    pub async fn start(db: Database, edit: impl FnOnce(&mut ServerConfig)) -> TestServer {
        let mut config = ServerConfig::new("127.0.0.1:0".parse().unwrap());
        edit(&mut config);
        let db = Arc::new(db);
        let server = Server::bind(Arc::clone(&db), config).await.unwrap();
        let addr = server.local_addr();
        let (shutdown, signal) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async move {
            // Only an explicit `stop` shuts down: a server dropped with its
            // test is cancelled with the runtime, and must not flush or
            // checkpoint into a temporary directory already removed.
            if signal.await.is_err() {
                std::future::pending::<()>().await;
            }
        }));
        TestServer {
            addr,
            db,
            shutdown: Some(shutdown),
            task: Some(task),
            _dir: None,
        }
    }

    pub fn client(&self) -> Client {
        Client::new(self.addr)
    }

    /// Signals shutdown and waits for the server to finish.
    pub async fn stop(mut self) -> Result<(), ServerError> {
        let _ = self.shutdown.take().unwrap().send(());
        self.task.take().unwrap().await.unwrap()
    }
}

/// An answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("status {}: body {:?}: {e}", self.status, self.text()))
    }

    /// The `error` message of a refusal, checking the body is `{"error": ..}`
    /// and the status is `status`.
    pub fn error(&self, status: u16) -> String {
        assert_eq!(self.status, status, "body: {}", self.text());
        assert_eq!(
            self.headers["content-type"],
            "application/json",
            "{}",
            self.text()
        );
        self.json()["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error message in {}", self.text()))
            .to_owned()
    }

    /// Checks a 200 and returns the JSON body.
    pub fn ok(&self) -> Value {
        assert_eq!(self.status, 200, "body: {}", self.text());
        self.json()
    }
}

/// An HTTP/1.1 client with keep-alive connections to one server.
#[derive(Clone)]
pub struct Client {
    addr: SocketAddr,
    inner: HyperClient<HttpConnector, Full<Bytes>>,
}

impl Client {
    pub fn new(addr: SocketAddr) -> Client {
        Client {
            addr,
            inner: HyperClient::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// Sends a request; an error only if the transport failed.
    pub async fn try_request(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<Reply, String> {
        let mut builder = Request::builder()
            .method(method.clone())
            .uri(format!("http://{}{path}", self.addr));
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder.body(Full::new(Bytes::from(body))).unwrap();
        let response = self
            .inner
            .request(request)
            .await
            .map_err(|e| format!("{method} {path}: {e}"))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{method} {path}: reading the body: {e}"))?
            .to_bytes();
        check_documented(&method, path, status);
        Ok(Reply {
            status,
            headers,
            body,
        })
    }

    pub async fn request(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Reply {
        self.try_request(method, path, headers, body)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.request(Method::GET, path, &[], Vec::new()).await
    }

    pub async fn try_post_json(
        &self,
        leaves: &[Hash],
        token: Option<&str>,
    ) -> Result<Reply, String> {
        let body = serde_json::json!({ "leaves": leaves.iter().map(to_hex).collect::<Vec<_>>() });
        self.try_post("application/json", body.to_string().into_bytes(), token)
            .await
    }

    /// `POST path` with a JSON body, and the token if any.
    pub async fn try_post_to(
        &self,
        path: &str,
        body: &Value,
        token: Option<&str>,
    ) -> Result<Reply, String> {
        let authorization = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![("content-type", "application/json")];
        if let Some(authorization) = &authorization {
            headers.push(("authorization", authorization));
        }
        self.try_request(Method::POST, path, &headers, body.to_string().into_bytes())
            .await
    }

    pub async fn post_to(&self, path: &str, body: &Value, token: Option<&str>) -> Reply {
        self.try_post_to(path, body, token)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// `POST /v1/leaves` of `leaves` tagged with block `number` (and `hash`).
    pub async fn try_post_tagged(
        &self,
        leaves: &[Hash],
        number: u64,
        hash: Option<&Hash>,
        token: Option<&str>,
    ) -> Result<Reply, String> {
        let mut block = serde_json::json!({ "number": number });
        if let Some(hash) = hash {
            block["hash"] = to_hex(hash).into();
        }
        let body = serde_json::json!({
            "leaves": leaves.iter().map(to_hex).collect::<Vec<_>>(),
            "block": block,
        });
        self.try_post_to("/v1/leaves", &body, token).await
    }

    pub async fn post_tagged(
        &self,
        leaves: &[Hash],
        number: u64,
        hash: Option<&Hash>,
        token: Option<&str>,
    ) -> Reply {
        self.try_post_tagged(leaves, number, hash, token)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// `POST /v1/leaves` with `body` of `content_type`, and the token if any.
    async fn try_post(
        &self,
        content_type: &str,
        body: Vec<u8>,
        token: Option<&str>,
    ) -> Result<Reply, String> {
        let authorization = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![("content-type", content_type)];
        if let Some(authorization) = &authorization {
            headers.push(("authorization", authorization));
        }
        self.try_request(Method::POST, "/v1/leaves", &headers, body)
            .await
    }

    pub async fn post_json(&self, leaves: &[Hash], token: Option<&str>) -> Reply {
        self.try_post_json(leaves, token)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    pub async fn try_post_binary(
        &self,
        leaves: &[Hash],
        token: Option<&str>,
    ) -> Result<Reply, String> {
        self.try_post(
            "application/octet-stream",
            leaves.as_flattened().to_vec(),
            token,
        )
        .await
    }

    pub async fn post_binary(&self, leaves: &[Hash], token: Option<&str>) -> Reply {
        self.try_post_binary(leaves, token)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The durable head the server reports.
    pub async fn head(&self) -> TreeHead {
        head_of(&self.get("/v1/root").await.ok())
    }

    /// The membership proof of `index` at `size`, checked against `head`
    /// (which must be the head at `size`).
    pub async fn verified_proof(
        &self,
        config: TreeConfig,
        index: u64,
        head: &TreeHead,
    ) -> MembershipProof {
        let reply = self
            .get(&format!("/v1/proofs/{index}?size={}", head.size))
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let proof = MembershipProof::from_json(reply.text()).unwrap();
        proof
            .verify(config.arity, config.hash, head)
            .unwrap_or_else(|e| panic!("proof of {index} at {head:?}: {e}"));
        proof
    }
}

/// The head in a `GET /v1/root` answer.
pub fn head_of(root: &Value) -> TreeHead {
    TreeHead {
        size: root["size"].as_u64().unwrap(),
        root: root["root"]
            .as_str()
            .map(|r| cairn_core::hex::parse_hash(r).unwrap()),
    }
}

/// The committed OpenAPI document.
pub static DOC: LazyLock<Value> = LazyLock::new(|| serde_json::from_str(OPENAPI_JSON).unwrap());

/// Whether `path` (no query) matches the template `template`.
pub fn matches_template(template: &str, path: &str) -> bool {
    let t: Vec<_> = template.split('/').collect();
    let mut p: Vec<String> = path.split('/').map(str::to_owned).collect();
    // A family's member K is the tree `NAME/K`: one `{name}`.
    if p.len() > 5 && p[..3] == ["", "v1", "trees"] && p[4].bytes().all(|b| b.is_ascii_digit()) {
        let member = p.remove(4);
        p[3] = format!("{}/{member}", p[3]);
    }
    t.len() == p.len()
        && t.iter()
            .zip(&p)
            .all(|(t, p)| (t.starts_with('{') && t.ends_with('}') && !p.is_empty()) || t == p)
}

/// Fails unless the document lists `status` for the route `method path`
/// matches; for a path no route matches the answer must be 404, for a
/// method the path does not take, 405.
fn check_documented(method: &Method, path_and_query: &str, status: u16) {
    let path = path_and_query.split('?').next().unwrap();
    let paths = DOC["paths"].as_object().unwrap();
    let Some((template, operations)) = paths
        .iter()
        .find(|(template, _)| matches_template(template, path))
    else {
        assert_eq!(status, 404, "{method} {path} matches no documented route");
        return;
    };
    let Some(operation) = operations.get(method.as_str().to_lowercase()) else {
        assert_eq!(status, 405, "{method} is not documented on {template}");
        return;
    };
    assert!(
        operation["responses"].get(status.to_string()).is_some(),
        "{method} {template} answered {status}, which openapi.json does not document"
    );
}

/// The server binary, run as a child process.
pub struct ServerProcess {
    child: Option<Child>,
    pub addr: SocketAddr,
}

impl ServerProcess {
    /// Starts `cairn-server DIR --listen 127.0.0.1:0 ARGS..`, its logs
    /// appended to `log`, and waits for its `listening on` line.
    pub fn start(dir: &Path, args: &[&str], log: &Path) -> ServerProcess {
        ServerProcess::spawn(
            Command::new(env!("CARGO_BIN_EXE_cairn-server")),
            dir,
            args,
            log,
        )
    }

    /// [`ServerProcess::start`] with the open-file limit (soft and hard)
    /// lowered to `nofile` for the server alone.
    pub fn start_with_fd_limit(
        dir: &Path,
        args: &[&str],
        log: &Path,
        nofile: u64,
    ) -> ServerProcess {
        let mut command = Command::new("sh");
        command.args([
            "-c",
            &format!("ulimit -n {nofile} && exec \"$0\" \"$@\""),
            env!("CARGO_BIN_EXE_cairn-server"),
        ]);
        ServerProcess::spawn(command, dir, args, log)
    }

    fn spawn(mut command: Command, dir: &Path, args: &[&str], log: &Path) -> ServerProcess {
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap();
        let mut child = command
            .arg(dir)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .env("CAIRN_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(addr) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the server did not start: {line:?}; log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        };
        ServerProcess {
            addr: addr.parse().unwrap(),
            child: Some(child),
        }
    }

    pub fn client(&self) -> Client {
        Client::new(self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// SIGKILL, and reap.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    /// SIGTERM, and wait for the exit.
    pub fn terminate(&mut self) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.child.take().unwrap().wait().unwrap()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
