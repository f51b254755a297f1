//! The memory wall: the fullest GPU's memory (weights + KV cache + workspace) against the batch at
//! one context and layout, with the GPU's memory and what is left of it after the reserve as
//! lines; past the largest batch that fits the region is shaded. Batch across on a log₂ scale,
//! GB up from 0. Every batch drawn is a mark linked where the caller says (the explorer: the page
//! at that batch).

use super::roofline::rgb;
use super::svg::{finish, href, text_width, Anchor, Links, Overlay, FG};
use super::{Legend, PlotError, PlotSize};
use crate::human;
use crate::need::MemoryWall;
use plotters::prelude::*;

/// The chart's data.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryWallChart {
    /// (batch, memory of the fullest GPU in bytes, fits), batch ascending.
    pub points: Vec<(u64, f64, bool)>,
    /// One GPU's memory, bytes.
    pub capacity_bytes: f64,
    /// The memory after the reserve, bytes.
    pub available_bytes: f64,
    /// The largest batch that fits (0: none).
    pub max_batch: u64,
    /// The batch asked about.
    pub batch: u64,
    /// What the line is: `h100-sxm, TP 2 (2 GPUs), 2,048 tokens per sequence`.
    pub label: String,
}

const LINE: &str = "#3B82F6";
const WALL: &str = "#E5484D";
const FONT: f64 = 12.0;

impl MemoryWallChart {
    /// The chart of a report's memory wall at `batch` and `ctx`.
    pub fn of(w: &MemoryWall, batch: u64, ctx: u64) -> MemoryWallChart {
        MemoryWallChart {
            points: w.points.iter().map(|p| (p.batch, p.memory_bytes, p.fits)).collect(),
            capacity_bytes: w.capacity_bytes,
            available_bytes: w.available_bytes,
            max_batch: w.max_batch,
            batch,
            label: format!(
                "{}, {}, {} tokens per sequence",
                w.gpu,
                llm_ledger_core::parallel::layout_words(w.tp, w.pp, w.ep),
                human::count(ctx)
            ),
        }
    }

    /// Render as an inline `<svg>` element.
    pub fn svg(&self, size: PlotSize) -> Result<String, PlotError> {
        self.svg_linked(size, None)
    }

