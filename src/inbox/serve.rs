//! `cascade inbox serve`: the receiving end of an outbox's webhook sink. A delivery is POSTed to
//! `/inbox/SOURCE` (or `/inbox`, for the source the server was started with) as the webhook's
//! JSON array, with `Authorization: Bearer TOKEN`; the answer is 2xx only once its tombstones are
//! committed, so a sender that sees anything else delivers again (and a redelivered message is
//! not taken twice). `/health` answers 200 while the inbox's database does.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{ALLOW, AUTHORIZATION, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use hyper::rt::Executor as _;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use serde::Serialize;
use subtle::ConstantTimeEq as _;
use tokio::net::TcpListener;
use tracing::{info, warn};

use super::{InboxError, Received, parse_delivery, take};
use crate::db::Database;

/// What the server logs once it listens (with `url`).
pub const LISTENING: &str = "inbox listening";

/// How long a client has to send a request's headers.
const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a stop waits for the requests under way.
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// How long the server waits after a failed accept (out of file descriptors for a moment).
const ACCEPT_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// The largest delivery taken, in bytes: a webhook sink sends one batch of messages per POST.
pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// How `inbox serve` answers.
#[derive(Clone)]
pub struct ServeOptions {
    /// The bearer token every delivery must carry.
    pub token: String,
    /// The source of deliveries POSTed to `/inbox` (without a source in the path).
    pub source: Option<String>,
}

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeOptions").field("token", &crate::secret::REDACTED).field("source", &self.source).finish()
    }
}

/// What a server took in before it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ServeReport {
    /// Deliveries taken (answered 2xx).
    pub deliveries: u64,
    /// Tombstones in them.
    pub messages: u64,
    /// Those not received before.
    pub new: u64,
}

struct Server {
    database: Database,
    options: ServeOptions,
    report: std::sync::Mutex<ServeReport>,
}

/// Takes deliveries on `listener` until `stop` is set, then finishes the requests under way and
/// returns what was taken. The inbox's tables are created first.
pub async fn serve(
    database: &Database,
    listener: TcpListener,
    options: ServeOptions,
    stop: Arc<AtomicBool>,
) -> Result<ServeReport, InboxError> {
    crate::db::migrate(database).await?;
    let server = Arc::new(Server { database: database.clone(), options, report: Default::default() });
    let url = listener.local_addr().map(|addr| format!("http://{addr}/inbox")).unwrap_or_default();
    info!(%url, "{LISTENING}");
    let graceful = GracefulShutdown::new();
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // A connection that failed before it was accepted (reset, or out of file
                // descriptors for a moment) is the client's to try again.
                Err(error) => {
                    warn!(%error, "accepting a connection failed");
                    crate::stop::pause(ACCEPT_PAUSE, &stop).await;
                    continue;
                }
            },
            () = crate::stop::stopped(&stop) => break,
        };
        let server = server.clone();
        let service = hyper::service::service_fn(move |request| {
            let server = server.clone();
            async move { Ok::<_, Infallible>(server.answer(request).await) }
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT)
            .serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        TokioExecutor::new().execute(async move {
            if let Err(error) = connection.await {
                warn!(%error, "an inbox connection failed");
            }
        });
    }
    // Requests under way finish; a client that holds its connection open does not hold the stop.
    if tokio::time::timeout(SHUTDOWN_WAIT, graceful.shutdown()).await.is_err() {
        warn!("connections still open after {SHUTDOWN_WAIT:?} are closed");
    }
    Ok(*server.report.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
}

impl Server {
    async fn answer(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path().to_owned();
        match path.as_str() {
            "/health" => match *request.method() {
                Method::GET | Method::HEAD => self.health().await,
                _ => not_allowed("GET, HEAD"),
            },
            "/inbox" => self.delivery(request, self.options.source.clone()).await,
            _ => match path.strip_prefix("/inbox/") {
                Some(source) if is_source_name(source) => self.delivery(request, Some(source.to_owned())).await,
                _ => text(StatusCode::NOT_FOUND, "not found: deliveries go to /inbox/SOURCE, health to /health"),
            },
        }
    }

