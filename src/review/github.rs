//! One sticky pull-request comment: inside GitHub Actions, the review is posted once and then
//! updated in place on every later run (found again by a hidden marker), as squawk and Atlas do,
//! through GitHub's REST API. The token is sent in a header only, never logged or shown, and only
//! to the repository's own API paths (and `/user`): every URL is built from a checked
//! `owner/name`, one path segment at a time, and no redirect is followed. Only a comment the
//! token's own identity wrote is ever updated.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, USER_AGENT};
use reqwest::{Method, StatusCode, Url};
use serde_json::{Value, json};

use crate::diagnostic::text::shown;

/// GitHub refuses comments longer than this many characters.
const MAX_COMMENT_CHARS: usize = 65_536;
/// How much of an API error's body a message keeps.
const MAX_ERROR_CHARS: usize = 500;
/// Comments read per page while looking for the marker.
const PAGE_SIZE: usize = 100;
/// Pages read at most while looking for the marker: an answer that never ends is an error.
const MAX_PAGES: usize = 50;
/// Whom GitHub Actions' `GITHUB_TOKEN` comments as (`GET /user` refuses that token).
const ACTIONS_LOGIN: &str = "github-actions[bot]";
/// The longest owner or repository name GitHub allows.
const MAX_NAME_CHARS: usize = 100;

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
    /// `GITHUB_REPOSITORY` is not one owner and one repository name.
    #[error(
        "`GITHUB_REPOSITORY` must be `owner/name` (letters, digits, `-`, `_` and `.`, neither part `.` or `..`), \
         found `{}`",
        shown(.0)
    )]
    BadRepository(String),
    /// `GITHUB_API_URL` is no URL the token may be sent to.
    #[error("`GITHUB_API_URL` must be an http:// or https:// URL with no user, password, query or fragment")]
    BadApiUrl,
    /// The token cannot be sent as a header.
    #[error("`GITHUB_TOKEN` holds characters a header cannot carry")]
    BadToken,
    /// The listing of comments did not end.
    #[error(
        "the pull request's comments did not end within {MAX_PAGES} pages of {PAGE_SIZE}: no comment posted, since \
         the review's own may be further on"
    )]
    EndlessComments,
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
    api_url: Url,
    token: String,
    owner: String,
    name: String,
    /// The pull request the event is about; none for a push.
    pub pull_request: Option<u64>,
    /// `GITHUB_STEP_SUMMARY`, when set.
    pub step_summary: Option<PathBuf>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("api_url", &self.api_url.as_str())
            .field("owner", &self.owner)
            .field("name", &self.name)
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
        let (owner, name) = owner_and_name(&repository).ok_or(GithubError::BadRepository(repository.clone()))?;
        let api_url = var("GITHUB_API_URL").filter(|url| !url.is_empty());
        let api_url = api_url.as_deref().unwrap_or("https://api.github.com");
        let api_url = Url::parse(api_url).ok().filter(is_api_url).ok_or(GithubError::BadApiUrl)?;
        let event_path = PathBuf::from(required("GITHUB_EVENT_PATH")?);
        let event = std::fs::read_to_string(&event_path)
            .map_err(|error| error.to_string())
            .and_then(|text| serde_json::from_str::<Value>(&text).map_err(|error| error.to_string()))
            .map_err(|reason| GithubError::Event { path: event_path.clone(), reason })?;
        let pull_request = event
            .pointer("/pull_request/number")
            .or_else(|| event.pointer("/issue/pull_request").and(event.pointer("/issue/number")))
            .and_then(Value::as_u64);
        Ok(Context {
            api_url,
            token,
            owner: owner.to_owned(),
            name: name.to_owned(),
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
    /// made one (a comment by the token's own identity: never anyone else's); `None` when the
    /// event is about no pull request.
    pub async fn post_sticky(&self, body: &str, marker: &str) -> Result<Option<Posted>, GithubError> {
        let Some(number) = self.pull_request else { return Ok(None) };
        let client = client()?;
        let body = json!({ "body": fit_comment(body) }).to_string();
        let comments = self.repository_url(&["issues", &number.to_string(), "comments"]);
        let posted = match self.find_own_comment(&client, &comments, marker).await? {
            Some(id) => {
                let url = self.repository_url(&["issues", "comments", &id.to_string()]);
                self.send(&client, Method::PATCH, url, Some(body), "updating the comment").await?;
                Posted::Updated(id)
            }
            None => {
                let created = self.send(&client, Method::POST, comments, Some(body), "creating a comment").await?;
                Posted::Created(created.get("id").and_then(Value::as_u64).unwrap_or_default())
            }
        };
        Ok(Some(posted))
    }

    /// `{api}/repos/{owner}/{name}/{path…}`: each part one path segment (so none can climb out
    /// of the repository's API), the only URLs besides [`Context::user_url`] the token goes to.
    fn repository_url(&self, path: &[&str]) -> Url {
        self.api_path(["repos", &self.owner, &self.name].iter().chain(path))
    }

    /// `{api}/user`: whom the token belongs to.
    fn user_url(&self) -> Url {
        self.api_path(["user"].iter())
    }

    fn api_path<'s>(&self, segments: impl Iterator<Item = &'s &'s str>) -> Url {
        let mut url = self.api_url.clone();
        // `from_env` accepts http(s) URLs only, which always have a path.
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// The id of the first comment holding `marker` that the token's identity wrote, reading the
    /// comments at `url` a page at a time, [`MAX_PAGES`] at most. The identity is asked for only
    /// when a comment holds the marker.
    async fn find_own_comment(
        &self,
        client: &reqwest::Client,
        url: &Url,
        marker: &str,
    ) -> Result<Option<u64>, GithubError> {
        let mut identity = None;
        for page in 1..=MAX_PAGES {
            let mut page_url = url.clone();
            page_url
                .query_pairs_mut()
                .append_pair("per_page", &PAGE_SIZE.to_string())
                .append_pair("page", &page.to_string());
            let comments = self.send(client, Method::GET, page_url, None, "listing the comments").await?;
            let comments = comments.as_array().map(Vec::as_slice).unwrap_or_default();
            let marked = comments.iter().filter(|comment| {
                comment.get("body").and_then(Value::as_str).is_some_and(|body| body.contains(marker))
            });
            for comment in marked {
                let identity = match &identity {
                    Some(identity) => identity,
                    None => identity.insert(self.identity(client).await?),
                };
                if let Some(id) = comment.get("id").and_then(Value::as_u64).filter(|_| identity.wrote(comment)) {
                    return Ok(Some(id));
                }
            }
            if comments.len() < PAGE_SIZE {
                return Ok(None);
            }
        }
        Err(GithubError::EndlessComments)
    }

    /// Whose comments the token may update: `GET /user` names a personal access token's user,
    /// and refuses (403) the installation token GitHub Actions gives a workflow.
    async fn identity(&self, client: &reqwest::Client) -> Result<Identity, GithubError> {
        let what = "asking whom the token belongs to (`GET /user`)";
        let (status, text) = self.answer(client, Method::GET, self.user_url(), None).await?;
        if status == StatusCode::FORBIDDEN {
            return Ok(Identity::Actions);
        }
        let user = self.parsed(status, &text, what)?;
        match user.get("login").and_then(Value::as_str).filter(|login| !login.is_empty()) {
            Some(login) => Ok(Identity::User(login.to_owned())),
            None => Err(self.api_error(status, "an answer without a login", what)),
        }
    }

    /// Sends a request with the token to `url` (one this context built), the answer as JSON.
    async fn send(
        &self,
        client: &reqwest::Client,
        method: Method,
        url: Url,
        body: Option<String>,
        what: &str,
    ) -> Result<Value, GithubError> {
        let (status, text) = self.answer(client, method, url, body).await?;
        self.parsed(status, &text, what)
    }

    async fn answer(
        &self,
        client: &reqwest::Client,
        method: Method,
        url: Url,
        body: Option<String>,
    ) -> Result<(StatusCode, String), GithubError> {
        let mut token = HeaderValue::from_str(&format!("Bearer {}", self.token)).map_err(|_| GithubError::BadToken)?;
        token.set_sensitive(true);
        let mut request = client.request(method, url).header(AUTHORIZATION, token);
        if let Some(body) = body {
            request = request.header(CONTENT_TYPE, "application/json").body(body);
        }
        let response =
            request.send().await.map_err(|error| GithubError::Request(crate::secret::redact(&error.to_string())))?;
        let status = response.status();
        Ok((status, response.text().await.unwrap_or_default()))
    }

    fn parsed(&self, status: StatusCode, text: &str, what: &str) -> Result<Value, GithubError> {
        if status.is_redirection() {
            return Err(self.api_error(
                status,
                "a redirect, not followed: the token goes to the repository's API only",
                what,
            ));
        }
        if !status.is_success() {
            return Err(self.api_error(status, text, what));
        }
        Ok(serde_json::from_str(text).unwrap_or(Value::Null))
    }

    fn api_error(&self, status: StatusCode, text: &str, what: &str) -> GithubError {
        // The answer may hold anything: it is printed escaped, as a name would be.
        let message = shown(&crate::secret::redact(text)).chars().take(MAX_ERROR_CHARS).collect();
        GithubError::Api { status: status.as_u16(), what: what.to_owned(), message }
    }
}

/// Whose comments a token may update.
enum Identity {
    /// A user, as `GET /user` names them (a personal access token).
    User(String),
    /// GitHub Actions' bot: a token `GET /user` refuses is a workflow's `GITHUB_TOKEN`.
    Actions,
}

impl Identity {
    /// Whether `comment` (as the API lists it) is this identity's.
    fn wrote(&self, comment: &Value) -> bool {
        let user = |field: &str| comment.pointer(&format!("/user/{field}")).and_then(Value::as_str);
        match self {
            Identity::User(login) => user("login") == Some(login),
            Identity::Actions => user("login") == Some(ACTIONS_LOGIN) && user("type") == Some("Bot"),
        }
    }
}

/// A client that sends no token by itself and follows no redirect: a redirect would take the
/// token's request somewhere this context did not build.
fn client() -> Result<reqwest::Client, GithubError> {
    let mut headers = HeaderMap::new();
    headers.insert(ACCEPT, HeaderValue::from_static("application/vnd.github+json"));
    headers.insert("X-GitHub-Api-Version", HeaderValue::from_static("2022-11-28"));
    headers.insert(USER_AGENT, HeaderValue::from_static(concat!("cascade/", env!("CARGO_PKG_VERSION"))));
    reqwest::Client::builder()
        .default_headers(headers)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|error| GithubError::Request(error.to_string()))
}

/// `owner/name`, each part of the characters GitHub allows in them and neither `.` nor `..`.
fn owner_and_name(repository: &str) -> Option<(&str, &str)> {
    let (owner, name) = repository.split_once('/')?;
    let valid = |part: &str| {
        !part.is_empty()
            && part.len() <= MAX_NAME_CHARS
            && part != "."
            && part != ".."
            && part.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    (valid(owner) && valid(name)).then_some((owner, name))
}

/// An http(s) API root with a host and no credentials, query or fragment.
fn is_api_url(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https")
        && url.has_host()
        && url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none()
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