    /// [`MemoryWallChart::svg`], each batch linked where `links` says.
    pub fn svg_linked(&self, size: PlotSize, links: Links<'_, u64>) -> Result<String, PlotError> {
        if self.points.is_empty() || !self.points.iter().all(|p| p.1.is_finite() && p.1 >= 0.0 && p.0 > 0) {
            return Err(PlotError("no batch to draw".into()));
        }
        if size.width < 300 || size.height < 200 {
            return Err(PlotError(format!("a {}×{} plot is too small", size.width, size.height)));
        }
        let lb = |b: u64| (b as f64).log2();
        let x1 = lb(self.points.last().map_or(2, |p| p.0)).max(1.0) + 0.3;
        let x0 = -0.3;
        let top = self.points.iter().map(|p| p.1).fold(self.capacity_bytes, f64::max);
        let y1 = top * 1.12 / 1e9;
        // Narrow, the legend goes below the plot.
        let legend =
            if size.is_narrow() { Legend::default().line(LINE, "", self.label.as_str()) } else { Legend::default() };
        let mut buf = String::new();
        let mut o = Overlay::default();
        {
            let root = SVGBackend::with_string(&mut buf, size.canvas(&legend)).into_drawing_area();
            let (mut builder, legend_y) =
                super::line_chart_sized(&root, None, size, &mut o, false, legend.height(size.width));
            let mut chart = builder.build_cartesian_2d(x0..x1, 0.0..y1)?;
            super::draw_mesh_at(
                &mut chart,
                &super::Mesh {
                    x_labels: 8,
                    y_labels: Some(6),
                    x_fmt: &|v| {
                        if *v < 0.0 {
                            String::new()
                        } else {
                            human::count(2f64.powf(*v).round() as u64)
                        }
                    },
                    y_fmt: &|v| human::sig3(*v),
                    x_desc: "batch (sequences, log₂ scale)",
                    y_desc: "memory of the fullest GPU (GB)",
                },
                size,
            )?;
            let area = chart.plotting_area().clone();
            let at = |b: u64, bytes: f64| area.map_coordinate(&(lb(b), bytes / 1e9));
            let (left, top_px) = area.map_coordinate(&(x0, y1));
            let (right, bottom) = area.map_coordinate(&(x1, 0.0));
            // Past the wall: shaded.
            if self.max_batch > 0 {
                let (px, _) = at(self.max_batch, 0.0);
                let next = area.map_coordinate(&(lb(self.max_batch + 1), 0.0)).0;
                let edge = (px + next) / 2;
                if edge < right {
                    o.rect((edge, top_px), (right, bottom), WALL, 0.08);
                }
            } else {
                o.rect((left, top_px), (right, bottom), WALL, 0.08);
            }
            // Capacity and what the reserve leaves.
            let (_, cap_y) = area.map_coordinate(&(x0, self.capacity_bytes / 1e9));
            let (_, avail_y) = area.map_coordinate(&(x0, self.available_bytes / 1e9));
            o.line((left, cap_y), (right, cap_y), FG, 1.2, "6 4");
            // Labels at the left: the capacity's above its line, the reserve's below its own.
            let cap_label = format!("GPU memory {}", human::bytes(self.capacity_bytes));
            o.text((left + 4, cap_y - 4), &cap_label, FONT - 1.0, FG, Anchor::Start, 0.0);
            o.line((left, avail_y), (right, avail_y), WALL, 1.5, "");
            let avail_label = format!("available after the reserve {}", human::bytes(self.available_bytes));
            o.text((left + 4, (avail_y + 14).min(bottom - 4)), &avail_label, FONT - 1.0, WALL, Anchor::Start, 0.0);
            chart.draw_series(LineSeries::new(
                self.points.iter().map(|p| (lb(p.0), p.1 / 1e9)),
                rgb(LINE).stroke_width(2),
            ))?;
            for &(b, bytes, fits) in &self.points {
                let what = if b == self.max_batch {
                    "the largest batch that fits"
                } else if b == self.max_batch + 1 {
                    "one past the wall"
                } else if b == self.batch {
                    "the batch asked about"
                } else {
                    ""
                };
                let tip = format!(
                    "batch {}{}{}\n{} on the fullest GPU of {} available: {}",
                    human::count(b),
                    if what.is_empty() { "" } else { " · " },
                    what,
                    human::bytes(bytes),
                    human::bytes(self.available_bytes),
                    if fits { "fits" } else { "does not fit" }
                );
                let (r, class, fill) = if b == self.max_batch {
                    (5.0, "wall", WALL)
                } else if b == self.batch {
                    (5.5, "workload", LINE)
                } else {
                    (3.0, if fits { "batch" } else { "batch past-wall" }, LINE)
                };
                o.point_link(at(b, bytes), r, fill, class, &tip, href(links, &b).as_deref());
            }
            if self.max_batch > 0 {
                let label = format!("wall: batch {}", human::count(self.max_batch));
                let (px, py) =
                    at(self.max_batch, self.points.iter().find(|p| p.0 == self.max_batch).map_or(0.0, |p| p.1));
                let w = text_width(&label, FONT - 1.0) as i32;
                let (x, anchor) = if px - 8 - w > left { (px - 8, Anchor::End) } else { (px + 8, Anchor::Start) };
                o.text((x, (py + 16).min(bottom - 4)), &label, FONT - 1.0, WALL, anchor, 0.0);
            }
            if size.is_narrow() {
                legend.draw_below(&mut o, legend_y, size);
            } else {
                o.line((left, legend_y - 4), (left + 24, legend_y - 4), LINE, 2.0, "");
                o.text((left + 30, legend_y), &self.label, FONT, FG, Anchor::Start, 0.0);
            }
            root.present()?;
        }
        Ok(finish(
            &buf,
            o,
            "plot memory-wall",
            "Memory of the fullest GPU against batch, with the GPU's capacity and the memory wall",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> MemoryWallChart {
        // 16 GB of weights and 0.5 GB of KV per sequence on an 80 GB GPU (76 GB after the reserve).
        let points = [1u64, 2, 4, 8, 16, 32, 64, 128, 129, 256]
            .iter()
            .map(|&b| (b, 16e9 + 0.45e9 * b as f64, 16e9 + 0.45e9 * b as f64 <= 76e9))
            .collect();
        MemoryWallChart {
            points,
            capacity_bytes: 80e9,
            available_bytes: 76e9,
            max_batch: 128,
            batch: 16,
            label: "h100-sxm, one GPU, 2,048 tokens per sequence".into(),
        }
    }

    #[test]
    fn every_batch_is_a_mark_and_a_narrow_chart_fits_a_phone() {
        let c = chart();
        let wide = c.svg(PlotSize::default()).unwrap();
        assert_eq!(super::super::marks(&wide).len(), c.points.len());
        assert!(wide.contains("wall: batch 128"), "{wide}");
        let narrow = c.svg(PlotSize::NARROW).unwrap();
        super::super::phone::assert_fits(&narrow);
        assert_eq!(super::super::marks(&narrow).len(), c.points.len());
        assert!(narrow.contains(">h100-sxm, one GPU, 2,048 tokens per sequence</text></g>"), "{narrow}");
    }
}
