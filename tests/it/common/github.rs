//! A stand-in of the part of GitHub's REST API that `cascade diff --github-comment` uses (the real
//! one cannot be reached from tests): one pull request's comments, listed a page at a time,
//! created and updated (anyone's, as a token with write access may), behind a token, and `GET
//! /user`, which names a personal access token's user and refuses GitHub Actions' token.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

/// The token the stand-in accepts.
pub const TOKEN: &str = "s3cret-t0ken";
/// The repository and pull request the stand-in serves.
pub const REPOSITORY: &str = "acme/app";
/// An event file's contents for that pull request.
pub const PULL_REQUEST_EVENT: &str = r#"{"pull_request": {"number": 7}}"#;
/// Whom GitHub Actions' token comments as.
pub const ACTIONS_BOT: &str = "github-actions[bot]";

/// Whose token [`TOKEN`] is.
#[derive(Clone, Copy)]
pub enum Identity {
    /// GitHub Actions' `GITHUB_TOKEN`: comments as [`ACTIONS_BOT`], refused by `GET /user`.
    Actions,
    /// A personal access token of this user.
    User(&'static str),
}

impl Identity {
    fn login(self) -> &'static str {
        match self {
            Identity::Actions => ACTIONS_BOT,
            Identity::User(login) => login,
        }
    }
}

/// How the stand-in answers the listing of comments.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// As GitHub does.
    Faithful,
    /// Every page full, without end.
    Endless,
    /// A redirect to another path of the same server (`/elsewhere`).
    Redirect,
}

/// One comment on the pull request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    pub id: u64,
    /// Its author's login.
    pub author: String,
    pub body: String,
}

impl Comment {
    pub fn new(id: u64, author: &str, body: impl Into<String>) -> Comment {
        Comment { id, author: author.to_owned(), body: body.into() }
    }
}

/// The pull request's comments, and how many requests came with another token.
pub struct GithubApi {
    pub comments: Mutex<Vec<Comment>>,
    pub bad_tokens: Mutex<usize>,
    identity: Identity,
    listing: Listing,
}

impl GithubApi {
    /// A server answering as GitHub would to `identity`'s token, with `comments` on the pull
    /// request already.
    pub async fn start(identity: Identity, comments: Vec<Comment>) -> (Arc<GithubApi>, wiremock::MockServer) {
        Self::start_listing(identity, comments, Listing::Faithful).await
    }

    /// A server that answers the listing of comments as `listing` says.
    pub async fn start_listing(
        identity: Identity,
        comments: Vec<Comment>,
        listing: Listing,
    ) -> (Arc<GithubApi>, wiremock::MockServer) {
        let api = Arc::new(GithubApi { comments: Mutex::new(comments), bad_tokens: Mutex::new(0), identity, listing });
        let server = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::any()).respond_with(Responder(api.clone())).mount(&server).await;
        (api, server)
    }

    /// The comments that hold a review.
    pub fn reviews(&self) -> Vec<Comment> {
        let comments = self.comments.lock().unwrap();
        comments.iter().filter(|comment| comment.body.contains("<!-- cascade-diff -->")).cloned().collect()
    }
}

/// The API as the mock server answers with it (shared with the test, which reads the comments).
struct Responder(Arc<GithubApi>);

impl Respond for Responder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let api = &self.0;
        let authorized = request.headers.get("authorization").is_some_and(|v| v == format!("Bearer {TOKEN}").as_str());
        if !authorized {
            *api.bad_tokens.lock().unwrap() += 1;
            return ResponseTemplate::new(401).set_body_json(json!({"message": "Bad credentials"}));
        }
        let mut comments = api.comments.lock().unwrap();
        let body = || serde_json::from_slice::<Value>(&request.body).unwrap()["body"].as_str().unwrap().to_owned();
        let list = format!("/repos/{REPOSITORY}/issues/7/comments");
        let one = format!("/repos/{REPOSITORY}/issues/comments/");
        match (request.method.as_str(), request.url.path()) {
            ("GET", "/user") => match api.identity {
                Identity::Actions => ResponseTemplate::new(403)
                    .set_body_json(json!({"message": "Resource not accessible by integration"})),
                Identity::User(login) => {
                    ResponseTemplate::new(200).set_body_json(json!({"login": login, "type": "User"}))
                }
            },
            ("GET", path) if path == list => {
                let query: std::collections::HashMap<_, _> = request.url.query_pairs().into_owned().collect();
                let (per_page, page): (usize, usize) =
                    (query["per_page"].parse().unwrap(), query["page"].parse().unwrap());
                let listed: Vec<Value> = match api.listing {
                    Listing::Faithful => comments.iter().skip((page - 1) * per_page).take(per_page).map(json).collect(),
                    Listing::Endless => (0..per_page)
                        .map(|n| json(&Comment::new((page * per_page + n) as u64, "mallory", "more")))
                        .collect(),
                    Listing::Redirect => return ResponseTemplate::new(302).insert_header("location", "/elsewhere"),
                };
                ResponseTemplate::new(200).set_body_json(listed)
            }
            ("POST", path) if path == list => {
                let id = 5000 + comments.len() as u64;
                comments.push(Comment::new(id, api.identity.login(), body()));
                ResponseTemplate::new(201).set_body_json(json!({"id": id}))
            }
            ("PATCH", path) if path.starts_with(&one) => {
                let id: u64 = path[one.len()..].parse().unwrap();
                let Some(comment) = comments.iter_mut().find(|comment| comment.id == id) else {
                    return ResponseTemplate::new(404);
                };
                comment.body = body();
                ResponseTemplate::new(200).set_body_json(json!({"id": id}))
            }
            _ => ResponseTemplate::new(404),
        }
    }
}

/// A comment as the API lists it: bots are of type `Bot`.
fn json(comment: &Comment) -> Value {
    let kind = if comment.author.ends_with("[bot]") { "Bot" } else { "User" };
    json!({"id": comment.id, "body": comment.body, "user": {"login": comment.author, "type": kind}})
}
