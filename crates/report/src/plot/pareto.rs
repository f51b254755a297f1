//! Throughput per GPU against speed per user (AIConfigurator's view of deployments): every
//! deployment of a `plan --pareto` search as a point — its tokens per second per user (`1 ÷
//! TPOT`) across, its tokens per second per GPU up, both on log scales — coloured by its GPUs per
//! replica, the Pareto front joined by a line and drawn larger. Each point is a mark
//! (`Overlay::mark`) with its numbers, linked where the caller says (the explorer:
//! the deployment's scenario).

use super::svg::{finish, href, Anchor, Links, Overlay, FG};
use super::{Legend, PlotError, PlotSize, Swatch};
use crate::frontier::FrontierReport;
use crate::human::{self, usd};
use llm_ledger_core::parallel::layout_words;
use llm_ledger_core::plan::Deployment;
use plotters::prelude::*;

/// The chart's data: a search's deployments.
#[derive(Debug, Clone, PartialEq)]
pub struct ParetoPlot {
    /// Every deployment (its `front` flag marks the front).
    pub deployments: Vec<Deployment>,
    /// Title line above the chart.
    pub title: Option<String>,
}

const FONT: f64 = 12.0;
const FRONT: &str = "#E5484D";

/// Colours of the GPU counts of a plot, in increasing order of GPUs (more counts than colours:
/// the last colour for the rest).
const PALETTE: [&str; 8] = ["#3B82F6", "#2DA44E", "#A371F7", "#E8710A", "#1B7C83", "#BF8700", "#D6409F", "#8C959F"];

/// Colour of the `i`-th smallest GPU count of a plot.
pub fn gpus_colour(i: usize) -> &'static str {
    PALETTE[i.min(PALETTE.len() - 1)]
}

/// A deployment's hover text.
pub fn tooltip(d: &Deployment) -> String {
    let p = &d.point;
    format!(
        "{} at batch {}{}\n{} tok/s per user (TPOT {})\n{} tok/s per GPU · {} tok/s in all\n{} per million tokens · {} on the fullest GPU",
        layout_words(p.tp, p.pp, p.ep),
        human::count(p.batch),
        if d.front { " · on the front" } else { "" },
        human::sig3(d.tokens_per_s_per_user),
        human::seconds(p.tpot_s),
        human::sig3(p.tokens_per_s_per_gpu),
        human::sig3(p.tokens_per_s),
        usd(p.usd_per_million_tokens),
        human::bytes(p.memory_bytes)
    )
}

impl ParetoPlot {
    /// The chart of a `plan --pareto` report.
    pub fn from_report(r: &FrontierReport) -> ParetoPlot {
        ParetoPlot { deployments: r.deployments.clone(), title: None }
    }

    /// Render as an inline `<svg>` element.
    pub fn svg(&self, size: PlotSize) -> Result<String, PlotError> {
        self.svg_linked(size, None)
    }

