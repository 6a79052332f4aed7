//! A webhook sink: the batch is POSTed as a JSON array, any 2xx status is a delivery. Redirects
//! are not followed (a redirected POST would become a GET without the body).

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use super::{DeliveryError, Message, OUTPUT_KEPT, ReadSetting, batch_key, head};
use crate::config::SettingKind;

/// How much of a webhook's response body is read to find its kept part in: enough to redact a
/// secret that straddles the cut, never the whole of a huge body.
const BODY_READ: usize = 64 * 1024;

#[derive(Debug)]
pub(super) struct Webhook {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
}

impl Webhook {
    /// A webhook with its headers checked: a name or value HTTP cannot carry is an error now, not
    /// at every delivery.
    pub(super) fn new(url: &str, settings: &[ReadSetting<'_>], timeout: Duration) -> Result<Self, String> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for read in settings.iter().filter(|read| read.setting.kind == SettingKind::Header) {
            let header = read.setting.name;
            let name = HeaderName::from_bytes(header.as_bytes())
                .map_err(|_| format!("`{header}` is not a valid HTTP header name"))?;
            let value = HeaderValue::from_str(&read.value)
                .map_err(|_| format!("the value of header `{header}` is not a valid HTTP header value"))?;
            // The config's value replaces a default of the same name.
            headers.insert(name, value);
        }
        let client = reqwest::Client::builder()
            .timeout(timeout)
            // A redirected POST becomes a GET without the body: never a delivery.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| error.to_string())?;
        Ok(Self { client, url: url.to_owned(), headers })
    }

    /// POSTs the batch; the part of a failed response's body that is kept is redacted before it
    /// is cut, so no piece of a secret survives the cut.
    pub(super) async fn deliver(&self, messages: &[Message]) -> Result<(), DeliveryError> {
        let body = serde_json::to_vec(messages).map_err(|error| DeliveryError(error.to_string()))?;
        let mut headers = self.headers.clone();
        if !headers.contains_key("idempotency-key")
            && let Ok(key) = HeaderValue::from_str(&batch_key(messages))
        {
            headers.insert("idempotency-key", key);
        }
        let request = self.client.post(&self.url).headers(headers).body(body);
        let response = request.send().await.map_err(|error| DeliveryError(describe_http_error(error)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let text = crate::secret::redact(&read_start(response, BODY_READ).await);
        Err(DeliveryError(format!("HTTP {status}: {}", head(text.trim(), OUTPUT_KEPT))))
    }
}

/// The first `limit` bytes of a response's body (fewer when it ends or fails first), as text.
async fn read_start(mut response: reqwest::Response, limit: usize) -> String {
    let mut kept = Vec::new();
    while kept.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => kept.extend_from_slice(&chunk[..chunk.len().min(limit - kept.len())]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// The error of a webhook call, without its URL (which may hold a token).
fn describe_http_error(error: reqwest::Error) -> String {
    if error.is_timeout() {
        return "timed out waiting for the webhook".to_owned();
    }
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}
