//! The results: one table on stdout, the same data as JSON, and an SVG bar chart of the ratios.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::Serialize;

use crate::corpus::CorpusInfo;
use crate::requests::{Order, Sample};
use crate::run::{Kind, Latency, Measurement, Tool};

#[derive(Serialize)]
pub struct Report {
    pub meta: Meta,
    pub batch: Vec<OrderResult>,
    pub latency: Vec<LatencyResult>,
}

#[derive(Serialize)]
pub struct Meta {
    pub git_dir: String,
    pub corpus: Option<CorpusInfo>,
    /// `git --version` of each git compared against.
    pub git_versions: Vec<String>,
    pub cat_blobd: Option<String>,
    pub cat_blobd_args: Vec<String>,
    /// Ratios divide each tool's median wall time by this tool's.
    pub baseline: Tool,
    /// Blobs in each blob order's stream.
    pub requests: usize,
    /// How they were chosen: `--sample`, `--max-size`, `--seed`, and how many blobs qualified.
    pub sample: Sample,
    pub max_size: Option<u64>,
    pub seed: u64,
    pub eligible_blobs: usize,
    pub inventory_blobs: usize,
    pub runs: usize,
    pub payload_bytes: u64,
    pub response_bytes: u64,
    pub max_depth_requested: u32,
    pub cores: usize,
    /// `/proc/loadavg` before and after the measurements: a busy machine makes every number worse.
    pub load_before: String,
    pub load_after: String,
    pub unix_time: u64,
    pub user_sys_rss: bool,
    pub strace: bool,
}

#[derive(Serialize)]
pub struct OrderResult {
    pub order: Order,
    /// Request lines in this order's stream.
    pub requests: usize,
    /// What the stream holds, when the heading does not say it (`ls`).
    pub description: Option<String>,
    pub tools: Vec<ToolResult>,
}

#[derive(Serialize)]
pub struct ToolResult {
    pub tool: Tool,
    pub median_wall_secs: f64,
    pub min_wall_secs: f64,
    pub max_wall_secs: f64,
    pub median_user_secs: Option<f64>,
    pub median_sys_secs: Option<f64>,
    /// The median over runs of (user + sys) ÷ requests, in µs: what a request costs in CPU, on any core.
    pub median_cpu_us_per_request: Option<f64>,
    pub peak_rss_kib: Option<u64>,
    /// Response bytes per second at the median, in MB/s (10^6).
    pub mb_per_sec: f64,
    /// This tool's median wall time over the baseline's: how many times faster the baseline is.
    pub ratio_to_baseline: f64,
    /// This tool's CPU per request over the baseline's.
    pub cpu_ratio_to_baseline: f64,
    pub write_calls: Option<u64>,
    pub writes_per_response: Option<f64>,
    pub runs: Vec<Measurement>,
}

#[derive(Serialize)]
pub struct LatencyResult {
    pub tool: Tool,
    #[serde(flatten)]
    pub latency: Latency,
    /// This tool's p50 over the baseline's.
    pub p50_ratio_to_baseline: f64,
}

pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The value below which `q` of the sorted samples fall (nearest rank).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Summarises the runs of one tool on one order (ratio filled in by `fill_ratios`).
pub fn summarise(tool: Tool, runs: Vec<Measurement>, requests: usize, write_calls: Option<u64>) -> ToolResult {
    let mut walls: Vec<f64> = runs.iter().map(|m| m.wall_secs).collect();
    let median_wall_secs = median(&mut walls);
    let optional = |values: Vec<Option<f64>>| -> Option<f64> {
        let mut values: Option<Vec<f64>> = values.into_iter().collect();
        values.as_mut().map(|v| median(v))
    };
    let bytes = runs.first().map_or(0, |m| m.bytes);
    ToolResult {
        tool,
        median_wall_secs,
        min_wall_secs: walls.first().copied().unwrap_or(f64::NAN),
        max_wall_secs: walls.last().copied().unwrap_or(f64::NAN),
        median_user_secs: optional(runs.iter().map(|m| m.user_secs).collect()),
        median_sys_secs: optional(runs.iter().map(|m| m.sys_secs).collect()),
        median_cpu_us_per_request: optional(
            runs.iter().map(|m| Some((m.user_secs? + m.sys_secs?) * 1e6 / requests.max(1) as f64)).collect(),
        ),
        peak_rss_kib: runs
            .iter()
            .map(|m| m.max_rss_kib)
            .collect::<Option<Vec<u64>>>()
            .and_then(|v| v.into_iter().max()),
        mb_per_sec: bytes as f64 / median_wall_secs / 1e6,
        ratio_to_baseline: f64::NAN,
        cpu_ratio_to_baseline: f64::NAN,
        write_calls,
        writes_per_response: write_calls.map(|w| w as f64 / requests.max(1) as f64),
        runs,
    }
}

