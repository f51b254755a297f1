//! The simulator's plots: latency CDFs, running batch and queue over time, and throughput against
//! p99 latency over a sweep of arrival rates. One multi-series line chart draws all three.

use super::roofline::rgb;
use super::svg::{finish, href, Anchor, Links, Overlay, FG};
use super::{Legend, PlotError, PlotSize};
use crate::human;
use llm_ledger_core::simulate::stats::SeriesPoint;
use llm_ledger_core::simulate::{SimSummary, Simulation};
use plotters::prelude::*;

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Legend label.
    pub label: String,
    /// Stroke colour.
    pub colour: &'static str,
    /// Points, in drawing order.
    pub points: Vec<(f64, f64)>,
    /// Draw its marks as visible markers (else as invisible hover targets on the line).
    pub markers: bool,
    /// The points that carry a hover text (all of a sweep's; a sample of a long line's).
    pub marks: Vec<LineMark>,
}

/// A point of a line with its hover text, and for a rate sweep the arrival rate it ran at (the
/// key of its link).
#[derive(Debug, Clone, PartialEq)]
pub struct LineMark {
    /// Index into [`Line::points`].
    pub index: usize,
    /// Hover text, with units.
    pub tip: String,
    /// Offered arrival rate, requests per second (rate sweeps).
    pub rate_per_s: Option<f64>,
}

/// Most hover targets on one line: every `⌈n ÷ MAX_TARGETS⌉`-th point carries one.
pub const MAX_TARGETS: usize = 48;

/// Indices `0, s, 2s, …` of `n` points, `s` chosen so that at most [`MAX_TARGETS`] remain, plus
/// the last.
fn sample(n: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let step = n.div_ceil(MAX_TARGETS).max(1);
    let mut v: Vec<usize> = (0..n).step_by(step).collect();
    if v.last() != Some(&(n - 1)) {
        v.push(n - 1);
    }
    v
}

/// The points in order of their offered rate.
/// The rate a sweep's point was offered (its arrival rate where none was set apart), requests/s.
fn offered_rate(s: &SimSummary) -> f64 {
    s.offered_rate_per_s.unwrap_or(s.arrival_rate_per_s)
}

/// A rate sweep's line: `f` of each point (sorted by rate) against its offered rate, each point a
/// marker with the hover text `tip(rate, value)` and its rate (the key of its link).
fn rate_line(
    sorted: &[&SimSummary],
    label: &str,
    colour: &'static str,
    f: fn(&SimSummary) -> f64,
    tip: impl Fn(f64, f64) -> String,
) -> Line {
    Line {
        label: label.into(),
        colour,
        points: sorted.iter().map(|s| (offered_rate(s), f(s))).collect(),
        markers: true,
        marks: sorted
            .iter()
            .enumerate()
            .map(|(i, s)| LineMark { index: i, tip: tip(offered_rate(s), f(s)), rate_per_s: Some(offered_rate(s)) })
            .collect(),
    }
}

fn by_rate(points: &[SimSummary]) -> Vec<&SimSummary> {
    let mut v: Vec<&SimSummary> = points.iter().collect();
    v.sort_by(|a, b| offered_rate(a).total_cmp(&offered_rate(b)));
    v
}

/// The knee ([`knee`]) as a vertical rule.
fn knee_rule(points: &[SimSummary]) -> Option<Rule> {
    knee(points).map(|at| Rule {
        vertical: true,
        at,
        label: format!("knee {} requests/s", human::sig3(at)),
        colour: COLOURS[3],
    })
}

