//! KV bytes against cached tokens (the reference calculator: "a clean crossover rule"): the KV bytes a decode step
//! reads grow with the tokens cached across the batch (`kv_bytes_per_token × tokens`, windows
//! ignored), the weight bytes it reads do not, and the two lines cross at the crossover; the
//! workload is a point, and the memory wall (the cached tokens that fit next to the weights) a
//! shaded region. Linear axes from 0: tokens across, GB up.

use super::roofline::rgb;
use super::svg::{finish, href, text_width, Anchor, Links, Overlay, FG};
use super::{Legend, PlotError, PlotSize};
use crate::human;
use crate::kv::KvReport;
use plotters::prelude::*;

/// The chart's data (a `kv` report's numbers).
#[derive(Debug, Clone, PartialEq)]
pub struct KvChart {
    /// KV bytes per cached token, all layers.
    pub kv_bytes_per_token: f64,
    /// Weight bytes read per step.
    pub weight_bytes: f64,
    /// weight_bytes ÷ kv_bytes_per_token.
    pub crossover_tokens: f64,
    /// Cached tokens of the workload.
    pub cached_tokens: f64,
    /// KV bytes the workload's step reads (windows applied).
    pub kv_read_bytes: f64,
    /// Cached tokens that fit next to the weights and the workspace.
    pub capacity_tokens: f64,
    /// Title line above the chart.
    pub title: Option<String>,
    /// Context tokens of each sequence (uniform batches; `None` for a mix): the chart then marks
    /// whole batches along the KV line, the first batch past the crossover and the largest that fits.
    pub tokens_per_sequence: Option<f64>,
    /// Largest batch that fits at this context (uniform batches only).
    pub max_batch: Option<u64>,
}

/// What a KV chart's mark stands for (the key of its link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvMark {
    /// The workload as given.
    Workload,
    /// A batch of sequences at the workload's context: a power of two along the KV line, the
    /// first batch past the crossover, or the largest batch that fits.
    Batch(u64),
}

const KV: &str = "#3B82F6";
const WEIGHTS: &str = "#E8710A";
const CROSS: &str = "#A371F7";
const WALL: &str = "#E5484D";
const FONT: f64 = 12.0;

impl KvChart {
    /// The chart of a `kv` report.
    pub fn from_report(r: &KvReport) -> KvChart {
        let k = &r.row;
        KvChart {
            kv_bytes_per_token: k.kv_bytes_per_token,
            weight_bytes: k.weight_bytes,
            crossover_tokens: k.crossover_tokens,
            cached_tokens: k.cached_tokens,
            kv_read_bytes: k.kv_read_bytes,
            capacity_tokens: k.max_cached_tokens as f64,
            title: None,
            tokens_per_sequence: r.inputs.ctx.map(|c| c as f64).filter(|c| *c > 0.0),
            max_batch: k.max_batch,
        }
    }

    /// The right edge of the chart, tokens: room for the crossover and the workload, and for the
    /// wall unless it is far beyond them (1.25 × the farthest of them, the wall counted up to 3 ×).
    pub fn x_max_tokens(&self) -> f64 {
        let near = self.crossover_tokens.min(1e15).max(self.cached_tokens).max(1.0);
        1.25 * near.max(self.capacity_tokens.min(3.0 * near))
    }

    /// Whether the memory wall is drawn inside the frame (else it is named at the right edge).
    pub fn wall_in_frame(&self) -> bool {
        self.capacity_tokens < self.x_max_tokens()
    }

    /// Render as an inline `<svg>` element (see [`super::standalone`] for a file).
    pub fn svg(&self, size: PlotSize) -> Result<String, PlotError> {
        self.svg_linked(size, None)
    }

