//! A stand-in of the part of GitHub's REST API that `cascade diff --github-comment` uses (the real
//! one cannot be reached from tests): one pull request's comments, listed a page at a time,
//! created and updated, behind a token.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

/// The token the stand-in accepts.
pub const TOKEN: &str = "s3cret-t0ken";
/// The repository and pull request the stand-in serves.
pub const REPOSITORY: &str = "acme/app";
/// An event file's contents for that pull request.
pub const PULL_REQUEST_EVENT: &str = r#"{"pull_request": {"number": 7}}"#;

/// The pull request's comments, and how many requests came with another token.
#[derive(Default)]
pub struct GithubApi {
    pub comments: Mutex<Vec<(u64, String)>>,
    pub bad_tokens: Mutex<usize>,
}

impl GithubApi {
    /// A server answering as GitHub would, with `comments` on the pull request already.
    pub async fn start(comments: Vec<(u64, String)>) -> (Arc<GithubApi>, wiremock::MockServer) {
        let api = Arc::new(GithubApi { comments: Mutex::new(comments), bad_tokens: Mutex::new(0) });
        let server = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::any()).respond_with(Responder(api.clone())).mount(&server).await;
        (api, server)
    }

    /// The comments that hold a review.
    pub fn reviews(&self) -> Vec<(u64, String)> {
        let comments = self.comments.lock().unwrap();
        comments.iter().filter(|(_, body)| body.contains("<!-- cascade-diff -->")).cloned().collect()
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
            ("GET", path) if path == list => {
                let query: std::collections::HashMap<_, _> = request.url.query_pairs().into_owned().collect();
                let (per_page, page): (usize, usize) =
                    (query["per_page"].parse().unwrap(), query["page"].parse().unwrap());
                let listed: Vec<Value> = comments
                    .iter()
                    .skip((page - 1) * per_page)
                    .take(per_page)
                    .map(|(id, body)| json!({"id": id, "body": body}))
                    .collect();
                ResponseTemplate::new(200).set_body_json(listed)
            }
            ("POST", path) if path == list => {
                let id = 5000 + comments.len() as u64;
                comments.push((id, body()));
                ResponseTemplate::new(201).set_body_json(json!({"id": id}))
            }
            ("PATCH", path) if path.starts_with(&one) => {
                let id: u64 = path[one.len()..].parse().unwrap();
                let Some(comment) = comments.iter_mut().find(|(existing, _)| *existing == id) else {
                    return ResponseTemplate::new(404);
                };
                comment.1 = body();
                ResponseTemplate::new(200).set_body_json(json!({"id": id}))
            }
            _ => ResponseTemplate::new(404),
        }
    }
}