    /// [`ParetoPlot::svg`], each point linked where `links` says.
    pub fn svg_linked(&self, size: PlotSize, links: Links<'_, Deployment>) -> Result<String, PlotError> {
        let pts: Vec<&Deployment> = self
            .deployments
            .iter()
            .filter(|d| {
                d.tokens_per_s_per_user.is_finite()
                    && d.tokens_per_s_per_user > 0.0
                    && d.point.tokens_per_s_per_gpu.is_finite()
                    && d.point.tokens_per_s_per_gpu > 0.0
            })
            .collect();
        if pts.is_empty() {
            return Err(PlotError("no deployment to draw".into()));
        }
        if size.width < 300 || size.height < 200 {
            return Err(PlotError(format!("a {}×{} plot is too small", size.width, size.height)));
        }
        let lg = f64::log10;
        let range = |f: &dyn Fn(&Deployment) -> f64| {
            let lo = pts.iter().map(|d| lg(f(d))).fold(f64::INFINITY, f64::min);
            let hi = pts.iter().map(|d| lg(f(d))).fold(f64::NEG_INFINITY, f64::max);
            // A little room around the points, and at least a fifth of a decade.
            let pad = ((hi - lo) * 0.08).max(0.1);
            (lo - pad, hi + pad)
        };
        let (x0, x1) = range(&|d| d.tokens_per_s_per_user);
        let (y0, y1) = range(&|d| d.point.tokens_per_s_per_gpu);
        let mut counts: Vec<u64> = pts.iter().map(|d| d.point.gpus).collect();
        counts.sort_unstable();
        counts.dedup();
        let count_label = |g: u64| if g == 1 { "1 GPU".to_string() } else { format!("{g} GPUs") };
        // Narrow, the legend goes below the plot.
        let narrow = size.is_narrow();
        let legend = if narrow {
            let l = Legend::default().line(FRONT, "", "Pareto front");
            counts.iter().enumerate().fold(l, |l, (i, g)| l.entry(Swatch::Dot(gpus_colour(i).into()), count_label(*g)))
        } else {
            Legend::default()
        };
        let mut buf = String::new();
        let mut o = Overlay::default();
        {
            let root = SVGBackend::with_string(&mut buf, size.canvas(&legend)).into_drawing_area();
            let (mut builder, legend_y) =
                super::line_chart_sized(&root, self.title.as_deref(), size, &mut o, false, legend.height(size.width));
            let mut chart = builder.build_cartesian_2d(x0..x1, y0..y1)?;
            super::draw_mesh_at(
                &mut chart,
                &super::Mesh {
                    x_labels: 6,
                    y_labels: Some(6),
                    x_fmt: &|v| human::sig3(10f64.powf(*v)),
                    y_fmt: &|v| human::sig3(10f64.powf(*v)),
                    x_desc: if narrow {
                        "tokens/s per user = 1 ÷ TPOT (log)"
                    } else {
                        "output tokens/s per user = 1 ÷ TPOT (log scale)"
                    },
                    y_desc: if narrow { "tokens/s per GPU (log)" } else { "output tokens/s per GPU (log scale)" },
                },
                size,
            )?;
            let area = chart.plotting_area().clone();
            let at =
                |d: &Deployment| area.map_coordinate(&(lg(d.tokens_per_s_per_user), lg(d.point.tokens_per_s_per_gpu)));
            // The front as a line, fastest per user first.
            let mut front: Vec<&Deployment> = pts.iter().copied().filter(|d| d.front).collect();
            front.sort_by(|a, b| b.tokens_per_s_per_user.total_cmp(&a.tokens_per_s_per_user));
            for w in front.windows(2) {
                o.line(at(w[0]), at(w[1]), FRONT, 2.0, "");
            }
            // Points off the front first, so the front's sit on top.
            let colour = |gpus: u64| gpus_colour(counts.iter().position(|c| *c == gpus).unwrap_or(0));
            for d in pts.iter().filter(|d| !d.front).chain(front.iter()) {
                let url = href(links, d);
                let (r, class) = if d.front { (5.5, "deployment front") } else { (3.5, "deployment") };
                o.point_link(at(d), r, colour(d.point.gpus), class, &tooltip(d), url.as_deref());
            }
            // Legend: the front, and the GPU counts drawn (below the plot where narrow).
            if narrow {
                legend.draw_below(&mut o, legend_y, size);
            } else {
                let (lx, _) = area.map_coordinate(&(x0, y1));
                let y = legend_y;
                o.line((lx, y - 4), (lx + 24, y - 4), FRONT, 2.0, "");
                o.text((lx + 30, y), "Pareto front", FONT, FG, Anchor::Start, 0.0);
                let mut x = lx + 30 + (12.0 * FONT * 0.6) as i32 + 20;
                for (i, g) in counts.iter().enumerate() {
                    let label = count_label(*g);
                    o.raw(&format!("<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"/>", x + 4, y - 4, gpus_colour(i)));
                    o.text((x + 12, y), &label, FONT, FG, Anchor::Start, 0.0);
                    x += 12 + (label.chars().count() as f64 * FONT * 0.6) as i32 + 16;
                }
            }
            root.present()?;
        }
        Ok(finish(
            &buf,
            o,
            "plot pareto",
            "Output tokens per second per GPU against tokens per second per user: every deployment, the Pareto front joined",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::marks;
    use llm_ledger_core::serving::{Price, PriceSource};
    use llm_ledger_core::testing::scenario;

    #[test]
    fn every_deployment_is_a_mark_and_the_front_is_marked() {
        let sc = scenario(&[]);
        let price = Price { usd_per_hour: 3.0, source: PriceSource::User };
        let r = FrontierReport::build(&sc, price, 2e9, None, 2, None).unwrap();
        let link = |d: &Deployment| Some(format!("/ledger?tp={}&batch={}", d.point.tp, d.point.batch));
        let svg = ParetoPlot::from_report(&r).svg_linked(PlotSize::default(), Some(&link)).unwrap();
        let m = marks(&svg);
        assert_eq!(m.len(), r.deployments.len());
        assert_eq!(m.iter().filter(|m| m.class == "deployment front").count(), r.front.len());
        assert!(m.iter().all(|m| m.href.as_deref().is_some_and(|h| h.starts_with("/ledger?tp="))));
        assert!(svg.contains("Pareto front"));
    }

    #[test]
    fn a_narrow_plot_fits_a_phone_with_its_legend_below() {
        let sc = scenario(&[]);
        let price = Price { usd_per_hour: 3.0, source: PriceSource::User };
        let r = FrontierReport::build(&sc, price, 2e9, None, 2, None).unwrap();
        let svg = ParetoPlot::from_report(&r).svg(PlotSize::NARROW).unwrap();
        crate::plot::phone::assert_fits(&svg);
        assert_eq!(marks(&svg).len(), r.deployments.len());
        assert!(svg.contains(">Pareto front</text>") && svg.contains(">1 GPU</text>"), "{svg}");
    }

    #[test]
    fn each_gpu_count_has_its_colour_and_the_rest_share_the_last() {
        let all: Vec<&str> = (0..8).map(gpus_colour).collect();
        let mut distinct = all.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 8);
        assert_eq!(gpus_colour(100), gpus_colour(7));
    }
}