    async fn health(&self) -> Response<Full<Bytes>> {
        match self.database.table_exists("cascade_inbox").await {
            Ok(true) => json(StatusCode::OK, &serde_json::json!({ "status": "ok" })),
            Ok(false) => text(StatusCode::SERVICE_UNAVAILABLE, "the inbox's table is missing"),
            Err(error) => {
                warn!(error = %crate::secret::redact(&error.to_string()), "the inbox's database does not answer");
                text(StatusCode::SERVICE_UNAVAILABLE, "the inbox's database does not answer")
            }
        }
    }

    async fn delivery(&self, request: Request<Incoming>, source: Option<String>) -> Response<Full<Bytes>> {
        if request.method() != Method::POST {
            return not_allowed("POST");
        }
        if !self.authorized(request.headers().get(AUTHORIZATION)) {
            let mut response = text(StatusCode::UNAUTHORIZED, "a delivery needs `Authorization: Bearer TOKEN`");
            response.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
        let Some(source) = source else {
            return text(
                StatusCode::NOT_FOUND,
                "name the sending database: POST to /inbox/SOURCE, or start the server with --source",
            );
        };
        let body = match Limited::new(request.into_body(), MAX_BODY_BYTES).collect().await {
            Ok(body) => body.to_bytes(),
            Err(error) if error.is::<http_body_util::LengthLimitError>() => {
                return text(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("a delivery is at most {MAX_BODY_BYTES} bytes: send smaller batches"),
                );
            }
            Err(error) => return text(StatusCode::BAD_REQUEST, &format!("cannot read the delivery: {error}")),
        };
        let Ok(body) = std::str::from_utf8(&body) else {
            return text(StatusCode::BAD_REQUEST, "the delivery is not UTF-8 JSON");
        };
        let taken = match parse_delivery(body) {
            Ok(tombstones) => take(&self.database, &source, &tombstones).await,
            Err(error) => Err(error),
        };
        match taken {
            Ok(received) => {
                info!(%source, messages = received.messages, new = received.new, "delivery taken");
                self.count(received);
                json(StatusCode::OK, &received)
            }
            Err(InboxError::Database(error)) => {
                let error = crate::secret::redact(&error.to_string());
                warn!(%source, %error, "taking a delivery failed");
                text(StatusCode::SERVICE_UNAVAILABLE, &format!("the delivery was not taken, send it again: {error}"))
            }
            Err(error) => {
                warn!(%source, %error, "a delivery was refused");
                text(StatusCode::BAD_REQUEST, &error.to_string())
            }
        }
    }

    /// Whether `header` is `Bearer` (in any case, as HTTP's schemes are) and the token, compared
    /// in constant time.
    fn authorized(&self, header: Option<&HeaderValue>) -> bool {
        let Some(value) = header.map(HeaderValue::as_bytes) else { return false };
        let Some((scheme, token)) = value.split_at_checked(7) else { return false };
        scheme.eq_ignore_ascii_case(b"Bearer ") && bool::from(token.ct_eq(self.options.token.as_bytes()))
    }

    fn count(&self, received: Received) {
        let mut report = self.report.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        report.deliveries += 1;
        report.messages += received.messages;
        report.new += received.new;
    }
}

/// A source names a sending database in a path: letters, digits, `.`, `_` and `-`.
fn is_source_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"._-".contains(&byte))
}

fn text(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{message}\n"))));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

fn json(status: StatusCode, value: &impl Serialize) -> Response<Full<Bytes>> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn not_allowed(allow: &'static str) -> Response<Full<Bytes>> {
    let mut response = text(StatusCode::METHOD_NOT_ALLOWED, &format!("method not allowed: use {allow}"));
    response.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_in_a_path_is_a_plain_name() {
        for good in ["control", "cell-1", "eu.west_2"] {
            assert!(is_source_name(good), "{good}");
        }
        for bad in ["", "a/b", "a b", "%2e%2e", "ünï"] {
            assert!(!is_source_name(bad), "{bad}");
        }
    }

    #[test]
    fn the_token_is_not_in_the_options_debug() {
        let options = ServeOptions { token: "hunter2-token".to_owned(), source: None };
        assert!(!format!("{options:?}").contains("hunter2"));
    }
}
