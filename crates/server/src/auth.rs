//! The write token: `Authorization: Bearer <token>`, compared in constant
//! time (for a given length: `subtle` stops early only when the lengths
//! differ, which reveals the token's length and nothing else). Neither the
//! expected nor the presented token is ever put in a message or a log.

use axum::http::{HeaderMap, StatusCode, header};
use subtle::ConstantTimeEq as _;

use crate::config::ServerConfig;
use crate::error::ApiError;

/// Whether writes are refused because the server listens beyond loopback
/// with no write token (and `--allow-open-writes` was not given): a
/// container's default address would otherwise let anyone append, roll
/// back and finalize.
pub(crate) fn open_writes_refused(config: &ServerConfig) -> bool {
    config.token.is_none() && !config.allow_open_writes && !config.listen.ip().is_loopback()
}

/// Checks a write request against the configured token (`None`: every
/// request may write).
pub(crate) fn check_write(expected: Option<&str>, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(expected) = expected else {
        return Ok(());
    };
    let refuse = |message: &str| Err(ApiError::new(StatusCode::UNAUTHORIZED, message));
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return refuse(
            "missing Authorization header: writes on this server need `Authorization: Bearer <token>`",
        );
    };
    let value = value.as_bytes();
    let scheme_len = "Bearer ".len();
    let presented = match value.get(..scheme_len) {
        Some(scheme) if scheme.eq_ignore_ascii_case(b"bearer ") => {
            value.get(scheme_len..).unwrap_or_default()
        }
        _ => {
            return refuse("the Authorization header must use the Bearer scheme: `Bearer <token>`");
        }
    };
    if bool::from(expected.as_bytes().ct_eq(trim_spaces(presented))) {
        Ok(())
    } else {
        refuse("the bearer token is not this server's write token")
    }
}

fn trim_spaces(mut bytes: &[u8]) -> &[u8] {
    while let [b' ', rest @ ..] = bytes {
        bytes = rest;
    }
    while let [rest @ .., b' '] = bytes {
        bytes = rest;
    }
    bytes
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn the_bearer_token_is_required_and_compared() {
        let token = Some("s3cret");
        assert!(check_write(None, &HeaderMap::new()).is_ok());
        assert!(check_write(token, &with("Bearer s3cret")).is_ok());
        assert!(check_write(token, &with("bearer  s3cret ")).is_ok());
        for refused in [
            "Bearer s3cre",
            "Bearer s3crett",
            "Basic s3cret",
            "s3cret",
            "Bearer",
        ] {
            let error = check_write(token, &with(refused)).unwrap_err();
            assert_eq!(error.status, StatusCode::UNAUTHORIZED, "{refused}");
            assert!(!error.message.contains("s3cr"), "{}", error.message);
        }
        let error = check_write(token, &HeaderMap::new()).unwrap_err();
        assert!(
            error.message.contains("missing Authorization"),
            "{}",
            error.message
        );
    }
}
