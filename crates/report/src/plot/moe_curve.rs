//! Experts touched against batch (the reference calculator: "the union problem"): the expected number of distinct
//! experts `Σ 1 − (1 − p_i)^N` a step of `N` routed tokens reads, rising from `k` (one token) toward
//! the ceiling `E` (every expert), with the uniform-routing curve `E·(1 − (1 − k/E)^N)` dashed
//! beside a skewed one. The x axis is log₂(batch), the y axis linear from 0 to just above `E`.

use super::batch_curve::log2_axis;
use super::roofline::rgb;
use super::svg::{finish, href, Anchor, Links, Overlay, FG};
use super::{Legend, PlotError, PlotSize};
use crate::human;
use crate::moe::MoeReport;
use llm_ledger_core::moe::uniform_experts_touched;
use plotters::prelude::*;

/// One batch size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoeCurvePoint {
    /// Sequences.
    pub batch: u64,
    /// Tokens routed (batch, or batch × prompt in prefill).
    pub tokens: f64,
    /// Expected experts touched.
    pub experts_touched: f64,
    /// Mean tokens per touched expert.
    pub tokens_per_expert: f64,
    /// The same under uniform routing, when the routing is skewed.
    pub uniform_touched: Option<f64>,
}

/// The curve's data.
#[derive(Debug, Clone, PartialEq)]
pub struct MoeCurve {
    /// Routed experts E (the ceiling).
    pub experts: u64,
    /// Experts per token k.
    pub top_k: u64,
    /// Routing, in words (`uniform`, `zipf 1.2` …).
    pub routing: String,
    /// Points in increasing batch.
    pub points: Vec<MoeCurvePoint>,
    /// Title line above the chart.
    pub title: Option<String>,
}

const TOUCHED: &str = "#3B82F6";
const UNIFORM: &str = "#8C959F";
const CEILING: &str = "#E5484D";
const FONT: f64 = 12.0;

impl MoeCurve {
    /// The curve of a `moe` report; a skewed routing also gets the uniform curve for comparison.
    pub fn from_report(r: &MoeReport) -> MoeCurve {
        let skewed = r.routing != "uniform";
        MoeCurve {
            experts: r.experts,
            top_k: r.top_k,
            routing: r.routing.clone(),
            points: r
                .points
                .iter()
                .map(|p| MoeCurvePoint {
                    batch: p.batch,
                    tokens: p.union.tokens,
                    experts_touched: p.union.experts_touched,
                    tokens_per_expert: p.union.tokens_per_expert,
                    uniform_touched: skewed.then(|| uniform_experts_touched(r.experts, r.top_k, p.union.tokens)),
                })
                .collect(),
            title: None,
        }
    }

    /// Render as an inline `<svg>` element (see [`super::standalone`] for a file).
    pub fn svg(&self, size: PlotSize) -> Result<String, PlotError> {
        self.svg_linked(size, None)
    }