/// A line chart with linear axes from 0, or a logarithmic x axis ([`ServingChart::x_log`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ServingChart {
    /// Title line.
    pub title: Option<String>,
    /// Axis descriptions.
    pub x_desc: String,
    /// Axis descriptions.
    pub y_desc: String,
    /// Values are seconds on this axis (labels in ms / s).
    pub x_seconds: bool,
    /// Values are seconds on the y axis.
    pub y_seconds: bool,
    /// The x axis is logarithmic, whole decades from the smallest positive x to the largest (the
    /// latency CDFs: TTFT, TPOT and ITL are milliseconds where the end-to-end latency is seconds,
    /// and a linear axis crushes them into its first few per cent).
    pub x_log: bool,
    /// The y axis is logarithmic, whole decades (a rate sweep's p99 latencies, milliseconds
    /// before the knee and seconds past it).
    pub y_log: bool,
    /// The lines.
    pub lines: Vec<Line>,
    /// Reference lines across the chart (an SLA, the knee of a sweep).
    pub rules: Vec<Rule>,
}

/// A reference line across a chart, labelled: a bound at a y (an SLA) or a marked x (a knee).
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Across at an x (else along at a y).
    pub vertical: bool,
    /// Where, in the axis' units.
    pub at: f64,
    /// Its label, with units.
    pub label: String,
    /// Stroke colour.
    pub colour: &'static str,
}

/// Of a goodput at or above this fraction of the offered rate, the instance keeps up.
pub const KEEPS_UP: f64 = 0.9;

/// The knee of a rate sweep: the highest offered rate up to which the goodput (requests/s within
/// the SLAs; every completed request without them) stays at or above [`KEEPS_UP`] of the offered
/// rate at every swept rate; `None` when even the lowest misses it.
pub fn knee(points: &[SimSummary]) -> Option<f64> {
    let mut by_rate: Vec<(f64, f64)> = points.iter().map(|s| (offered_rate(s), s.goodput_per_s)).collect();
    by_rate.sort_by(|a, b| a.0.total_cmp(&b.0));
    by_rate.iter().take_while(|(rate, good)| *good >= KEEPS_UP * rate).last().map(|(rate, _)| *rate)
}

const COLOURS: [&str; 4] = ["#3B82F6", "#E8710A", "#2DA44E", "#A371F7"];
const FONT: f64 = 12.0;

impl ServingChart {
    /// TTFT, TPOT, ITL and end-to-end latency CDFs of one run.
    pub fn latency_cdfs(sim: &Simulation, title: Option<String>) -> ServingChart {
        let lines =
            [("TTFT", &sim.ttft_cdf), ("TPOT", &sim.tpot_cdf), ("ITL", &sim.itl_cdf), ("end to end", &sim.e2e_cdf)]
                .into_iter()
                .zip(COLOURS)
                .filter(|((_, cdf), _)| !cdf.is_empty())
                .map(|((label, cdf), colour)| {
                    // A step function: each bucket's fraction from its value on.
                    let mut points = vec![(0.0, 0.0)];
                    let mut last = 0.0;
                    for &(x, f) in cdf.iter() {
                        points.push((x, last));
                        points.push((x, f));
                        last = f;
                    }
                    let what = if label == "ITL" { "tokens" } else { "requests" };
                    let marks = sample(cdf.len())
                        .into_iter()
                        .map(|i| LineMark {
                            index: 2 * i + 2,
                            tip: format!(
                                "{label}: {} of {what} at or below {}",
                                human::percent(cdf[i].1),
                                human::seconds(cdf[i].0)
                            ),
                            rate_per_s: None,
                        })
                        .collect();
                    Line { label: label.into(), colour, points, markers: false, marks }
                })
                .collect();
        ServingChart {
            title,
            x_desc: "latency (log scale)".into(),
            y_desc: "fraction of requests (tokens for ITL) at or below".into(),
            x_seconds: true,
            y_seconds: false,
            x_log: true,
            y_log: false,
            lines,
            rules: Vec::new(),
        }
    }

