//! Live counters for `cat-blobd stats`: connections now and in all, streams ended, the requests and bytes of every
//! stream as they happen, plus the shared delta-base cache and the packs mapped, read at the moment of asking.
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::engine::LiveCounters;

use super::repos::Repos;
use super::root::Pool;
use crate::git_compat::quote::quote_c_style;

#[derive(Debug, Default)]
pub(super) struct Counters {
    /// Connections accepted and not yet closed (handshakes included).
    pub open: AtomicU64,
    /// Connections accepted since start (refused ones included).
    pub total: AtomicU64,
    /// Connections refused: wrong uid, full, a bad hello, a forbidden flag.
    pub refused: AtomicU64,
    /// Streams that ended with exit status 0.
    pub streams_ok: AtomicU64,
    /// Streams that ended otherwise (fatal, usage, marks not written, broken pipe, cut).
    pub streams_failed: AtomicU64,
    /// Requests (`cat-blob`, `get-mark`, `ls`) answered and bytes written to cat-blob fds, by every stream,
    /// open ones included, counted as they happen.
    pub work: Arc<LiveCounters>,
    /// Marks held by every open stream (capped by --max-marks-total).
    pub marks_held: Arc<AtomicU64>,
    /// Blobs defined by every open stream (capped by --max-stream-blobs-total).
    pub stream_blobs_held: Arc<AtomicU64>,
    /// Bytes of those in their temporary files (capped by --max-spill-bytes-total).
    pub spill_bytes_held: Arc<AtomicU64>,
}

/// Adds to a counter.
pub(super) fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    /// The `stats` answer: one `<name> <value>` per line.
    pub(super) fn render(&self, repos: &Repos, uptime: Duration, log_dropped: u64) -> String {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let (hits, misses, cache_bytes, inflated) = match repos {
            Repos::One(one) => {
                let cache = &one.session.cache;
                let (hits, misses) = cache.hit_counts();
                (hits, misses, cache.bytes() as u64, cache.inflated_bytes())
            }
            Repos::Root(pool) => pool.views().iter().fold((0, 0, pool.usage().1, 0), |sum, view| {
                (sum.0 + view.cache_hits, sum.1 + view.cache_misses, sum.2, sum.3)
            }),
        };
        let ratio = if hits + misses == 0 { 0.0 } else { hits as f64 / (hits + misses) as f64 };
        let mut out = String::new();
        let mut line = |name: &str, value: &dyn std::fmt::Display| {
            let _ = writeln!(out, "{name} {value}");
        };
        line("connections_open", &get(&self.open));
        line("connections_total", &get(&self.total));
        line("connections_refused", &get(&self.refused));
        line("streams_ok", &get(&self.streams_ok));
        line("streams_failed", &get(&self.streams_failed));
        line("requests", &get(&self.work.requests));
        line("bytes", &get(&self.work.bytes));
        line("marks_held", &get(&self.marks_held));
        line("stream_blobs_held", &get(&self.stream_blobs_held));
        line("spill_bytes_held", &get(&self.spill_bytes_held));
        line("delta_cache_hits", &hits);
        line("delta_cache_misses", &misses);
        line("delta_cache_hit_ratio", &format_args!("{ratio:.4}"));
        line("delta_cache_bytes", &cache_bytes);
        line("inflated_bytes", &inflated);
        line("packs_mapped", &repos.pack_count());
        line("log_lines_dropped", &log_dropped);
        line("uptime_seconds", &format_args!("{:.3}", uptime.as_secs_f64()));
        if let Repos::Root(pool) = repos {
            render_root(pool, &mut out);
        }
        out
    }
}

/// A `--root` daemon's pool, then one line per repository: `repository <path, C-quoted as git quotes paths> <name>=<value>…`.
fn render_root(pool: &Pool, out: &mut String) {
    let (open, memory) = pool.usage();
    let limits = pool.limits();
    let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    let _ = writeln!(out, "repositories_open {open}");
    let _ = writeln!(out, "repositories_opened_total {}", get(&pool.opened));
    let _ = writeln!(out, "repositories_evicted_total {}", get(&pool.evicted));
    let _ = writeln!(out, "max_open_repositories {}", limits.max_open);
    let _ = writeln!(out, "memory_bytes {memory}");
    let _ = writeln!(out, "memory_budget_bytes {}", limits.memory_budget);
    for view in pool.views() {
        let mut path = Vec::new();
        quote_c_style(view.git_dir.as_os_str().as_encoded_bytes(), true, &mut path);
        let stats = &view.stats;
        let _ = writeln!(
            out,
            "repository {} open={} clients={} requests={} bytes={} cache_hits={} cache_misses={} opens={} evictions={}",
            // Quoted with core.quotePath's rules: ASCII only.
            path.escape_ascii(),
            u8::from(view.open),
            get(&stats.clients),
            get(&stats.requests),
            get(&stats.bytes),
            view.cache_hits,
            view.cache_misses,
            get(&stats.opens),
            get(&stats.evictions),
        );
    }
}
