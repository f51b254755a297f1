//! The batch curve: step time and tokens per second against batch (the reference calculator: "Why batching
//! plateaus"), with two vertical markers the caller computes:
//!
//! - the **memory wall**: the batch at which weights plus KV cache no longer fit in the GPU's
//!   memory (the reference calculator's batch 256 × 2,048 tokens needing about 84 GB on an 80 GB card); the region
//!   beyond it is shaded;
//! - the **KV crossover**: the batch at which KV bytes read per step exceed weight bytes (the reference calculator's
//!   ≈114,500 cached tokens in the batch for Llama 3 8B).
//!
//! The x axis is log₂(batch); step time (left axis, ms) and tokens/s (right axis) are linear from 0.

use super::roofline::rgb;
use super::svg::{finish, href, Anchor, Links, Overlay, FG};
use super::{plotters_font, Legend, PlotError, PlotSize};
use crate::human;
use plotters::prelude::*;

/// One batch size of a sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchPoint {
    /// Sequences in the step.
    pub batch: u64,
    /// Roofline step time, seconds.
    pub step_time_s: f64,
    /// Tokens per second.
    pub tokens_per_s: f64,
}

/// A batch curve's data.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchCurve {
    /// Points in increasing batch.
    pub points: Vec<BatchPoint>,
    /// Batch at which weights + KV exceed the GPU memory, if known.
    pub memory_wall_batch: Option<f64>,
    /// Batch at which KV bytes per step exceed weight bytes, if known.
    pub kv_crossover_batch: Option<f64>,
    /// Title line above the chart.
    pub title: Option<String>,
}

const TIME_COLOUR: &str = "#3B82F6";
const RATE_COLOUR: &str = "#E8710A";
const WALL_COLOUR: &str = "#E5484D";
const CROSS_COLOUR: &str = "#A371F7";
const FONT: f64 = 12.0;

/// The range of a log₂ batch axis: whole powers of two around the batches (at least one octave).
pub(crate) fn log2_axis(batches: impl Iterator<Item = u64> + Clone) -> (f64, f64) {
    let lo = batches.clone().min().unwrap_or(1).max(1) as f64;
    let hi = batches.max().unwrap_or(1).max(1) as f64;
    let x0 = lo.log2().floor();
    (x0, hi.log2().ceil().max(x0 + 1.0))
}

impl BatchCurve {
    /// Render as an inline `<svg>` element (see [`super::standalone`] for a file).
    pub fn svg(&self, size: PlotSize) -> Result<String, PlotError> {
        self.svg_linked(size, None)
    }