    /// Running sequences and waiting requests over time.
    pub fn timeline(series: &[SeriesPoint], title: Option<String>) -> ServingChart {
        let marks: Vec<LineMark> = sample(series.len())
            .into_iter()
            .map(|i| LineMark {
                index: i,
                tip: format!(
                    "at {}: running batch {} sequences · waiting queue {} requests",
                    human::seconds(series[i].t_s),
                    human::count(series[i].running),
                    human::count(series[i].waiting)
                ),
                rate_per_s: None,
            })
            .collect();
        let line = |label: &str, colour, f: fn(&SeriesPoint) -> f64| Line {
            label: label.into(),
            colour,
            points: series.iter().map(|p| (p.t_s, f(p))).collect(),
            markers: false,
            marks: marks.clone(),
        };
        ServingChart {
            title,
            x_desc: "simulated time (s)".into(),
            y_desc: "requests".into(),
            x_seconds: false,
            y_seconds: false,
            x_log: false,
            y_log: false,
            lines: vec![
                line("running batch", COLOURS[0], |p| p.running as f64),
                line("waiting queue", COLOURS[1], |p| p.waiting as f64),
            ],
            rules: Vec::new(),
        }
    }

    /// Output tokens/s against p99 TTFT and p99 TPOT over a rate sweep.
    pub fn throughput_latency(points: &[SimSummary], title: Option<String>) -> ServingChart {
        let line = |label: &str, colour, f: fn(&SimSummary) -> f64| Line {
            label: label.into(),
            colour,
            points: points.iter().map(|s| (f(s), s.output_tokens_per_s)).collect(),
            markers: true,
            marks: points
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let rate = offered_rate(s);
                    LineMark {
                        index: i,
                        tip: format!(
                            "rate {} requests/s\n{label} {} · {} output tokens/s",
                            human::sig3(rate),
                            human::seconds(f(s)),
                            human::sig3(s.output_tokens_per_s)
                        ),
                        rate_per_s: Some(rate),
                    }
                })
                .collect(),
        };
        ServingChart {
            title,
            x_desc: "p99 latency".into(),
            y_desc: "output tokens/s".into(),
            x_seconds: true,
            y_seconds: false,
            x_log: false,
            y_log: false,
            lines: vec![line("p99 TTFT", COLOURS[0], |s| s.ttft_s.p99), line("p99 TPOT", COLOURS[1], |s| s.tpot_s.p99)],
            rules: Vec::new(),
        }
    }

    /// A rate sweep's goodput and completed requests/s against the offered rate, with the
    /// offered rate itself (y = x: what an instance that keeps up serves) and the knee marked.
    pub fn sweep_goodput(points: &[SimSummary], title: Option<String>) -> ServingChart {
        let sorted = by_rate(points);
        let line = |label: &str, colour, f: fn(&SimSummary) -> f64| {
            rate_line(&sorted, label, colour, f, |r, v| {
                format!(
                    "rate {} requests/s\n{label} {} requests/s ({} of the rate)",
                    human::sig3(r),
                    human::sig3(v),
                    human::percent(v / r)
                )
            })
        };
        let offered = Line {
            label: "offered rate".into(),
            colour: "#8C959F",
            points: sorted.iter().map(|s| (offered_rate(s), offered_rate(s))).collect(),
            markers: false,
            marks: Vec::new(),
        };
        ServingChart {
            title,
            x_desc: "offered rate (requests/s)".into(),
            y_desc: "requests/s".into(),
            x_seconds: false,
            y_seconds: false,
            x_log: false,
            y_log: false,
            lines: vec![
                offered,
                line("completed", COLOURS[1], |s| s.requests_per_s),
                line("goodput", COLOURS[0], |s| s.goodput_per_s),
            ],
            rules: knee_rule(points).into_iter().collect(),
        }
    }

    /// A rate sweep's p99 TTFT and TPOT against the offered rate (log scale: milliseconds before
    /// the knee, seconds past it), with the SLAs given and the knee marked.
    pub fn sweep_latency(
        points: &[SimSummary],
        ttft_slo_s: Option<f64>,
        tpot_slo_s: Option<f64>,
        title: Option<String>,
    ) -> ServingChart {
        let sorted = by_rate(points);
        let line = |label: &str, colour, f: fn(&SimSummary) -> f64| {
            rate_line(&sorted, label, colour, f, |r, v| {
                format!("rate {} requests/s\n{label} {}", human::sig3(r), human::seconds(v))
            })
        };
        let mut rules: Vec<Rule> = [("TTFT", ttft_slo_s, COLOURS[0]), ("TPOT", tpot_slo_s, COLOURS[1])]
            .into_iter()
            .filter_map(|(name, slo, colour)| {
                slo.map(|at| Rule { vertical: false, at, label: format!("{name} SLA {}", human::seconds(at)), colour })
            })
            .collect();
        rules.extend(knee_rule(points));
        ServingChart {
            title,
            x_desc: "offered rate (requests/s)".into(),
            y_desc: "p99 latency (log scale)".into(),
            x_seconds: false,
            y_seconds: true,
            x_log: false,
            y_log: true,
            lines: vec![line("p99 TTFT", COLOURS[0], |s| s.ttft_s.p99), line("p99 TPOT", COLOURS[1], |s| s.tpot_s.p99)],
            rules,
        }
    }

    /// Render as an inline `<svg>` element.
    pub fn svg(&self, size: PlotSize) -> Result<String, PlotError> {
        self.svg_linked(size, None)
    }

    /// [`ServingChart::svg`], each mark linked where `links` says (a sweep's point: its rate).
    pub fn svg_linked(&self, size: PlotSize, links: Links<'_, LineMark>) -> Result<String, PlotError> {
        let all = || self.lines.iter().flat_map(|l| l.points.iter());
        if all().next().is_none() {
            return Err(PlotError("no points to draw".into()));
        }
        if !all().all(|(x, y)| x.is_finite() && y.is_finite()) {
            return Err(PlotError("the points must be finite".into()));
        }
        if size.width < 300 || size.height < 200 {
            return Err(PlotError(format!("a {}×{} plot is too small", size.width, size.height)));
        }
        let largest = all().map(|p| p.0).fold(0.0, f64::max).max(1e-9);
        // The rules' values are on the axes too (an SLA above every latency still shows).
        let rule_ys = || self.rules.iter().filter(|r| !r.vertical && r.at.is_finite() && r.at > 0.0).map(|r| r.at);
        let tallest = all().map(|p| p.1).chain(rule_ys()).fold(0.0, f64::max).max(1e-9);
        let y_max = tallest * 1.1;
        // A log axis runs over whole decades, from the smallest positive value (a step function's
        // start at 0 drawn there) to the largest; a value is drawn at its log10.
        let smallest = all().map(|p| p.0).filter(|x| *x > 0.0).fold(largest, f64::min);
        let (x_min, x_max) = if self.x_log {
            let (lo, hi) = (smallest.log10().floor(), largest.log10().ceil());
            (lo, hi.max(lo + 1.0))
        } else {
            (0.0, largest * 1.05)
        };
        let lowest = all().map(|p| p.1).chain(rule_ys()).filter(|y| *y > 0.0).fold(tallest, f64::min);
        let (y_min, y_top) = if self.y_log {
            let (lo, hi) = (lowest.log10().floor(), tallest.log10().ceil());
            (lo, hi.max(lo + 1.0))
        } else {
            (0.0, y_max)
        };
        let (x_log, y_log) = (self.x_log, self.y_log);
        let at = move |x: f64| if x_log { x.max(smallest).log10() } else { x };
        let at_y = move |y: f64| if y_log { y.max(lowest).log10() } else { y };
        let fmt = |seconds: bool, log: bool| {
            move |v: &f64| {
                let v = if log { 10f64.powf(*v) } else { *v };
                if seconds {
                    human::seconds(v)
                } else {
                    human::sig3(v)
                }
            }
        };
        let (x_fmt, y_fmt) = (fmt(self.x_seconds, self.x_log), fmt(self.y_seconds, self.y_log));
        // Narrow, the legend goes below the plot, and the CDFs' long axis name is cut short.
        let narrow = size.is_narrow();
        let legend = if narrow {
            self.lines.iter().fold(Legend::default(), |l, line| l.line(line.colour, "", line.label.as_str()))
        } else {
            Legend::default()
        };
        let y_desc = match self.y_desc.as_str() {
            "fraction of requests (tokens for ITL) at or below" if narrow => "fraction at or below",
            d => d,
        };
        let mut buf = String::new();
        let mut o = Overlay::default();
        {
            let root = SVGBackend::with_string(&mut buf, size.canvas(&legend)).into_drawing_area();
            let (mut builder, legend_y) =
                super::line_chart_sized(&root, self.title.as_deref(), size, &mut o, false, legend.height(size.width));
            let mut chart = builder.build_cartesian_2d(x_min..x_max, y_min..y_top)?;
            let y_labels = if self.y_log { ((y_top - y_min) as usize + 1).max(2) } else { 6 };
            super::draw_mesh_at(
                &mut chart,
                &super::Mesh {
                    x_labels: 6,
                    y_labels: Some(y_labels),
                    x_fmt: &x_fmt,
                    y_fmt: &y_fmt,
                    x_desc: &self.x_desc,
                    y_desc,
                },
                size,
            )?;
            let area = chart.plotting_area().clone();
            for r in &self.rules {
                let (a, b) = if r.vertical {
                    (area.map_coordinate(&(at(r.at), y_min)), area.map_coordinate(&(at(r.at), y_top)))
                } else {
                    (area.map_coordinate(&(x_min, at_y(r.at))), area.map_coordinate(&(x_max, at_y(r.at))))
                };
                o.line(a, b, r.colour, 1.5, "6 4");
                let (xy, anchor) =
                    if r.vertical { ((b.0 - 4, b.1 + 14), Anchor::End) } else { ((b.0 - 4, b.1 - 5), Anchor::End) };
                o.text(xy, &r.label, FONT - 1.0, FG, anchor, 0.0);
            }
            for l in &self.lines {
                let drawn = l.points.iter().map(|&(x, y)| (at(x), at_y(y)));
                chart.draw_series(LineSeries::new(drawn, rgb(l.colour).stroke_width(2)))?;
                for m in &l.marks {
                    let Some(&(x, y)) = l.points.get(m.index) else { continue };
                    let (xy, url) = (area.map_coordinate(&(at(x), at_y(y))), href(links, m));
                    if l.markers {
                        o.point_link(xy, 4.0, l.colour, "point", &m.tip, url.as_deref());
                    } else {
                        o.target(xy, 5.0, "sample", &m.tip, url.as_deref());
                    }
                }
            }
            // The legend: below the plot where narrow; else above it, wrapped onto more lines
            // where it does not fit.
            if narrow {
                legend.draw_below(&mut o, legend_y, size);
            } else {
                let (left, _) = area.map_coordinate(&(x_min, y_top));
                let (mut lx, mut ly) = (left, legend_y);
                for l in &self.lines {
                    let w = 60 + super::svg::text_width(&l.label, FONT) as i32;
                    if lx > left && lx + w - 24 > size.width as i32 {
                        lx = left;
                        ly += 16;
                    }
                    o.line((lx, ly - 4), (lx + 24, ly - 4), l.colour, 2.0, "");
                    o.text((lx + 30, ly), &l.label, FONT, FG, Anchor::Start, 0.0);
                    lx += w;
                }
            }
            root.present()?;
        }
        Ok(finish(&buf, o, "plot serving", &format!("{} against {}", self.y_desc, self.x_desc)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_ledger_core::simulate::{simulate, SimConfig};
    use llm_ledger_core::{Catalog, ScenarioRequest};

    #[test]
    fn draws_the_cdfs_the_timeline_and_the_sweep() {
        let sc = ScenarioRequest::default().resolve(&Catalog::builtin()).unwrap();
        let cfg = SimConfig { requests: 100, ..SimConfig::poisson(4.0) };
        let sim = simulate(&sc, &cfg, |_| {}).unwrap();
        let cdf = ServingChart::latency_cdfs(&sim, Some("t".into())).svg(PlotSize::default()).unwrap();
        assert!(cdf.contains("TTFT") && cdf.contains("end to end"), "{cdf}");
        let t = ServingChart::timeline(&sim.series, None).svg(PlotSize::default()).unwrap();
        assert!(t.contains("waiting queue"));
        let s = ServingChart::throughput_latency(std::slice::from_ref(&sim.summary), None)
            .svg(PlotSize::default())
            .unwrap();
        assert!(s.contains("<title>rate "), "{s}");
        assert!(!s.contains("#000000"));
        let empty = ServingChart::throughput_latency(&[], None);
        assert!(empty.svg(PlotSize::default()).is_err());
    }

    #[test]
    fn narrow_charts_fit_a_phone_with_their_legend_below() {
        let sc = ScenarioRequest::default().resolve(&Catalog::builtin()).unwrap();
        let sim = simulate(&sc, &SimConfig { requests: 100, ..SimConfig::poisson(4.0) }, |_| {}).unwrap();
        let sweep: Vec<SimSummary> = [2.0, 4.0, 8.0]
            .iter()
            .map(|r| simulate(&sc, &SimConfig { requests: 60, ..SimConfig::poisson(*r) }, |_| {}).unwrap().summary)
            .collect();
        let charts = [
            ServingChart::latency_cdfs(&sim, None),
            ServingChart::timeline(&sim.series, None),
            ServingChart::sweep_goodput(&sweep, None),
        ];
        for c in &charts {
            let s = c.svg(PlotSize::NARROW).unwrap();
            super::super::phone::assert_fits(&s);
            for l in &c.lines {
                assert!(s.contains(&format!(">{}</text>", super::super::svg::esc(&l.label))), "{}: {s}", l.label);
            }
        }
        let cdf = charts[0].svg(PlotSize::NARROW).unwrap();
        assert!(cdf.contains("\nfraction at or below\n"), "{cdf}");
    }

    /// Every mark's `<title>` holds its numbers with units — the CDFs' fraction
    /// and latency, the timeline's batch and queue, the sweep's rate, p99 and throughput — and a
    /// sweep's marks link to their rate.
    #[test]
    fn every_mark_carries_its_numbers_and_the_sweep_links_rates() {
        let sc = ScenarioRequest::default().resolve(&Catalog::builtin()).unwrap();
        let runs: Vec<_> = [2.0, 4.0]
            .iter()
            .map(|r| simulate(&sc, &SimConfig { requests: 200, ..SimConfig::poisson(*r) }, |_| {}).unwrap())
            .collect();
        let sim = &runs[0];
        let cdf = ServingChart::latency_cdfs(sim, None).svg(PlotSize::default()).unwrap();
        let ms = crate::plot::marks(&cdf);
        let ttft: Vec<_> = ms.iter().filter(|m| m.tooltip.starts_with("TTFT: ")).collect();
        assert_eq!(ttft.len(), sample(sim.ttft_cdf.len()).len());
        assert!(ttft.len() <= MAX_TARGETS + 1);
        let (x, f) = *sim.ttft_cdf.last().unwrap();
        let want = format!("TTFT: {} of requests at or below {}", human::percent(f), human::seconds(x));
        assert_eq!(ttft.last().unwrap().tooltip, want);
        assert!(ms.iter().any(|m| m.tooltip.starts_with("ITL: ") && m.tooltip.contains(" of tokens at or below ")));

        let t = ServingChart::timeline(&sim.series, None).svg(PlotSize::default()).unwrap();
        let ms = crate::plot::marks(&t);
        assert_eq!(ms.len(), 2 * sample(sim.series.len()).len());
        let p = &sim.series[0];
        assert_eq!(
            ms[0].tooltip,
            format!(
                "at {}: running batch {} sequences · waiting queue {} requests",
                human::seconds(p.t_s),
                p.running,
                p.waiting
            )
        );

        let summaries: Vec<SimSummary> = runs.iter().map(|r| r.summary.clone()).collect();
        let link = |m: &LineMark| m.rate_per_s.map(|r| format!("/serving?rate={r}"));
        let s =
            ServingChart::throughput_latency(&summaries, None).svg_linked(PlotSize::default(), Some(&link)).unwrap();
        let ms = crate::plot::marks(&s);
        assert_eq!(ms.len(), 4);
        for (i, run) in summaries.iter().enumerate() {
            let rate = run.offered_rate_per_s.unwrap();
            for (m, p99) in [(&ms[i], run.ttft_s.p99), (&ms[2 + i], run.tpot_s.p99)] {
                assert!(m.tooltip.starts_with(&format!("rate {} requests/s\n", human::sig3(rate))), "{}", m.tooltip);
                assert!(m.tooltip.contains(&human::seconds(p99)));
                assert!(m.tooltip.ends_with(&format!("{} output tokens/s", human::sig3(run.output_tokens_per_s))));
                assert_eq!(m.href, Some(format!("/serving?rate={rate}")));
            }
        }
    }

    /// The hover targets' x positions of each latency's CDF, by its label.
    fn target_xs(svg: &str, label: &str) -> Vec<f64> {
        svg.split("<circle class=\"sample\" cx=\"")
            .skip(1)
            .filter(|c| c[..c.find("</circle>").unwrap()].contains(&format!("<title>{label}: ")))
            .map(|c| c[..c.find('"').unwrap()].parse().unwrap())
            .collect()
    }

    /// On the CDFs' log axis TTFT, TPOT and ITL (milliseconds) and the end-to-end latency
    /// (seconds) all spread over the plot; on a linear axis from 0 the first three sit in its
    /// first few per cent.
    #[test]
    fn the_latency_cdfs_are_drawn_on_a_log_axis_where_each_latency_is_readable() {
        let sc = ScenarioRequest::default().resolve(&Catalog::builtin()).unwrap();
        let sim = simulate(&sc, &SimConfig { requests: 200, ..SimConfig::poisson(4.0) }, |_| {}).unwrap();
        let log = ServingChart::latency_cdfs(&sim, None);
        assert!(log.x_log && log.x_desc.contains("log"));
        let linear = ServingChart { x_log: false, ..log.clone() };
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        // Where each latency's median target sits, as a fraction of the span of every target.
        let share = |chart: &ServingChart, label: &str| {
            let svg = chart.svg(PlotSize::default()).unwrap();
            let all: Vec<f64> = ["TTFT", "TPOT", "ITL", "end to end"].iter().flat_map(|l| target_xs(&svg, l)).collect();
            let (lo, hi) = all.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
            (median(target_xs(&svg, label)) - lo) / (hi - lo)
        };
        for label in ["TTFT", "TPOT", "ITL"] {
            assert!(share(&linear, label) < 0.05, "{label} on the linear axis: {}", share(&linear, label));
        }
        // TPOT and ITL are the smallest latencies (the left end); TTFT and end to end sit apart.
        let (tpot, ttft, e2e) = (share(&log, "TPOT"), share(&log, "TTFT"), share(&log, "end to end"));
        assert!(ttft > 0.15 && e2e > ttft + 0.15, "TTFT {ttft}, end to end {e2e}");
        assert!(tpot < ttft, "TPOT {tpot} TTFT {ttft}");
    }
}