    /// [`KvChart::svg`], each mark linked where `links` says (the explorer: the page at that batch).
    pub fn svg_linked(&self, size: PlotSize, links: Links<'_, KvMark>) -> Result<String, PlotError> {
        let finite = [self.kv_bytes_per_token, self.weight_bytes, self.cached_tokens, self.kv_read_bytes]
            .iter()
            .all(|v| v.is_finite() && *v >= 0.0);
        if !finite || self.kv_bytes_per_token <= 0.0 {
            return Err(PlotError("KV bytes per token must be positive and the numbers finite".into()));
        }
        if size.width < 300 || size.height < 200 {
            return Err(PlotError(format!("a {}×{} plot is too small", size.width, size.height)));
        }
        let x_max = self.x_max_tokens();
        let y_max = 1.2 * (self.weight_bytes.max(self.kv_read_bytes).max(self.kv_bytes_per_token * x_max / 1.25)) / 1e9;
        let kv_label = format!("KV bytes ({} per token)", human::bytes(self.kv_bytes_per_token));
        let weights_label = format!("weight bytes ({})", human::bytes(self.weight_bytes));
        // Narrow, the legend goes below the plot.
        let legend = if size.is_narrow() {
            Legend::default().line(KV, "", kv_label.as_str()).line(WEIGHTS, "", weights_label.as_str())
        } else {
            Legend::default()
        };
        let mut buf = String::new();
        let mut o = Overlay::default();
        {
            let root = SVGBackend::with_string(&mut buf, size.canvas(&legend)).into_drawing_area();
            let (mut builder, legend_y) =
                super::line_chart_sized(&root, self.title.as_deref(), size, &mut o, false, legend.height(size.width));
            let mut chart = builder.build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
            super::draw_mesh_at(
                &mut chart,
                &super::Mesh {
                    x_labels: 6,
                    y_labels: Some(6),
                    x_fmt: &|v| human::si(*v, "").trim_end().to_string(),
                    y_fmt: &|v| human::sig3(*v),
                    x_desc: "tokens cached across the batch",
                    y_desc: "bytes read per step (GB)",
                },
                size,
            )?;
            let area = chart.plotting_area().clone();
            let at = |x: f64, y: f64| area.map_coordinate(&(x, y / 1e9));
            // Labels sit in two rows under the top edge (the crossover's, then the wall's), so they
            // never overprint each other, and each turns to the side with room so none is clipped.
            let (left, top) = at(0.0, y_max * 1e9);
            let (right, _) = at(x_max, y_max * 1e9);
            let fit = |px: i32, label: &str| -> (i32, Anchor) {
                let w = text_width(label, FONT - 1.0) as i32;
                if px + 4 + w <= right {
                    (px + 4, Anchor::Start)
                } else if px - 4 - w >= left {
                    (px - 4, Anchor::End)
                } else {
                    (right - 4, Anchor::End)
                }
            };
            // Past the wall the cache does not fit: shade it.
            if self.wall_in_frame() {
                o.rect(at(self.capacity_tokens, y_max * 1e9), at(x_max, 0.0), WALL, 0.10);
                let (px, _) = at(self.capacity_tokens, y_max * 1e9);
                o.line((px, top), at(self.capacity_tokens, 0.0), WALL, 1.5, "5 4");
                let label = format!("memory full: {} tokens", human::si(self.capacity_tokens, "").trim_end());
                let (x, anchor) = fit(px, &label);
                o.text((x, top + 30), &label, FONT - 1.0, WALL, anchor, 0.0);
            } else {
                let label = format!("memory full at {} tokens →", human::si(self.capacity_tokens, "").trim_end());
                o.text((right - 4, top + 30), &label, FONT - 1.0, WALL, Anchor::End, 0.0);
            }
            chart.draw_series(LineSeries::new(
                [(0.0, self.weight_bytes / 1e9), (x_max, self.weight_bytes / 1e9)],
                rgb(WEIGHTS).stroke_width(2),
            ))?;
            // The KV line ends where it leaves the frame: a point past the top would be clamped
            // to the edge by the backend, bending the line's slope down.
            let kv_end_tokens = x_max.min(y_max * 1e9 / self.kv_bytes_per_token);
            let kv_end = (kv_end_tokens, self.kv_bytes_per_token * kv_end_tokens / 1e9);
            chart.draw_series(LineSeries::new([(0.0, 0.0), kv_end], rgb(KV).stroke_width(2)))?;
            if self.crossover_tokens.is_finite() && self.crossover_tokens < x_max {
                let (px, _) = at(self.crossover_tokens, y_max * 1e9);
                o.line((px, top), at(self.crossover_tokens, 0.0), CROSS, 1.5, "5 4");
                let label = format!("crossover: {} tokens", human::count(self.crossover_tokens.round() as u64));
                let (x, anchor) = fit(px, &label);
                o.text((x, top + 14), &label, FONT - 1.0, CROSS, anchor, 0.0);
            }
            let tip = format!(
                "this workload: {} cached tokens\nKV read {} · weights {}\nKV ÷ weights = {:.2}",
                human::count(self.cached_tokens.round() as u64),
                human::bytes(self.kv_read_bytes),
                human::bytes(self.weight_bytes),
                if self.weight_bytes > 0.0 { self.kv_read_bytes / self.weight_bytes } else { f64::INFINITY }
            );
            // Whole batches at this context along the KV line (powers of two), the first batch past
            // the crossover on it, and the largest batch that fits at the wall.
            let tokens = |t: f64| human::count(t.round() as u64);
            if let Some(per_seq) = self.tokens_per_sequence.filter(|t| t.is_finite() && *t > 0.0) {
                let kv_at = |t: f64| self.kv_bytes_per_token * t;
                let batch_tip = |b: u64| {
                    let t = b as f64 * per_seq;
                    format!(
                        "batch {} × {} tokens = {} cached tokens\nKV read {} (no windows) · weights {}\nKV ÷ weights = {:.2}",
                        human::count(b),
                        tokens(per_seq),
                        tokens(t),
                        human::bytes(kv_at(t)),
                        human::bytes(self.weight_bytes),
                        kv_at(t) / self.weight_bytes
                    )
                };
                let y_top = y_max * 1e9;
                let mut b = 1u64;
                while (b as f64) * per_seq < x_max && b < 1 << 40 {
                    let t = b as f64 * per_seq;
                    if kv_at(t) <= y_top && (t - self.cached_tokens).abs() > 0.5 {
                        let url = href(links, &KvMark::Batch(b));
                        o.point_link(at(t, kv_at(t)), 3.0, KV, "batch", &batch_tip(b), url.as_deref());
                    }
                    b *= 2;
                }
                if self.crossover_tokens.is_finite() && self.crossover_tokens < x_max {
                    let first = (self.crossover_tokens / per_seq).floor() as u64 + 1;
                    let tip = format!(
                        "crossover: {} cached tokens\nKV read = weights = {}\nfirst batch past it: {} × {} tokens",
                        tokens(self.crossover_tokens),
                        human::bytes(self.weight_bytes),
                        human::count(first),
                        tokens(per_seq)
                    );
                    let url = href(links, &KvMark::Batch(first));
                    let xy = at(self.crossover_tokens, self.weight_bytes);
                    o.point_link(xy, 4.5, CROSS, "crossover", &tip, url.as_deref());
                }
                if let Some(max) = self.max_batch.filter(|m| *m > 0 && self.wall_in_frame()) {
                    let tip = format!(
                        "memory full: {} cached tokens\nlargest batch that fits: {} × {} tokens = {} cached tokens",
                        tokens(self.capacity_tokens),
                        human::count(max),
                        tokens(per_seq),
                        tokens(max as f64 * per_seq)
                    );
                    let url = href(links, &KvMark::Batch(max));
                    let xy = at(self.capacity_tokens, kv_at(self.capacity_tokens).min(y_top * 0.97));
                    o.point_link(xy, 4.5, WALL, "wall", &tip, url.as_deref());
                }
            }
            let url = href(links, &KvMark::Workload);
            o.point_link(at(self.cached_tokens, self.kv_read_bytes), 5.0, KV, "workload", &tip, url.as_deref());
            // Legend above the plot, or below it where narrow.
            if size.is_narrow() {
                legend.draw_below(&mut o, legend_y, size);
            } else {
                let (lx, _) = at(0.0, y_max * 1e9);
                let y = legend_y;
                o.line((lx, y - 4), (lx + 24, y - 4), KV, 2.0, "");
                o.text((lx + 30, y), &kv_label, FONT, FG, Anchor::Start, 0.0);
                let x = lx + 60 + (kv_label.chars().count() as f64 * FONT * 0.6) as i32;
                o.line((x, y - 4), (x + 24, y - 4), WEIGHTS, 2.0, "");
                o.text((x + 30, y), &weights_label, FONT, FG, Anchor::Start, 0.0);
            }
            root.present()?;
        }
        Ok(finish(&buf, o, "plot kv-chart", "KV bytes and weight bytes read per step against cached tokens"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> KvChart {
        // The reference calculator: 131,072 B per token, 15.0 GB of weights, crossover 114,513 tokens; batch 64 × 2,048.
        KvChart {
            kv_bytes_per_token: 131_072.0,
            weight_bytes: 15_009_316_864.0,
            crossover_tokens: 15_009_316_864.0 / 131_072.0,
            cached_tokens: 131_072.0,
            kv_read_bytes: 17_179_869_184.0,
            capacity_tokens: 480_576.0,
            title: None,
            tokens_per_sequence: Some(2048.0),
            max_batch: Some(234),
        }
    }

    #[test]
    fn draws_both_lines_the_crossover_the_wall_and_the_workload() {
        let s = chart().svg(PlotSize::default()).unwrap();
        assert!(s.contains("crossover: 114,512 tokens"), "{s}");
        assert!(s.contains("memory full: 481 k tokens"), "{s}");
        assert!(s.contains("<title>this workload: 131,072 cached tokens\nKV read 17.2 GB · weights 15.0 GB\nKV ÷ weights = 1.14</title>"), "{s}");
        assert!(s.contains("KV bytes (131 kB per token)") && s.contains("weight bytes (15.0 GB)"));
        assert!(!s.contains("#000000"));
    }

    #[test]
    fn a_narrow_chart_fits_a_phone_with_its_legend_below() {
        let s = chart().svg(PlotSize::NARROW).unwrap();
        super::super::phone::assert_fits(&s);
        assert!(s.contains("crossover: 114,512 tokens") && s.contains("memory full: 481 k tokens"), "{s}");
        assert!(s.contains(">weight bytes (15.0 GB)</text></g>"), "{s}");
    }

    /// The (x, y) pairs of the first polyline stroked `colour`.
    fn polyline(svg: &str, colour: &str) -> Vec<(f64, f64)> {
        let at = svg.find(&format!("stroke=\"{colour}\"")).expect("the line");
        let start = svg[..at].rfind("<polyline").expect("a polyline");
        let tag = &svg[start..start + svg[start..].find("/>").unwrap()];
        let pts = &tag[tag.find("points=\"").unwrap() + 8..];
        pts[..pts.find('"').unwrap()]
            .split_whitespace()
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    }

    fn attr(tag: &str, name: &str) -> f64 {
        let v = &tag[tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3..];
        v[..v.find('"').unwrap()].parse().unwrap()
    }

    /// The KV line's slope was ~4 % low (its end, past the top of the frame, was clamped
    /// to the edge), so the workload point sat off it. The point must lie on the line, within
    /// a pixel, and the line's slope must be KV bytes per token.
    #[test]
    fn the_workload_point_lies_on_the_kv_line() {
        for (tokens, capacity) in [(131_072.0, 480_576.0), (10_000.0, 2e6), (400_000.0, 450_000.0)] {
            let mut c = chart();
            c.cached_tokens = tokens;
            c.kv_read_bytes = tokens * c.kv_bytes_per_token;
            c.capacity_tokens = capacity;
            let s = c.svg(PlotSize::default()).unwrap();
            let line = polyline(&s, KV);
            let ((x0, y0), (x1, y1)) = (line[0], line[line.len() - 1]);
            let p = &s[s.find("<circle class=\"workload\"").unwrap()..];
            let (px, py) = (attr(p, "cx"), attr(p, "cy"));
            let on_line = y0 + (y1 - y0) * (px - x0) / (x1 - x0);
            assert!((py - on_line).abs() <= 1.5, "{tokens}: point at y {py}, line at {on_line} ({line:?})");
            // The slope in data units, from the axes' own mapping: the weight line is at weight_bytes.
            let w = polyline(&s, WEIGHTS);
            let px_per_byte = (y0 - w[0].1) / c.weight_bytes;
            let bytes_at_end = (y0 - y1) / px_per_byte;
            let x_tokens = c.cached_tokens * (x1 - x0) / (px - x0);
            let slope = bytes_at_end / x_tokens;
            assert!((slope / c.kv_bytes_per_token - 1.0).abs() < 0.01, "{tokens}: slope {slope} B/token");
        }
    }

    /// The crossover's and the wall's labels never share a row (they overprinted when
    /// the two were close) and none runs past the plot's right edge.
    #[test]
    fn labels_do_not_overprint_or_clip() {
        let mut c = chart();
        c.capacity_tokens = c.crossover_tokens * 1.05;
        let size = PlotSize::default();
        let s = c.svg(size).unwrap();
        let label = |text: &str| {
            let end = s.find(text).unwrap_or_else(|| panic!("{text} in {s}"));
            let tag = &s[s[..end].rfind("<text").unwrap()..end];
            (attr(tag, "x"), attr(tag, "y"), tag.contains("text-anchor=\"end\""))
        };
        let (cx, cy, _) = label("crossover: ");
        let (wx, wy, w_end) = label("memory full: ");
        assert_ne!(cy, wy, "the two labels share a row at x {cx} and {wx}");
        let width = text_width("memory full: 120 k tokens", 11.0);
        let right = if w_end { wx } else { wx + width };
        assert!(right <= f64::from(size.width), "the wall's label ends at {right}");
    }

    /// Every mark carries its numbers with units; whole batches, the crossover
    /// and the wall link to their batch, the workload where the builder says.
    #[test]
    fn every_mark_carries_its_numbers_and_link() {
        let c = chart();
        let link = |m: &KvMark| match m {
            KvMark::Batch(b) => Some(format!("/kv-cache?batch={b}")),
            KvMark::Workload => None,
        };
        let s = c.svg_linked(PlotSize::default(), Some(&link)).unwrap();
        let ms = super::super::marks(&s);
        let per_seq = c.tokens_per_sequence.unwrap();
        let batches: Vec<_> = ms.iter().filter(|m| m.class == "batch").collect();
        // Powers of two whose tokens are inside the frame, but the workload's own batch (64).
        let want: Vec<u64> = (0..40)
            .map(|i| 1u64 << i)
            .take_while(|b| (*b as f64) * per_seq < c.x_max_tokens())
            .filter(|b| *b != 64)
            .collect();
        assert_eq!(batches.len(), want.len(), "{batches:?}");
        for (b, m) in want.iter().zip(&batches) {
            let t = *b as f64 * per_seq;
            assert!(m
                .tooltip
                .starts_with(&format!("batch {b} × 2,048 tokens = {} cached tokens", human::count(t as u64))));
            assert!(
                m.tooltip.contains(&format!("KV read {}", human::bytes(t * c.kv_bytes_per_token))),
                "{}",
                m.tooltip
            );
            assert!(m.tooltip.contains(&format!("weights {}", human::bytes(c.weight_bytes))));
            assert_eq!(m.href, Some(format!("/kv-cache?batch={b}")));
        }
        let cross = ms.iter().find(|m| m.class == "crossover").expect("the crossover mark");
        let first = (c.crossover_tokens / per_seq).floor() as u64 + 1;
        assert!(cross
            .tooltip
            .contains(&format!("crossover: {} cached tokens", human::count(c.crossover_tokens.round() as u64))));
        assert_eq!(cross.href, Some(format!("/kv-cache?batch={first}")));
        let wall = ms.iter().find(|m| m.class == "wall").expect("the wall mark");
        assert!(wall.tooltip.contains(&format!("largest batch that fits: {} × 2,048 tokens", c.max_batch.unwrap())));
        assert_eq!(wall.href, Some(format!("/kv-cache?batch={}", c.max_batch.unwrap())));
        let w = ms.iter().find(|m| m.class == "workload").expect("the workload");
        assert!(w.tooltip.contains(&format!("KV read {}", human::bytes(c.kv_read_bytes))));
        assert_eq!(w.href, None);
    }

    #[test]
    fn a_far_wall_is_named_at_the_edge() {
        let mut c = chart();
        c.capacity_tokens = 1e9;
        assert!(c.svg(PlotSize::default()).unwrap().contains("memory full at 1.00 G tokens →"));
    }

    #[test]
    fn bad_numbers_are_an_error() {
        let mut c = chart();
        c.kv_bytes_per_token = 0.0;
        assert!(c.svg(PlotSize::default()).is_err());
    }
}
