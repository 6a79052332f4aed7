//! Reading `--metrics-addr`: a plain HTTP GET of `/metrics` and Prometheus's text format parsed.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;

/// What a command logs once it serves metrics (with `url`).
pub const SERVING: &str = "serving metrics";

/// One sample of the text format: the metric's name, its labels and its value.
#[derive(Debug)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// The samples of a Prometheus text-format body (comment lines left out).
pub fn parse(body: &str) -> Vec<Sample> {
    body.lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("a sample line: {line}"));
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("a value: {line}"));
            let (name, labels) = match series.split_once('{') {
                Some((name, labels)) => (name, labels.strip_suffix('}').expect("labels end with }")),
                None => (series, ""),
            };
            let labels = labels
                .split(',')
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let (key, quoted) = pair.split_once('=').expect("label=\"value\"");
                    (key.to_owned(), quoted.trim_matches('"').to_owned())
                })
                .collect();
            Sample { name: name.to_owned(), labels, value }
        })
        .collect()
}

/// The value of the series `name` with exactly `labels`, if it is there.
pub fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let labels: BTreeMap<String, String> = labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    samples.iter().find(|sample| sample.name == name && sample.labels == labels).map(|sample| sample.value)
}

/// `GET /metrics` over a plain TCP connection: the status line, the headers and the body.
pub fn scrape(url: &str) -> (String, String) {
    let address = url.strip_prefix("http://").and_then(|rest| rest.strip_suffix("/metrics")).expect("a metrics URL");
    let mut stream = TcpStream::connect(address).expect("connect to the metrics endpoint");
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read the response");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    (head.to_owned(), body.to_owned())
}

/// A real Prometheus server (Debian's `prometheus`) scraping `targets` every second and
/// evaluating `rule_files` every second, its data in a temporary directory; killed when dropped.
pub struct Server {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    _data: tempfile::TempDir,
}

/// What Prometheus logs once it answers queries.
const READY: &str = "Server is ready to receive web requests.";

impl Server {
    /// Starts `prometheus` and waits for it to say it is ready.
    pub fn start(prometheus: &std::path::Path, targets: &[&str], rule_files: &[&std::path::Path]) -> Self {
        use std::io::BufRead as _;
        let data = tempfile::tempdir().expect("a temporary directory");
        let config = serde_json::json!({
            "global": { "scrape_interval": "1s", "evaluation_interval": "1s" },
            "rule_files": rule_files,
            "scrape_configs": [{ "job_name": "cascade", "static_configs": [{ "targets": targets }] }],
        });
        let config_path = data.path().join("prometheus.yml");
        // JSON is YAML.
        std::fs::write(&config_path, config.to_string()).expect("write prometheus.yml");
        // A free port, found by binding it; Prometheus binds it again right after.
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let mut child = std::process::Command::new(prometheus)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.tsdb.path={}", data.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start prometheus");
        let stderr = child.stderr.take().expect("a piped stderr");
        let (sender, ready) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut log = String::new();
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                log += &line;
                log.push('\n');
                if line.contains(READY) {
                    let _ = sender.send(Ok(()));
                }
            }
            let _ = sender.send(Err(log));
        });
        let server = Self { child, url: format!("http://127.0.0.1:{port}"), _data: data };
        match ready.recv_timeout(super::DEADLINE) {
            Ok(Ok(())) => server,
            Ok(Err(log)) => panic!("prometheus ended before it was ready:\n{log}"),
            Err(_) => panic!("prometheus was not ready within {:?}", super::DEADLINE),
        }
    }

    /// `GET /api/v1/PATH?QUERY` (`query` already encoded), as JSON; fails the test unless the
    /// answer is a success.
    pub fn api(&self, path: &str, query: &str) -> serde_json::Value {
        let url = format!("{}/api/v1/{path}?{query}", self.url);
        let text = super::block_on(async {
            reqwest::get(&url).await.expect("ask prometheus").text().await.expect("read the answer")
        });
        let answer: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|error| panic!("{url}: {error}: {text}"));
        assert_eq!(answer["status"], "success", "{url}: {answer}");
        answer
    }

    /// The result of the instant query `expr`, now.
    pub fn query(&self, expr: &str) -> Vec<serde_json::Value> {
        let encoded: String = expr
            .bytes()
            .map(|byte| match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => char::from(byte).to_string(),
                _ => format!("%{byte:02X}"),
            })
            .collect();
        let answer = self.api("query", &format!("query={encoded}"));
        answer["data"]["result"].as_array().cloned().unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