    /// [`BatchCurve::svg`], each mark linked to the batch size it stands for, where `links` says
    /// (the explorer: the page at that batch): a point's two markers to its batch, the memory
    /// wall's to the largest batch that fits, the KV crossover's to the first batch past it.
    pub fn svg_linked(&self, size: PlotSize, links: Links<'_, u64>) -> Result<String, PlotError> {
        let pts: Vec<&BatchPoint> = self.points.iter().collect();
        if pts.is_empty() {
            return Err(PlotError("no batch sizes to draw".into()));
        }
        if pts.iter().any(|p| {
            p.batch == 0
                || !(p.step_time_s.is_finite()
                    && p.step_time_s > 0.0
                    && p.tokens_per_s.is_finite()
                    && p.tokens_per_s >= 0.0)
        }) {
            return Err(PlotError("batch sizes must be ≥ 1 with positive, finite times".into()));
        }
        if size.width < 300 || size.height < 200 {
            return Err(PlotError(format!("a {}×{} plot is too small", size.width, size.height)));
        }
        let lb = |b: f64| b.log2();
        let (x0, x1) = log2_axis(pts.iter().map(|p| p.batch));
        let t_max = pts.iter().map(|p| p.step_time_s * 1e3).fold(0.0, f64::max) * 1.12;
        let r_max = pts.iter().map(|p| p.tokens_per_s).fold(0.0, f64::max).max(1.0) * 1.12;

        // Narrow, the legend goes below the plot.
        let legend = if size.is_narrow() {
            Legend::default().line(TIME_COLOUR, "", "step time (left axis)").line(
                RATE_COLOUR,
                "",
                "tokens per second (right axis)",
            )
        } else {
            Legend::default()
        };
        let mut buf = String::new();
        let mut overlay = Overlay::default();
        {
            let root = SVGBackend::with_string(&mut buf, size.canvas(&legend)).into_drawing_area();
            // Title (if any) and legend sit in the top margin, the title first.
            let (mut builder, legend_y) = super::line_chart_sized(
                &root,
                self.title.as_deref(),
                size,
                &mut overlay,
                true,
                legend.height(size.width),
            );
            let mut chart = builder.build_cartesian_2d(x0..x1, 0.0..t_max)?.set_secondary_coord(x0..x1, 0.0..r_max);
            super::draw_mesh_at(
                &mut chart,
                &super::Mesh {
                    x_labels: (x1 - x0) as usize + 1,
                    y_labels: None,
                    x_fmt: &|v| format!("{}", 2f64.powf(*v).round()),
                    y_fmt: &|v| human::sig3(*v),
                    x_desc: "batch (sequences, log scale)",
                    y_desc: "step time (ms)",
                },
                size,
            )?;
            let axis_font = if size.is_narrow() { plotters_font(size.font()) } else { FONT };
            let font = ("sans-serif", axis_font).into_font().color(&BLACK);
            chart
                .configure_secondary_axes()
                .y_desc("tokens per second")
                .y_label_formatter(&|v| human::si(*v, "").trim_end().to_string())
                .axis_style(BLACK)
                .label_style(font.clone())
                .axis_desc_style(font)
                .draw()?;

            let (top, bottom) = (t_max, 0.0);
            let area = chart.borrow_secondary().plotting_area().clone();
            let at = |x: f64, y: f64| area.map_coordinate(&(x, y * r_max / t_max));
            // The region past the memory wall does not fit: shade it.
            let markers = [
                (self.memory_wall_batch, WALL_COLOUR, "memory wall"),
                (self.kv_crossover_batch, CROSS_COLOUR, "KV bytes = weight bytes"),
            ];
            for (i, (batch, colour, what)) in markers.iter().enumerate() {
                let Some(b) = batch.filter(|b| b.is_finite() && *b > 0.0) else { continue };
                let x = lb(b);
                let label = format!("{what}: batch {}", human::quantity(b));
                let (lx, ly) = at(x0, top);
                if x > x1 {
                    overlay.text(
                        (at(x1, top).0 - 4, ly + 14 + 14 * i as i32),
                        &format!("{label} (beyond the plot) →"),
                        FONT - 1.0,
                        colour,
                        Anchor::End,
                        0.0,
                    );
                    continue;
                }
                if x < x0 {
                    overlay.text(
                        (lx + 4, ly + 14 + 14 * i as i32),
                        &format!("← {label} (before the plot)"),
                        FONT - 1.0,
                        colour,
                        Anchor::Start,
                        0.0,
                    );
                    continue;
                }
                let (px, py_top) = at(x, top);
                let (_, py_bottom) = at(x, bottom);
                if i == 0 {
                    overlay.rect((px, py_top), at(x1, bottom), colour, 0.10);
                }
                overlay.line((px, py_top), (px, py_bottom), colour, 1.5, "5 4");
                // A mark at the line's foot: what it means, and the batch it points to.
                let (class, tip, target) = if i == 0 {
                    let fits = (b.ceil() as u64).saturating_sub(1).max(1);
                    let tip = format!(
                        "memory wall: batch {} is the first that does not fit\nlargest batch that fits: {}",
                        human::quantity(b),
                        human::count(fits)
                    );
                    ("wall", tip, fits)
                } else {
                    let past = b.ceil().max(1.0) as u64;
                    let tip = format!(
                        "KV crossover: batch {}\nfrom batch {} on, KV bytes read per step pass the weight bytes",
                        human::sig3(b),
                        human::count(past)
                    );
                    ("crossover", tip, past)
                };
                let url = href(links, &target);
                overlay.point_link((px, py_bottom), 4.5, colour, class, &tip, url.as_deref());
                let anchor = if x > (x0 + x1) / 2.0 { Anchor::End } else { Anchor::Start };
                let dx = if matches!(anchor, Anchor::End) { -4 } else { 4 };
                overlay.text((px + dx, py_top + 14 + 14 * i as i32), &label, FONT - 1.0, colour, anchor, 0.0);
            }

            let times: Vec<(f64, f64)> = pts.iter().map(|p| (lb(p.batch as f64), p.step_time_s * 1e3)).collect();
            let rates: Vec<(f64, f64)> = pts.iter().map(|p| (lb(p.batch as f64), p.tokens_per_s)).collect();
            chart.draw_series(LineSeries::new(times.iter().copied(), rgb(TIME_COLOUR).stroke_width(2)))?;
            chart.draw_secondary_series(LineSeries::new(rates.iter().copied(), rgb(RATE_COLOUR).stroke_width(2)))?;
            for p in &pts {
                let tip = tooltip(p, self.memory_wall_batch);
                let url = href(links, &p.batch);
                let x = lb(p.batch as f64);
                overlay.point_link(at(x, p.step_time_s * 1e3), 3.5, TIME_COLOUR, "step", &tip, url.as_deref());
                let xy = area.map_coordinate(&(x, p.tokens_per_s));
                overlay.point_link(xy, 3.5, RATE_COLOUR, "rate", &tip, url.as_deref());
            }

            // Legend above the plot, or below it where narrow.
            if size.is_narrow() {
                legend.draw_below(&mut overlay, legend_y, size);
            } else {
                let (lx, _) = at(x0, top);
                let y = legend_y;
                overlay.line((lx, y - 4), (lx + 24, y - 4), TIME_COLOUR, 2.0, "");
                overlay.text((lx + 30, y), "step time (left axis)", FONT, FG, Anchor::Start, 0.0);
                overlay.line((lx + 190, y - 4), (lx + 214, y - 4), RATE_COLOUR, 2.0, "");
                overlay.text((lx + 220, y), "tokens per second (right axis)", FONT, FG, Anchor::Start, 0.0);
            }
            root.present()?;
        }
        Ok(finish(&buf, overlay, "plot batch-curve", "Step time and tokens per second against batch size"))
    }
}

