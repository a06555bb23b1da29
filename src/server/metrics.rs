//! `serve --metrics ADDR`: the daemon's counters in Prometheus' text exposition format at `http://ADDR/metrics`,
//! named in the spirit of Gitaly's `gitaly_catfile_*` (a "cache member" is an open repository, where Gitaly's is
//! a `git cat-file` process). The format is written by the `prometheus` crate; the HTTP is the least a scraper needs:
//! one request per connection, answered on one thread with short timeouts, so a stalled scraper holds up only
//! the next scrape, never a stream.
use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus::{IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder};

use super::State;
use super::repos::Repos;

/// How long a scraper may take to send its request, or to take the answer.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("--metrics {0}: only a loopback address is served (the counters name repositories' activity)")]
    NotLoopback(SocketAddr),
    #[error("cannot listen for metrics on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
}

/// Binds the metrics listener (a loopback address only).
pub(super) fn bind(addr: SocketAddr) -> Result<TcpListener, MetricsError> {
    if !addr.ip().is_loopback() {
        return Err(MetricsError::NotLoopback(addr));
    }
    TcpListener::bind(addr).map_err(|source| MetricsError::Bind { addr, source })
}

/// Answers scrapes on `listener` for the life of the process.
pub(super) fn spawn(listener: TcpListener, state: Arc<State>) -> io::Result<()> {
    std::thread::Builder::new().name("metrics".into()).spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = answer(stream, &state);
        }
    })?;
    Ok(())
}

fn answer(stream: TcpStream, state: &State) -> io::Result<()> {
    stream.set_read_timeout(Some(SCRAPE_TIMEOUT))?;
    stream.set_write_timeout(Some(SCRAPE_TIMEOUT))?;
    let mut reader = BufReader::new(&stream);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // The headers, up to the blank line: nothing in them matters here.
    let mut header = String::new();
    while reader.read_line(&mut header)? > 2 {
        header.clear();
    }
    let path = request.split(' ').nth(1).unwrap_or_default();
    let (status, kind, body) = if request.starts_with("GET ") && (path == "/metrics" || path.starts_with("/metrics?")) {
        ("200 OK", "text/plain; version=0.0.4; charset=utf-8", render(state))
    } else {
        ("404 Not Found", "text/plain", "only /metrics is served\n".to_owned())
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    (&stream).write_all(head.as_bytes())?;
    (&stream).write_all(body.as_bytes())
}

/// The exposition, from the counters at this moment.
pub(super) fn render(state: &State) -> String {
    let mut out = Exposition::default();
    let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    let counters = &state.counters;
    out.counter("connections_total", "Connections accepted", &[], get(&counters.total));
    out.counter("connections_refused_total", "Connections refused", &[], get(&counters.refused));
    out.gauge("connections_open", "Connections open now", get(&counters.open));
    let streams = [("ok", get(&counters.streams_ok)), ("failed", get(&counters.streams_failed))];
    out.counter("streams_total", "Streams ended, by outcome", &streams.map(|(o, n)| (("outcome", o), n)), 0);
    out.counter("catfile_requests_total", "Requests answered", &[], get(&counters.work.requests));
    out.counter("catfile_bytes_total", "Bytes of objects written to clients", &[], get(&counters.work.bytes));
    let (hits, misses) = match &state.repos {
        Repos::One(one) => one.session.cache.hit_counts(),
        Repos::Root(pool) => pool
            .views()
            .iter()
            .fold((0, 0), |(hits, misses), view| (hits + view.cache_hits, misses + view.cache_misses)),
    };
    let lookups = [(("type", "hit"), hits), (("type", "miss"), misses)];
    out.counter("delta_base_cache_total", "Delta-base cache lookups, by result", &lookups, 0);
    if let Repos::Root(pool) = &state.repos {
        let (open, memory) = pool.usage();
        let limits = pool.limits();
        out.gauge("catfile_cache_members", "Repositories open now", open as u64);
        out.gauge("catfile_cache_members_max", "Most repositories open at once", limits.max_open as u64);
        out.gauge("memory_bytes", "Bytes of delta-base caches and mapped indexes", memory);
        out.gauge("memory_budget_bytes", "The memory budget of open repositories", limits.memory_budget);
        let cache = [
            (("type", "hit"), get(&pool.reused)),
            (("type", "miss"), get(&pool.opened)),
            (("type", "evict"), get(&pool.evicted)),
        ];
        let help =
            "Clients by whether their repository was open (hit) or opened (miss), and repositories closed (evict)";
        out.counter("catfile_cache_total", help, &cache, 0);
    }
    out.text()
}

/// A registry filled from the counters of one moment. The metrics are made here, with names and labels fixed in
/// this file: the only errors the library could report (a bad name, a name twice) cannot happen, and a metric that
/// somehow failed to register would only be missing from the answer.
struct Exposition {
    registry: Registry,
}

impl Default for Exposition {
    fn default() -> Self {
        let registry = Registry::new_custom(Some("cat_blobd".to_owned()), None).unwrap_or_default();
        Exposition { registry }
    }
}

impl Exposition {
    /// A counter, or with `labeled` one series per label value (`value` is then unused).
    fn counter(&mut self, name: &str, help: &str, labeled: &[((&str, &str), u64)], value: u64) {
        if labeled.is_empty() {
            if let Ok(counter) = IntCounter::new(name, help) {
                counter.inc_by(value);
                let _ = self.registry.register(Box::new(counter));
            }
            return;
        }
        let Ok(family) = IntCounterVec::new(Opts::new(name, help), &[labeled[0].0.0]) else { return };
        for ((_, label), value) in labeled {
            family.with_label_values(&[*label]).inc_by(*value);
        }
        let _ = self.registry.register(Box::new(family));
    }

    fn gauge(&mut self, name: &str, help: &str, value: u64) {
        if let Ok(gauge) = IntGauge::new(name, help) {
            gauge.set(i64::try_from(value).unwrap_or(i64::MAX));
            let _ = self.registry.register(Box::new(gauge));
        }
    }

    /// Prometheus' text format (0.0.4), which every scraper and `promtool` read.
    fn text(&self) -> String {
        TextEncoder::new().encode_to_string(&self.registry.gather()).unwrap_or_default()
    }
}
