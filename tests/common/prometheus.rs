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
