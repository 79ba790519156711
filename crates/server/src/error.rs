//! The server's errors: [`ServerError`] for starting and stopping, and
//! [`ApiError`], what a request gets back: a status and a JSON body
//! `{"error": "..."}` whose message names the refused value.

use std::io;
use std::path::PathBuf;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cairn_db::{DbError, Duplicate, DuplicateOf, ErrorKind};
use serde::Serialize;

/// Why the server could not start, or did not stop cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// Opening, flushing, checkpointing or closing the database failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// The operating system's error.
        source: io::Error,
    },
    /// The token file is missing or unusable.
    #[error("token file {path}: {reason}")]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it (never the token itself).
        reason: String,
    },
    /// Another operating-system failure (the runtime, signal handlers,
    /// the accept loop).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The operating system's error.
        source: io::Error,
    },
    /// The signer key file is missing or unusable.
    #[error(transparent)]
    SignerKey(#[from] cairn_note::KeyError),
    /// An option's value the server cannot use (such as a `--cors-origin`).
    #[error("{0}")]
    Usage(String),
    /// A background task still held the database after the runtime stopped.
    #[error("the database is still in use after shutdown: it was not closed")]
    StillInUse,
}

/// The message of a 5xx answer, for the log.
#[derive(Clone, Debug)]
pub(crate) struct ServerFailure(pub String);

/// A refused or failed request.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub duplicates: Option<Vec<DuplicateJson>>,
    /// The finalized size, on a refusal to roll back below it.
    pub finalized: Option<u64>,
    /// The tree the refusal is about, in a database of several (an
    /// unknown name, a value refused in a block).
    pub tree: Option<String>,
    /// A stable name for the refusal, where a caller tells refusals of
    /// the same status apart (the refusals of a mutable tree's changes).
    pub code: Option<&'static str>,
}

/// One refused value of a 409 answer.
#[derive(Debug, Serialize)]
pub(crate) struct DuplicateJson {
    /// Its position in the request's batch.
    position: usize,
    /// The value.
    value: String,
    /// The leaf index where the tree already holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<u64>,
    /// The earlier position of the same batch that holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    batch_position: Option<usize>,
}

impl From<&Duplicate> for DuplicateJson {
    fn from(d: &Duplicate) -> DuplicateJson {
        let (index, batch_position) = match d.of {
            DuplicateOf::Leaf(index) => (Some(index), None),
            DuplicateOf::Batch(position) => (None, Some(position)),
        };
        DuplicateJson {
            position: d.position,
            value: cairn_core::hex::to_hex(&d.value),
            index,
            batch_position,
        }
    }
}

#[derive(Serialize)]
struct ErrorJson<'a> {
    error: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    duplicates: Option<&'a [DuplicateJson]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    finalized: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tree: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'a str>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            duplicates: None,
            finalized: None,
            tree: None,
            code: None,
        }
    }

    /// The refusal with its stable name.
    pub fn with_code(mut self, code: &'static str) -> ApiError {
        self.code = Some(code);
        self
    }

    /// The refusal, naming the tree it is about.
    pub fn for_tree(mut self, name: &str) -> ApiError {
        self.tree = Some(name.to_owned());
        self
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    pub fn too_large(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, message)
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    /// The answer to a database error: the one table from what a caller
    /// tells apart ([`DbError::kind`]) to a status. An operation the
    /// database's kind lacks is a bad request here (a parameter, a body);
    /// the routes it lacks altogether are refused by the route table, and
    /// a rollback or finalization to a block by [`ApiError::from_write`].
    pub fn from_db(error: DbError) -> ApiError {
        let message = error.to_string();
        let status = match (error.kind(), error) {
            (_, DbError::Duplicates { duplicates, .. }) => {
                return ApiError {
                    status: StatusCode::CONFLICT,
                    message,
                    duplicates: Some(duplicates.iter().map(DuplicateJson::from).collect()),
                    finalized: None,
                    tree: None,
                    code: None,
                };
            }
            (ErrorKind::BelowFinalized { finalized }, _) => {
                return ApiError {
                    status: StatusCode::CONFLICT,
                    message,
                    duplicates: None,
                    finalized: Some(finalized),
                    tree: None,
                    code: None,
                };
            }
            (ErrorKind::InvalidBatch | ErrorKind::Unsupported, _) => StatusCode::BAD_REQUEST,
            (ErrorKind::NotFound, _) => StatusCode::NOT_FOUND,
            // A block that does not follow the last tagged one, an append a
            // rollback removed before it was acknowledged, an absence asked
            // of a value the tree holds.
            (
                ErrorKind::Duplicate
                | ErrorKind::BlockOrder
                | ErrorKind::RolledBack
                | ErrorKind::Presence,
                _,
            ) => StatusCode::CONFLICT,
            (ErrorKind::Full, _) => StatusCode::INSUFFICIENT_STORAGE,
            (ErrorKind::Unavailable, _) => StatusCode::SERVICE_UNAVAILABLE,
            (_, DbError::NoSet) => StatusCode::NOT_IMPLEMENTED,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, message)
    }

    /// The answer to a database error of a rollback or a finalization: as
    /// [`ApiError::from_db`], but a block target the database's kind
    /// cannot have is not found (it holds no block-tagged head).
    pub fn from_write(error: DbError) -> ApiError {
        let unsupported = error.kind() == ErrorKind::Unsupported;
        let mut answer = ApiError::from_db(error);
        if unsupported {
            answer.status = StatusCode::NOT_FOUND;
        }
        answer
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_string(&ErrorJson {
            error: &self.message,
            duplicates: self.duplicates.as_deref(),
            finalized: self.finalized,
            tree: self.tree.as_deref(),
            code: self.code,
        })
        .unwrap_or_else(|e| unreachable!("serialising plain data: {e}"));
        let mut response = (self.status, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if self.status.is_server_error() {
            // The middleware logs it with the request's id.
            response
                .extensions_mut()
                .insert(ServerFailure(self.message.clone()));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"cairn\""),
            );
        }
        response
    }
}
