//! Cross-origin access for browsers (CORS) and the caching headers of
//! answers that never change.
//!
//! Invariant: with no allowed origin configured (the default) this layer
//! adds nothing and answers nothing itself, so the server behaves as if
//! it were absent. `*` grants reads (GET, HEAD) to every origin and never
//! writes; an origin listed by name may also POST (with its token).
#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};

use crate::error::ApiError;

/// Which origins a browser may call the server from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CorsPolicy {
    /// No cross-origin access: no CORS header is ever sent.
    #[default]
    None,
    /// Every origin may read (`*`); none may write.
    AnyReads,
    /// These origins (scheme, host and port, as browsers send them) may
    /// read and write.
    Origins(Vec<String>),
}

impl CorsPolicy {
    /// The policy of `--cors-origin` values: none, `*` alone, or origins
    /// such as `https://app.example.org`.
    pub fn from_origins(origins: &[String]) -> Result<CorsPolicy, String> {
        if origins.is_empty() {
            return Ok(CorsPolicy::None);
        }
        if origins.iter().any(|o| o == "*") {
            if origins.len() > 1 {
                return Err(format!(
                    "--cors-origin '*' grants reads to every origin and cannot be combined with named origins ({})",
                    origins
                        .iter()
                        .filter(|o| *o != "*")
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            return Ok(CorsPolicy::AnyReads);
        }
        for origin in origins {
            check_origin(origin)?;
        }
        Ok(CorsPolicy::Origins(origins.to_vec()))
    }

    /// The `Access-Control-Allow-Origin` value for a request from `origin`
    /// with `method`, if the policy allows it.
    fn allow(&self, origin: &str, method: &Method) -> Option<HeaderValue> {
        let read = method == Method::GET || method == Method::HEAD;
        match self {
            CorsPolicy::None => None,
            CorsPolicy::AnyReads => read.then(|| HeaderValue::from_static("*")),
            CorsPolicy::Origins(origins) => {
                let write = method == Method::POST;
                if (read || write) && origins.iter().any(|o| o == origin) {
                    HeaderValue::from_str(origin).ok()
                } else {
                    None
                }
            }
        }
    }

    fn methods(&self) -> &'static str {
        match self {
            CorsPolicy::Origins(_) => "GET, HEAD, POST",
            _ => "GET, HEAD",
        }
    }

    fn request_headers(&self) -> &'static str {
        match self {
            CorsPolicy::Origins(_) => "authorization, content-type, if-none-match, x-request-id",
            _ => "if-none-match, x-request-id",
        }
    }
}

/// An origin as a browser sends it: `scheme://host[:port]`, nothing after.
fn check_origin(origin: &str) -> Result<(), String> {
    let want = "want scheme://host[:port] as a browser sends it, such as https://app.example.org, or '*' for reads from anywhere";
    let Some((scheme, rest)) = origin.split_once("://") else {
        return Err(format!("--cors-origin {origin:?} is not an origin: {want}"));
    };
    let valid = !scheme.is_empty()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        && !rest.is_empty()
        && !rest.contains(['/', '?', '#', '*', ' '])
        && HeaderValue::from_str(origin).is_ok();
    if valid {
        Ok(())
    } else {
        Err(format!("--cors-origin {origin:?} is not an origin: {want}"))
    }
}

/// How long a browser may cache a preflight answer, in seconds.
const PREFLIGHT_MAX_AGE_SECONDS: &str = "600";

/// Answers preflight requests and adds the CORS headers to answers to
/// allowed origins. Does nothing under [`CorsPolicy::None`].
pub(crate) async fn cors(
    State(policy): State<Arc<CorsPolicy>>,
    request: Request,
    next: Next,
) -> Response {
    let policy = &*policy;
    if *policy == CorsPolicy::None {
        return next.run(request).await;
    }
    let origin = request
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Some(origin) = origin else {
        return next.run(request).await;
    };
    let preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if preflight {
        return answer_preflight(policy, &origin, request.headers());
    }
    let allowed = policy.allow(&origin, request.method());
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    vary_origin(policy, headers);
    if let Some(allowed) = allowed {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("etag, x-request-id"),
        );
    }
    response
}

fn vary_origin(policy: &CorsPolicy, headers: &mut HeaderMap) {
    // Answers differ by origin only when origins are listed by name.
    if matches!(policy, CorsPolicy::Origins(_)) {
        headers.append(header::VARY, HeaderValue::from_static("origin"));
    }
}

fn answer_preflight(policy: &CorsPolicy, origin: &str, headers: &HeaderMap) -> Response {
    let asked = headers
        .get(header::ACCESS_CONTROL_REQUEST_METHOD)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let method = Method::from_bytes(asked.as_bytes()).unwrap_or(Method::OPTIONS);
    let Some(allowed) = policy.allow(origin, &method) else {
        let reason = match policy {
            CorsPolicy::AnyReads if method == Method::POST => {
                "this server grants cross-origin reads to every origin ('*') and writes to none"
                    .to_owned()
            }
            _ => format!(
                "this server allows {} from {}",
                policy.methods(),
                match policy {
                    CorsPolicy::Origins(origins) => origins.join(", "),
                    _ => "any origin".to_owned(),
                }
            ),
        };
        let mut response = ApiError::new(
            StatusCode::FORBIDDEN,
            format!("cross-origin {asked} from {origin} is not allowed: {reason}"),
        )
        .into_response();
        vary_origin(policy, response.headers_mut());
        return response;
    };
    let mut response = (StatusCode::NO_CONTENT, Body::empty()).into_response();
    let out = response.headers_mut();
    out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
    out.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(policy.methods()),
    );
    out.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(policy.request_headers()),
    );
    out.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static(PREFLIGHT_MAX_AGE_SECONDS),
    );
    vary_origin(policy, out);
    response
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn cors_origins_parse_to_a_policy() {
        assert_eq!(CorsPolicy::from_origins(&[]), Ok(CorsPolicy::None));
        assert_eq!(
            CorsPolicy::from_origins(&["*".into()]),
            Ok(CorsPolicy::AnyReads)
        );
        let named = vec![
            "https://app.example.org".to_owned(),
            "http://localhost:5173".to_owned(),
        ];
        assert_eq!(
            CorsPolicy::from_origins(&named),
            Ok(CorsPolicy::Origins(named.clone()))
        );
        let error = CorsPolicy::from_origins(&["*".into(), named[0].clone()]).unwrap_err();
        assert!(error.contains("cannot be combined"), "{error}");
        for bad in [
            "app.example.org",
            "https://app.example.org/",
            "https://",
            "https://*.example.org",
        ] {
            let error = CorsPolicy::from_origins(&[bad.into()]).unwrap_err();
            assert!(
                error.contains(bad) && error.contains("not an origin"),
                "{error}"
            );
        }
    }

    #[test]
    fn star_grants_reads_and_never_writes() {
        let any = CorsPolicy::AnyReads;
        assert_eq!(any.allow("https://x.org", &Method::GET).unwrap(), "*");
        assert!(any.allow("https://x.org", &Method::POST).is_none());
        let named = CorsPolicy::Origins(vec!["https://a.org".into()]);
        assert_eq!(
            named.allow("https://a.org", &Method::POST).unwrap(),
            "https://a.org"
        );
        assert!(named.allow("https://b.org", &Method::GET).is_none());
        assert!(named.allow("https://a.org", &Method::DELETE).is_none());
        assert!(
            CorsPolicy::None
                .allow("https://a.org", &Method::GET)
                .is_none()
        );
    }
}