pub fn fill_ratios(report: &mut Report) {
    let baseline = report.meta.baseline;
    for order in &mut report.batch {
        let base = order.tools.iter().find(|t| t.tool == baseline);
        let (wall, cpu) = (base.map(|t| t.median_wall_secs), base.and_then(|t| t.median_cpu_us_per_request));
        for tool in &mut order.tools {
            tool.ratio_to_baseline = wall.map_or(f64::NAN, |b| tool.median_wall_secs / b);
            tool.cpu_ratio_to_baseline = match (tool.median_cpu_us_per_request, cpu) {
                (Some(t), Some(b)) => t / b,
                _ => f64::NAN,
            };
        }
    }
    let base = report.latency.iter().find(|l| l.tool == baseline).map(|l| l.latency.p50_us);
    for result in &mut report.latency {
        result.p50_ratio_to_baseline = base.map_or(f64::NAN, |b| result.latency.p50_us / b);
    }
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

/// The table printed at the end of a run (also saved next to the JSON).
pub fn table(report: &Report) -> String {
    let meta = &report.meta;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}; median of {} runs; {} cores (load {} before, {} after); {}",
        meta.git_dir,
        meta.runs,
        meta.cores,
        meta.load_before,
        meta.load_after,
        meta.git_versions.join(", "),
    );
    // The latency test asks for blobs of the set too.
    if report.batch.iter().any(|o| o.order != Order::Ls) || !report.latency.is_empty() {
        let _ = writeln!(
            out,
            "blobs: {} requests ({:.1} MB of responses, max delta depth {}), {}",
            meta.requests,
            meta.response_bytes as f64 / 1e6,
            meta.max_depth_requested,
            selection(meta),
        );
    }
    for description in report.batch.iter().filter_map(|o| o.description.as_ref()) {
        let _ = writeln!(out, "{description}");
    }
    let ratio_header = format!("÷ {}", meta.baseline.label());
    let _ = writeln!(
        out,
        "{:<8} {:<32} {:>8} {:>17} {:>7} {:>7} {:>10} {:>9} {:>8} {:>16} {:>7} {:>11}",
        "order",
        "tool",
        "wall s",
        "(min–max)",
        "user s",
        "sys s",
        "CPU µs/req",
        "RSS MiB",
        "MB/s",
        ratio_header,
        "CPU ÷",
        "writes/resp"
    );
    for order in &report.batch {
        for t in &order.tools {
            let _ = writeln!(
                out,
                "{:<8} {:<32} {:>8.3} {:>17} {:>7} {:>7} {:>10} {:>9} {:>8.1} {:>16} {:>7} {:>11}",
                order.order.name(),
                t.tool.label(),
                t.median_wall_secs,
                format!("({:.3}–{:.3})", t.min_wall_secs, t.max_wall_secs),
                opt(t.median_user_secs, 3),
                opt(t.median_sys_secs, 3),
                opt(t.median_cpu_us_per_request, 1),
                opt(t.peak_rss_kib.map(|k| k as f64 / 1024.0), 1),
                t.mb_per_sec,
                format!("{:.2}×", t.ratio_to_baseline),
                ratio(t.cpu_ratio_to_baseline),
                opt(t.writes_per_response, 2),
            );
        }
    }
    for l in &report.latency {
        let _ = writeln!(
            out,
            "latency  {:<32} p50 {:>8.1} µs  p99 {:>8.1} µs  mean {:>8.1} µs  over {} requests  p50 {} {:.2}×  writes/resp {}",
            l.tool.label(),
            l.latency.p50_us,
            l.latency.p99_us,
            l.latency.mean_us,
            l.latency.requests,
            ratio_header,
            l.p50_ratio_to_baseline,
            opt(l.latency.writes_per_response, 2),
        );
    }
    out
}

/// How the blobs were chosen, e.g. "at random (seed 1) of 85427 blobs ≤ 4096 bytes (262343 in all)".
fn selection(meta: &Meta) -> String {
    let how = match meta.sample {
        Sample::First => "the first in pack order".to_string(),
        Sample::Random => format!("at random (seed {})", meta.seed),
    };
    let of = match meta.max_size {
        Some(max) => format!("of {} blobs ≤ {max} bytes ({} in all)", meta.eligible_blobs, meta.inventory_blobs),
        None => format!("of {} blobs", meta.inventory_blobs),
    };
    format!("{how} {of}")
}

fn ratio(value: f64) -> String {
    if value.is_finite() { format!("{value:.2}×") } else { "-".to_string() }
}

/// Writes `<stem>.json`, `<stem>.txt` and `<stem>.svg`, and copies them to `vs_git-latest.*`.
pub fn save(report: &Report, dir: &Path, table: &str) -> Result<Vec<PathBuf>> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let stem = format!("vs_git-{}", report.meta.unix_time);
    let json = dir.join(format!("{stem}.json"));
    let txt = dir.join(format!("{stem}.txt"));
    let svg = dir.join(format!("{stem}.svg"));
    fs::write(&json, serde_json::to_string_pretty(report)?).with_context(|| format!("writing {}", json.display()))?;
    fs::write(&txt, table).with_context(|| format!("writing {}", txt.display()))?;
    chart(report, &svg)?;
    for path in [&json, &txt, &svg] {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        fs::copy(path, dir.join(format!("vs_git-latest.{ext}")))?;
    }
    Ok(vec![json, txt, svg])
}

