//! `--metrics-addr HOST:PORT`: Prometheus's text format at `http://HOST:PORT/metrics`. The library
//! records its metrics through the `metrics` facade, which does nothing until a recorder is
//! installed; the binary installs the exporter here, and only here, for every command that
//! takes the flag.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs as _};

use anyhow::Context as _;
use cascade::telemetry;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

/// What the log line says once metrics are served (with `url`).
pub const SERVING: &str = "serving metrics";

/// Parses `HOST:PORT` (a name such as `localhost`, or an address; `[::1]:9000` for IPv6) into
/// the first address it resolves to: the value parser of `--metrics-addr`.
pub fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    let mut addresses = text.to_socket_addrs().map_err(|error| format!("expected HOST:PORT ({error})"))?;
    addresses.next().ok_or_else(|| format!("`{text}` resolves to no address"))
}

/// Serves every metric the library records at `http://ADDR/metrics` for the rest of the process,
/// from a thread of its own. Port 0 takes any free port; the log line [`SERVING`] gives the URL.
/// A port already in use is an error that says so.
pub fn serve(addr: SocketAddr) -> anyhow::Result<()> {
    // Bound once here for a clear error (and to learn which port 0 became); the exporter binds
    // the same address again right after.
    let addr =
        TcpListener::bind(addr).and_then(|listener| listener.local_addr()).map_err(|error| match error.kind() {
            std::io::ErrorKind::AddrInUse => anyhow::anyhow!(
                "cannot serve metrics on {addr}: the address is already in use (another process listens on it); \
                 choose another port with --metrics-addr"
            ),
            _ => anyhow::Error::new(error).context(format!("cannot serve metrics on {addr}")),
        })?;
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(Matcher::Full(telemetry::CHUNK_DURATION.to_owned()), telemetry::CHUNK_DURATION_BUCKETS)?
        .install()
        .with_context(|| format!("cannot serve metrics on {addr}"))?;
    telemetry::describe();
    tracing::info!(url = %format!("http://{addr}/metrics"), "{SERVING}");
    Ok(())
}