/// The hover text of one batch size: the batch, the step time, tokens per second, and whether it
/// is past the memory wall.
fn tooltip(p: &BatchPoint, wall: Option<f64>) -> String {
    let past = wall.is_some_and(|w| p.batch as f64 >= w);
    format!(
        "batch {}\nstep {}\n{} tokens/s{}",
        human::count(p.batch),
        human::seconds(p.step_time_s),
        human::sig3(p.tokens_per_s),
        if past { "\npast the memory wall: does not fit" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve() -> BatchCurve {
        // The reference calculator's sweep at 2,048 cached tokens (ms): 1 → 5.78, 8 → 6.47, 32 → 8.86, 64 → 12.0, 128 → 18.4.
        let pts = [(1, 5.78e-3), (8, 6.47e-3), (32, 8.86e-3), (64, 12.0e-3), (128, 18.4e-3)];
        BatchCurve {
            points: pts
                .iter()
                .map(|&(b, t)| BatchPoint { batch: b, step_time_s: t, tokens_per_s: b as f64 / t })
                .collect(),
            memory_wall_batch: Some(230.0),
            kv_crossover_batch: Some(55.9),
            title: None,
        }
    }

    #[test]
    fn draws_both_series_markers_and_labelled_axes() {
        let s = curve().svg(PlotSize::default()).unwrap();
        assert_eq!(s.matches("<circle class=\"step\"").count(), 5);
        assert_eq!(s.matches("<circle class=\"rate\"").count(), 5);
        assert!(s.contains("<title>batch 64\nstep 12.0 ms\n5,333 tokens/s</title>"), "{s}");
        assert!(s.contains("memory wall: batch 230 (beyond the plot) →"));
        assert!(s.contains("KV bytes = weight bytes: batch 55.9"));
        assert!(
            s.contains("step time (ms)")
                && s.contains("tokens per second")
                && s.contains("batch (sequences, log scale)")
        );
        assert!(!s.contains("#000000"));
    }

    /// Both markers of every batch size carry its numbers with units and link
    /// where the link builder says.
    #[test]
    fn every_marker_carries_its_points_numbers_and_link() {
        let mut c = curve();
        c.memory_wall_batch = Some(100.0);
        let link = |b: &u64| Some(format!("/batching?batch={b}"));
        let s = c.svg_linked(PlotSize::default(), Some(&link)).unwrap();
        let m = super::super::marks(&s);
        for class in ["step", "rate"] {
            let ms: Vec<_> = m.iter().filter(|m| m.class == class).collect();
            assert_eq!(ms.len(), c.points.len());
            for (p, m) in c.points.iter().zip(ms) {
                let lines: Vec<&str> = m.tooltip.lines().collect();
                assert_eq!(lines[0], format!("batch {}", human::count(p.batch)));
                assert_eq!(lines[1], format!("step {}", human::seconds(p.step_time_s)));
                assert_eq!(lines[2], format!("{} tokens/s", human::sig3(p.tokens_per_s)));
                assert_eq!(lines.len() == 4, p.batch >= 100, "{lines:?}");
                assert_eq!(m.href, Some(format!("/batching?batch={}", p.batch)));
            }
        }
        assert!(!c.svg(PlotSize::default()).unwrap().contains("<a "));
        // The wall (batch 100 is the first that does not fit) and the crossover (55.9).
        let wall = m.iter().find(|m| m.class == "wall").expect("the wall's mark");
        assert!(wall.tooltip.contains("batch 100 is the first that does not fit\nlargest batch that fits: 99"));
        assert_eq!(wall.href.as_deref(), Some("/batching?batch=99"));
        let cross = m.iter().find(|m| m.class == "crossover").expect("the crossover's mark");
        assert!(cross.tooltip.starts_with("KV crossover: batch 55.9\nfrom batch 56 on"), "{}", cross.tooltip);
        assert_eq!(cross.href.as_deref(), Some("/batching?batch=56"));
    }

    #[test]
    fn a_narrow_curve_fits_a_phone_with_its_legend_below() {
        let mut c = curve();
        c.memory_wall_batch = Some(100.0);
        let s = c.svg(PlotSize::NARROW).unwrap();
        super::super::phone::assert_fits(&s);
        assert_eq!(s.matches("<circle class=\"step\"").count(), 5);
        assert!(s.contains(">tokens per second (right axis)</text></g>"), "{s}");
    }

    #[test]
    fn a_wall_inside_the_range_is_drawn_and_shaded() {
        let mut c = curve();
        c.memory_wall_batch = Some(100.0);
        let s = c.svg(PlotSize::default()).unwrap();
        assert!(s.contains("memory wall: batch 100<"));
        assert!(s.contains("fill=\"#E5484D\" fill-opacity=\"0.1\""));
    }

    #[test]
    fn empty_or_bad_data_is_an_error_not_a_panic() {
        assert!(BatchCurve::default().svg(PlotSize::default()).is_err());
        let mut c = curve();
        c.points[0].step_time_s = f64::NAN;
        assert!(c.svg(PlotSize::default()).unwrap_err().to_string().contains("positive, finite"));
    }
}