/// One bar per (order, tool): how many times longer the tool takes than the baseline; plus interactive p50.
fn chart(report: &Report, path: &Path) -> Result<()> {
    let baseline = report.meta.baseline;
    let mut bars: Vec<(String, Tool, f64)> = Vec::new();
    for order in &report.batch {
        for t in order.tools.iter().filter(|t| t.tool != baseline) {
            bars.push((order.order.name().to_string(), t.tool, t.ratio_to_baseline));
        }
    }
    bars.retain(|(_, _, ratio)| ratio.is_finite());
    let throughput_bars = bars.len();
    for l in report.latency.iter().filter(|l| l.tool != baseline && l.p50_ratio_to_baseline.is_finite()) {
        bars.push(("latency p50".to_string(), l.tool, l.p50_ratio_to_baseline));
    }
    // Horizontal lines over a range of bars: (first bar, end bar, level, legend, colour).
    let mut levels = vec![(0, bars.len(), 1.0, "1×", BLACK)];
    if baseline.kind == Kind::CatBlobd {
        levels.push((0, throughput_bars, 4.0, "target 4× (throughput)", RED));
        levels.push((throughput_bars, bars.len(), 2.0, "target 2× (latency p50)", MAGENTA));
    }
    levels.retain(|&(start, end, ..)| start < end);
    let highest = levels.iter().map(|l| l.2).fold(1.0, f64::max);
    let top = bars.iter().map(|b| b.2).fold(highest, f64::max) * 1.35;
    let mut tools: Vec<Tool> = Vec::new();
    for bar in &bars {
        if !tools.contains(&bar.1) {
            tools.push(bar.1);
        }
    }
    // One hue per kind; a second git's bars are lighter.
    let colour = |tool: Tool| {
        let RGBColor(r, g, b) = match tool.kind {
            Kind::FastImport => RGBColor(0x3b, 0x6e, 0xa8),
            Kind::CatFile => RGBColor(0xe0, 0x8a, 0x2c),
            Kind::CatFileCheck => RGBColor(0xc0, 0x50, 0x50),
            Kind::CatBlobd => RGBColor(0x4c, 0x9a, 0x4c),
            Kind::CatBlobdCatFile => RGBColor(0x8a, 0x5c, 0xb8),
            Kind::CatBlobdCatFileCheck => RGBColor(0x50, 0x9a, 0xa0),
            Kind::Floor => RGBColor(0x80, 0x80, 0x80),
        };
        let lighten = |c: u8| c.saturating_add(((255 - u32::from(c)) * tool.git.min(2) as u32 / 3) as u8);
        RGBColor(lighten(r), lighten(g), lighten(b))
    };

    let root = SVGBackend::new(path, (120 + 90 * bars.len().max(1) as u32, 480)).into_drawing_area();
    let draw = || -> std::result::Result<(), Box<dyn std::error::Error>> {
        root.fill(&WHITE)?;
        let n = bars.len().max(1);
        // Bar i spans [edge(i), edge(i + 1)]; the last one ends at the end of the axis.
        let edge = |i: usize| if i >= n { SegmentValue::Last } else { SegmentValue::Exact(i) };
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "time ÷ {} time, {} requests ({}, {} runs)",
                    baseline.label(),
                    report.meta.requests,
                    report.meta.git_dir.rsplit('/').next().unwrap_or(""),
                    report.meta.runs
                ),
                ("sans-serif", 16),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d((0..n - 1).into_segmented(), 0.0..top)?;
        let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| match x {
                SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .y_desc(format!("× {} time", baseline.label()))
            .draw()?;
        let value_style = TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
        for &tool in &tools {
            let style = colour(tool).filled();
            let series: Vec<(usize, f64)> =
                bars.iter().enumerate().filter(|(_, b)| b.1 == tool).map(|(i, b)| (i, b.2)).collect();
            chart
                .draw_series(series.iter().map(|&(i, ratio)| {
                    let mut bar = Rectangle::new([(edge(i), 0.0), (edge(i + 1), ratio)], style);
                    bar.set_margin(0, 0, 12, 12);
                    bar
                }))?
                .label(tool.label())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], style));
            chart.draw_series(series.iter().map(|&(i, ratio)| {
                Text::new(format!("{ratio:.2}×"), (SegmentValue::CenterOf(i), ratio + top * 0.01), value_style.clone())
            }))?;
        }
        for &(start, end, level, label, colour) in &levels {
            chart
                .draw_series(LineSeries::new([(edge(start), level), (edge(end), level)], colour.stroke_width(1)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 12, y)], colour));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| anyhow::anyhow!("drawing {}: {e}", path.display()))
}