    /// [`MoeCurve::svg`], each batch size's marker linked where `links` says.
    pub fn svg_linked(&self, size: PlotSize, links: Links<'_, MoeCurvePoint>) -> Result<String, PlotError> {
        if self.points.is_empty() {
            return Err(PlotError("no batch sizes to draw".into()));
        }
        if self.experts == 0 || self.points.iter().any(|p| p.batch == 0 || !p.experts_touched.is_finite()) {
            return Err(PlotError("batch sizes must be ≥ 1 and the experts finite".into()));
        }
        if size.width < 300 || size.height < 200 {
            return Err(PlotError(format!("a {}×{} plot is too small", size.width, size.height)));
        }
        let e = self.experts as f64;
        let lb = |b: u64| (b as f64).log2();
        let (x0, x1) = log2_axis(self.points.iter().map(|p| p.batch));
        let y_max = e * 1.1;
        let label = format!("experts touched, routing {}", self.routing);
        let skewed = self.points.iter().any(|p| p.uniform_touched.is_some());
        // Narrow, the legend goes below the plot.
        let legend = if size.is_narrow() {
            let l = Legend::default().line(TOUCHED, "", label.as_str());
            if skewed {
                l.line(UNIFORM, "5 4", "uniform routing")
            } else {
                l
            }
        } else {
            Legend::default()
        };
        let mut buf = String::new();
        let mut o = Overlay::default();
        {
            let root = SVGBackend::with_string(&mut buf, size.canvas(&legend)).into_drawing_area();
            let (mut builder, legend_y) =
                super::line_chart_sized(&root, self.title.as_deref(), size, &mut o, false, legend.height(size.width));
            let mut chart = builder.build_cartesian_2d(x0..x1, 0.0..y_max)?;
            super::draw_mesh_at(
                &mut chart,
                &super::Mesh {
                    x_labels: (x1 - x0) as usize + 1,
                    y_labels: None,
                    x_fmt: &|v| format!("{}", 2f64.powf(*v).round()),
                    y_fmt: &|v| human::sig3(*v),
                    x_desc: "batch (sequences, log scale)",
                    y_desc: "experts touched per step",
                },
                size,
            )?;
            let area = chart.plotting_area().clone();
            let at = |x: f64, y: f64| area.map_coordinate(&(x, y));
            // The ceiling E and the floor k.
            o.line(at(x0, e), at(x1, e), CEILING, 1.5, "6 4");
            o.text(
                (at(x0, e).0 + 4, at(x0, e).1 - 5),
                &format!("E = {} experts: every expert read", self.experts),
                FONT - 1.0,
                CEILING,
                Anchor::Start,
                0.0,
            );
            let k = self.top_k as f64;
            o.line(at(x0, k), at(x1, k), FG, 1.0, "2 4");
            o.text(
                (at(x1, k).0 - 4, at(x1, k).1 - 5),
                &format!("k = {}: one token's experts", self.top_k),
                FONT - 1.0,
                FG,
                Anchor::End,
                0.0,
            );
            if self.points.iter().any(|p| p.uniform_touched.is_some()) {
                let uni: Vec<(f64, f64)> =
                    self.points.iter().filter_map(|p| p.uniform_touched.map(|u| (lb(p.batch), u))).collect();
                for w in uni.windows(2) {
                    o.line(at(w[0].0, w[0].1), at(w[1].0, w[1].1), UNIFORM, 2.0, "5 4");
                }
            }
            let series: Vec<(f64, f64)> = self.points.iter().map(|p| (lb(p.batch), p.experts_touched)).collect();
            chart.draw_series(LineSeries::new(series, rgb(TOUCHED).stroke_width(2)))?;
            for p in &self.points {
                let mut tip = format!(
                    "batch {} ({})\n{:.1} of {} experts touched ({})\n{:.2} tokens per touched expert",
                    human::count(p.batch),
                    crate::human::plural(p.tokens as u64, "token"),
                    p.experts_touched,
                    self.experts,
                    human::percent(p.experts_touched / e),
                    p.tokens_per_expert
                );
                if let Some(u) = p.uniform_touched {
                    tip.push_str(&format!("\nuniform routing: {u:.1} experts"));
                }
                let url = href(links, p);
                o.point_link(at(lb(p.batch), p.experts_touched), 3.5, TOUCHED, "touched", &tip, url.as_deref());
            }
            // Legend above the plot.
            if size.is_narrow() {
                legend.draw_below(&mut o, legend_y, size);
            } else {
                let (lx, _) = at(x0, y_max);
                let y = legend_y;
                o.line((lx, y - 4), (lx + 24, y - 4), TOUCHED, 2.0, "");
                o.text((lx + 30, y), &label, FONT, FG, Anchor::Start, 0.0);
                if skewed {
                    let x = lx + 60 + (label.chars().count() as f64 * FONT * 0.6) as i32;
                    o.line((x, y - 4), (x + 24, y - 4), UNIFORM, 2.0, "5 4");
                    o.text((x + 30, y), "uniform routing", FONT, FG, Anchor::Start, 0.0);
                }
            }
            root.present()?;
        }
        Ok(finish(&buf, o, "plot moe-curve", "Experts touched per step against batch size"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(skew: bool) -> MoeCurve {
        // The reference calculator: 8 experts, top-2: 2.0, 5.5, 7.2, 7.9 at B = 1, 4, 8, 16.
        let pts = [(1u64, 2.0), (4, 5.46875), (8, 7.199), (16, 7.920)];
        MoeCurve {
            experts: 8,
            top_k: 2,
            routing: if skew { "zipf 1".into() } else { "uniform".into() },
            points: pts
                .iter()
                .map(|&(b, t)| MoeCurvePoint {
                    batch: b,
                    tokens: b as f64,
                    experts_touched: t,
                    tokens_per_expert: b as f64 * 2.0 / t,
                    uniform_touched: skew.then(|| uniform_experts_touched(8, 2, b as f64)),
                })
                .collect(),
            title: None,
        }
    }

    #[test]
    fn a_narrow_curve_fits_a_phone_with_its_legend_below() {
        for skew in [false, true] {
            let s = curve(skew).svg(PlotSize::NARROW).unwrap();
            super::super::phone::assert_fits(&s);
            assert_eq!(s.matches("<circle class=\"touched\"").count(), 4);
            assert_eq!(s.contains(">uniform routing</text></g>"), skew, "{s}");
        }
    }

    #[test]
    fn draws_the_points_the_ceiling_and_the_floor() {
        let s = curve(false).svg(PlotSize::default()).unwrap();
        assert_eq!(s.matches("<circle class=\"touched\"").count(), 4);
        assert!(s.contains("E = 8 experts: every expert read"));
        assert!(s.contains("k = 2: one token&#39;s experts"));
        assert!(
            s.contains(
                "<title>batch 4 (4 tokens)\n5.5 of 8 experts touched (68.4 %)\n1.46 tokens per touched expert</title>"
            ),
            "{s}"
        );
        assert!(!s.contains("uniform routing<"));
        assert!(!s.contains("#000000"));
    }

    /// Every marker carries its point's numbers and its link.
    #[test]
    fn every_marker_carries_its_points_numbers_and_link() {
        let c = curve(true);
        let link = |p: &MoeCurvePoint| Some(format!("/moe?batch={}", p.batch));
        let s = c.svg_linked(PlotSize::default(), Some(&link)).unwrap();
        let ms: Vec<_> = super::super::marks(&s).into_iter().filter(|m| m.class == "touched").collect();
        assert_eq!(ms.len(), c.points.len());
        for (p, m) in c.points.iter().zip(&ms) {
            assert!(m.tooltip.starts_with(&format!("batch {} (", human::count(p.batch))), "{}", m.tooltip);
            assert!(m.tooltip.contains(&format!("{:.1} of {} experts touched", p.experts_touched, c.experts)));
            assert!(m.tooltip.contains(&format!("{:.2} tokens per touched expert", p.tokens_per_expert)));
            let u = p.uniform_touched.unwrap();
            assert!(m.tooltip.ends_with(&format!("uniform routing: {u:.1} experts")), "{}", m.tooltip);
            assert_eq!(m.href, Some(format!("/moe?batch={}", p.batch)));
        }
    }

    #[test]
    fn skewed_routing_is_drawn_against_the_uniform_curve() {
        let s = curve(true).svg(PlotSize::default()).unwrap();
        assert!(s.contains("uniform routing<"));
        assert!(s.contains("\nuniform routing: 5.5 experts</title>"));
    }

    #[test]
    fn no_points_is_an_error() {
        let mut c = curve(false);
        c.points.clear();
        assert!(c.svg(PlotSize::default()).is_err());
    }
}
