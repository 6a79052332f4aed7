//! One sticky pull-request comment: inside GitHub Actions, the review is posted once and then
//! updated in place on every later run (found again by a hidden marker), as squawk and Atlas do,
//! through GitHub's REST API. The token is sent in a header only, never logged or shown.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, USER_AGENT};
use serde_json::{Value, json};

/// GitHub refuses comments longer than this many characters.
const MAX_COMMENT_CHARS: usize = 65_536;
/// How much of an API error's body a message keeps.
const MAX_ERROR_CHARS: usize = 500;
/// Comments read per page while looking for the marker.
const PAGE_SIZE: usize = 100;

/// Why the comment could not be posted.
#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    /// A variable GitHub Actions sets is missing.
    #[error("`{0}` is not set: `--github-comment` runs inside GitHub Actions, with `GITHUB_TOKEN` given to the step")]
    MissingVariable(&'static str),
    /// The event file could not be read.
    #[error("cannot read the event file `{path}`: {reason}")]
    Event {
        /// `GITHUB_EVENT_PATH`.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The token cannot be sent as a header.
    #[error("`GITHUB_TOKEN` holds characters a header cannot carry")]
    BadToken,
    /// The request failed before an answer.
    #[error("cannot reach the GitHub API: {0}")]
    Request(String),
    /// The API answered with an error.
    #[error("the GitHub API answered {status} to {what}: {message}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// What was asked.
        what: String,
        /// The start of the answer.
        message: String,
    },
    /// The step summary could not be written.
    #[error("cannot append to the step summary `{path}`: {reason}")]
    Summary {
        /// `GITHUB_STEP_SUMMARY`.
        path: PathBuf,
        /// Why.
        reason: std::io::Error,
    },
}

/// What GitHub Actions tells a step about where it runs.
#[derive(Clone)]
pub struct Context {
    api_url: String,
    token: String,
    repository: String,
    /// The pull request the event is about; none for a push.
    pub pull_request: Option<u64>,
    /// `GITHUB_STEP_SUMMARY`, when set.
    pub step_summary: Option<PathBuf>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("api_url", &self.api_url)
            .field("repository", &self.repository)
            .field("pull_request", &self.pull_request)
            .finish_non_exhaustive()
    }
}

/// What happened to the comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posted {
    /// A new comment, with its id.
    Created(u64),
    /// The earlier comment, updated.
    Updated(u64),
}

impl Context {
    /// Reads `GITHUB_TOKEN`, `GITHUB_REPOSITORY`, `GITHUB_EVENT_PATH`, `GITHUB_API_URL` (default
    /// `https://api.github.com`) and `GITHUB_STEP_SUMMARY` through `var`.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Context, GithubError> {
        let required =
            |name: &'static str| var(name).filter(|v| !v.is_empty()).ok_or(GithubError::MissingVariable(name));
        let token = required("GITHUB_TOKEN")?;
        crate::secret::register(&token);
        let repository = required("GITHUB_REPOSITORY")?;
        let event_path = PathBuf::from(required("GITHUB_EVENT_PATH")?);
        let event = std::fs::read_to_string(&event_path)
            .map_err(|error| error.to_string())
            .and_then(|text| serde_json::from_str::<Value>(&text).map_err(|error| error.to_string()))
            .map_err(|reason| GithubError::Event { path: event_path.clone(), reason })?;
        let pull_request = event
            .pointer("/pull_request/number")
            .or_else(|| event.pointer("/issue/pull_request").and(event.pointer("/issue/number")))
            .and_then(Value::as_u64);
        let api_url = var("GITHUB_API_URL").filter(|url| !url.is_empty());
        Ok(Context {
            api_url: api_url.unwrap_or_else(|| "https://api.github.com".to_owned()).trim_end_matches('/').to_owned(),
            token,
            repository,
            pull_request,
            step_summary: var("GITHUB_STEP_SUMMARY").filter(|path| !path.is_empty()).map(PathBuf::from),
        })
    }

    /// Appends `markdown` to the job's summary page, when the step has one.
    pub fn append_summary(&self, markdown: &str) -> Result<(), GithubError> {
        use std::io::Write as _;
        let Some(path) = &self.step_summary else { return Ok(()) };
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .and_then(|mut file| writeln!(file, "{markdown}"))
            .map_err(|reason| GithubError::Summary { path: path.clone(), reason })
    }

    /// Creates the pull request's comment holding `marker`, or updates it when an earlier run
    /// made one; `None` when the event is about no pull request.
    pub async fn post_sticky(&self, body: &str, marker: &str) -> Result<Option<Posted>, GithubError> {
        let Some(number) = self.pull_request else { return Ok(None) };
        let client = self.client()?;
        let body = fit_comment(body);
        let base = format!("{}/repos/{}/issues", self.api_url, self.repository);
        let existing = self.find_comment(&client, &format!("{base}/{number}/comments"), marker).await?;
        let posted = match existing {
            Some(id) => {
                let url = format!("{base}/comments/{id}");
                self.send(
                    client
                        .patch(&url)
                        .header(CONTENT_TYPE, "application/json")
                        .body(json!({ "body": body }).to_string()),
                    "updating the comment",
                )
                .await?;
                Posted::Updated(id)
            }
            None => {
                let url = format!("{base}/{number}/comments");
                let created = self
                    .send(
                        client
                            .post(&url)
                            .header(CONTENT_TYPE, "application/json")
                            .body(json!({ "body": body }).to_string()),
                        "creating a comment",
                    )
                    .await?;
                Posted::Created(created.get("id").and_then(Value::as_u64).unwrap_or_default())
            }
        };
        Ok(Some(posted))
    }

    fn client(&self) -> Result<reqwest::Client, GithubError> {
        let mut headers = HeaderMap::new();
        let mut token = HeaderValue::from_str(&format!("Bearer {}", self.token)).map_err(|_| GithubError::BadToken)?;
        token.set_sensitive(true);
        headers.insert(AUTHORIZATION, token);
        headers.insert(ACCEPT, HeaderValue::from_static("application/vnd.github+json"));
        headers.insert("X-GitHub-Api-Version", HeaderValue::from_static("2022-11-28"));
        headers.insert(USER_AGENT, HeaderValue::from_static(concat!("cascade/", env!("CARGO_PKG_VERSION"))));
        reqwest::Client::builder()
            .default_headers(headers)
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|error| GithubError::Request(error.to_string()))
    }

    /// The id of the first comment holding `marker`, reading every page of comments.
    async fn find_comment(
        &self,
        client: &reqwest::Client,
        url: &str,
        marker: &str,
    ) -> Result<Option<u64>, GithubError> {
        for page in 1.. {
            let request = client.get(url).query(&[("per_page", PAGE_SIZE), ("page", page)]);
            let comments = self.send(request, "listing the comments").await?;
            let comments = comments.as_array().map(Vec::as_slice).unwrap_or_default();
            let found = comments
                .iter()
                .find(|comment| comment.get("body").and_then(Value::as_str).is_some_and(|body| body.contains(marker)));
            if let Some(id) = found.and_then(|comment| comment.get("id")).and_then(Value::as_u64) {
                return Ok(Some(id));
            }
            if comments.len() < PAGE_SIZE {
                break;
            }
        }
        Ok(None)
    }

    async fn send(&self, request: reqwest::RequestBuilder, what: &str) -> Result<Value, GithubError> {
        let response = request.send().await.map_err(|error| GithubError::Request(self.redact(&error.to_string())))?;
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        if !status.is_success() {
            let message: String = self.redact(&text).chars().take(MAX_ERROR_CHARS).collect();
            return Err(GithubError::Api { status: status.as_u16(), what: what.to_owned(), message });
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// `text` without the token (registered when the context was read), should an answer
    /// repeat it in any form.
    fn redact(&self, text: &str) -> String {
        crate::secret::redact(text)
    }
}

/// `body`, cut at a line end to fit a comment, with a line saying so.
fn fit_comment(body: &str) -> String {
    const NOTE: &str = "\n\n… cut to fit a comment: the job's summary and `cascade diff` show the whole review.\n";
    if body.chars().count() <= MAX_COMMENT_CHARS {
        return body.to_owned();
    }
    let limit = MAX_COMMENT_CHARS - NOTE.chars().count();
    let end = body.char_indices().nth(limit).map_or(body.len(), |(offset, _)| offset);
    let end = body[..end].rfind('\n').unwrap_or(end);
    format!("{}{NOTE}", &body[..end])
}
