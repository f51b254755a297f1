//! The roofline chart (Williams, Waterman & Patterson, CACM 2009): attained FLOP/s against
//! arithmetic intensity, both on log scales.
//!
//! - Ceilings: for every math format the GPU has, a horizontal line at its dense peak, starting at
//!   its ridge point `peak ÷ bandwidth` (the reference calculator: rule 3), where the bandwidth slope
//!   `FLOP/s = bandwidth × intensity` meets it. Formats with the same peak share one line.
//! - Achieved roofs (dashed), for the formats the operators run in: the same with the ledger's
//!   efficiencies, `min(compute_eff × peak, bandwidth_eff × bandwidth × intensity)`.
//! - Operators: one marker each at `(FLOPs ÷ bytes, FLOPs ÷ roofline time)`, coloured by math
//!   format, with area proportional to the share of the step time. A lone operator lies exactly on
//!   its achieved roof; a row summed over layers of different shapes lies on or under it. Hover a
//!   marker for its numbers. Rows with no FLOPs or no bytes have no place on log axes and are
//!   listed under the legend instead.

use super::svg::{current_colour, esc, finish_frame, href, text_width, Anchor, Links, Overlay, FG};
use super::{
    decade_label, math_colour, narrow_title, plotters_font, wrap_words, Legend, PlotError, PlotSize, Swatch,
    NARROW_FONT,
};
use crate::human;
use crate::ledger::LedgerReport;
use llm_ledger_core::{Efficiency, Gpu, MathFormat};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::CoordTranslate;
use plotters::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One operator on the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct RooflinePoint {
    /// Operator name.
    pub op: String,
    /// Instances summed (layers).
    pub layers: u64,
    /// FLOPs.
    pub flops: f64,
    /// HBM bytes.
    pub bytes: f64,
    /// Roofline time, seconds.
    pub time_s: f64,
    /// Share of the step time (0..=1).
    pub time_share: f64,
    /// Math format it runs in.
    pub math: MathFormat,
    /// `memory` or `compute`.
    pub bound: String,
}

impl RooflinePoint {
    /// FLOP per byte.
    pub fn intensity_flops_per_byte(&self) -> f64 {
        self.flops / self.bytes
    }

    /// FLOPs ÷ roofline time.
    pub fn attained_flops_per_s(&self) -> f64 {
        self.flops / self.time_s
    }

    fn drawable(&self) -> bool {
        [self.flops, self.bytes, self.time_s].iter().all(|v| v.is_finite() && *v > 0.0)
    }
}

/// A roofline chart's data.
#[derive(Debug, Clone)]
pub struct Roofline<'a> {
    /// The GPU whose ceilings are drawn.
    pub gpu: &'a Gpu,
    /// Achieved fractions of peak (the dashed roofs).
    pub efficiency: Efficiency,
    /// Operators.
    pub points: Vec<RooflinePoint>,
    /// Title line above the chart (none on the web page, which has its own heading).
    pub title: Option<String>,
}

/// Horizontal room for the legend, user units.
const LEGEND_W: u32 = 200;
const FONT: f64 = 12.0;

impl<'a> Roofline<'a> {
    /// The chart of a ledger report's rows on `gpu` (the report's GPU).
    pub fn from_report(report: &LedgerReport, gpu: &'a Gpu) -> Self {
        let points = report
            .rows
            .iter()
            .map(|r| RooflinePoint {
                op: r.op.clone(),
                layers: r.layers,
                flops: r.flops,
                bytes: r.bytes,
                time_s: r.roofline_time_s,
                time_share: r.time_share,
                math: r.math.unwrap_or(MathFormat::Vector),
                bound: r.bound.clone(),
            })
            .collect();
        let efficiency =
            Efficiency { compute: report.inputs.compute_efficiency, bandwidth: report.inputs.bandwidth_efficiency };
        Roofline { gpu, efficiency, points, title: None }
    }

    /// The GPU's ceilings: (formats sharing the peak, peak FLOP/s), lowest first.
    pub fn ceilings(&self) -> Vec<(Vec<MathFormat>, f64)> {
        let mut out: Vec<(Vec<MathFormat>, f64)> = Vec::new();
        for m in
            [MathFormat::Vector, MathFormat::Bf16, MathFormat::Fp16, MathFormat::Fp8, MathFormat::Int8, MathFormat::Fp4]
        {
            let Some(p) = self.gpu.peak(m) else { continue };
            match out.iter_mut().find(|(_, q)| *q == p) {
                Some((ms, _)) => ms.push(m),
                None => out.push((vec![m], p)),
            }
        }
        out.sort_by(|a, b| a.1.total_cmp(&b.1));
        out
    }

    /// Render as an inline `<svg>` element (see [`super::standalone`] for a file).
    pub fn svg(&self, size: PlotSize) -> Result<String, PlotError> {
        self.svg_linked(size, None)
    }

    /// [`Roofline::svg`], each operator's marker linked where `links` says (the explorer: its row).
    pub fn svg_linked(&self, size: PlotSize, links: Links<'_, RooflinePoint>) -> Result<String, PlotError> {
        let bw = self.gpu.memory_bandwidth_bytes_per_s;
        let (eff_c, eff_b) = (self.efficiency.compute, self.efficiency.bandwidth);
        if !(bw.is_finite() && bw > 0.0 && eff_c > 0.0 && eff_b > 0.0) {
            return Err(PlotError("the GPU bandwidth and the efficiencies must be positive".into()));
        }
        let narrow = size.is_narrow();
        let too_small = if narrow { size.width < 300 } else { size.width <= LEGEND_W + 200 };
        if too_small || size.height < 200 {
            return Err(PlotError(format!("a {}×{} plot is too small", size.width, size.height)));
        }
        let ceilings = self.ceilings();
        let top_peak = ceilings.last().map(|c| c.1).unwrap_or(self.gpu.peak_flops_per_s.vector);
        let drawn: Vec<&RooflinePoint> = self.points.iter().filter(|p| p.drawable()).collect();
        let mut used: Vec<MathFormat> = drawn.iter().map(|p| p.math).collect();
        used.sort();
        used.dedup();
        let no_flops: Vec<&str> =
            self.points.iter().filter(|p| !p.drawable() && p.flops <= 0.0).map(|p| p.op.as_str()).collect();
        let no_bytes: Vec<&str> =
            self.points.iter().filter(|p| !p.drawable() && p.flops > 0.0).map(|p| p.op.as_str()).collect();
        let achieved = format!("{:.0} % of peak, {:.0} % of HBM", eff_c * 100.0, eff_b * 100.0);
        // Narrow: the legend goes below the chart, and the text is one size.
        let legend = if narrow {
            let mut l = Legend::default().entry(Swatch::None, "peak ceilings");
            for (formats, peak) in ceilings.iter().rev() {
                let names: Vec<&str> = formats.iter().map(|m| m.name()).collect();
                let text = format!("{} {}", names.join(" · "), human::rate(*peak, "FLOP"));
                l = l.row().line(math_colour(formats[0]), "", text);
            }
            l = l.row().line(FG, "", format!("HBM {} (slope)", human::rate(bw, "B")));
            l = l.row().entry(Swatch::Line(FG.into(), 1.5, "6 4"), format!("achieved roofs: {achieved}"));
            l = l.row().entry(Swatch::None, "operators (area ∝ time share):");
            for m in &used {
                l = l.entry(Swatch::Dot(math_colour(*m).into()), m.name());
            }
            l = l.note("hover or tap a marker for its numbers", size.width);
            for (what, ops) in [("no FLOPs", &no_flops), ("no HBM bytes", &no_bytes)] {
                if !ops.is_empty() {
                    l = l.note(&format!("not drawn ({what}): {}", ops.join(", ")), size.width);
                }
            }
            l
        } else {
            Legend::default()
        };
        let legend_h = legend.height(size.width);
        let (font, small) = if narrow { (NARROW_FONT, NARROW_FONT) } else { (FONT, FONT - 1.0) };

        // Ranges in decades, enclosing the points, the ridges and the ceilings.
        let lg = f64::log10;
        let i_min = drawn.iter().map(|p| p.intensity_flops_per_byte()).fold(0.5, f64::min);
        let i_max = drawn.iter().map(|p| p.intensity_flops_per_byte()).fold(top_peak / bw, f64::max);
        let lx0 = lg(i_min / 1.5).floor();
        let lx1 = lg(i_max * 3.0).ceil();
        let y_min = drawn.iter().map(|p| p.attained_flops_per_s()).fold(eff_b * bw * 10f64.powf(lx0), f64::min);
        let ly0 = lg(y_min / 1.5).floor();
        let ly1 = lg(top_peak * 2.0).ceil();
        if ![lx0, lx1, ly0, ly1].iter().all(|v| v.is_finite()) {
            return Err(PlotError("non-finite ranges".into()));
        }

        let mut overlay = Overlay::default();
        // Narrow: the title is overlay text, and the chart starts below it.
        let title_h = match (&self.title, narrow) {
            (Some(t), true) => narrow_title(&mut overlay, t, size.width),
            _ => 0,
        };
        let key = FrameKey {
            size: (size.width, size.height),
            legend_h,
            title_h,
            narrow,
            caption: self.title.clone().filter(|_| !narrow),
            ranges: [lx0, lx1, ly0, ly1].map(f64::to_bits),
            bandwidth: bw.to_bits(),
            top_peak: top_peak.to_bits(),
            ceilings: ceilings.iter().map(|(formats, peak)| (formats[0], peak.to_bits())).collect(),
        };
        let frame = frame(key)?;
        {
            let at = |x: f64, y: f64| frame.coord.translate(&(x, y));
            let [(x0, y0), (x1, y1)] = bandwidth_slope(lx0, ly0, bw, top_peak);
            let (p0, p1) = (at(x0, y0), at(x1, y1));
            let angle = f64::from(p1.1 - p0.1).atan2(f64::from(p1.0 - p0.0)).to_degrees();
            let label_x = x0 + 0.35 * (x1 - x0);
            let (lx, ly) = at(label_x, label_x + lg(bw));
            overlay.text((lx, ly - 6), &format!("HBM {}", human::rate(bw, "B")), font, FG, Anchor::Start, angle);

            // Achieved roofs for the formats in use.
            for m in &used {
                let peak = self.gpu.peak(*m).unwrap_or(self.gpu.peak_flops_per_s.vector) * eff_c;
                let lslope = lg(bw * eff_b);
                let start = lx0.max(ly0 - lslope);
                let knee = lg(peak) - lslope;
                let c = math_colour(*m);
                overlay.line(at(start, start + lslope), at(knee, lg(peak)), c, 1.5, "6 4");
                overlay.line(at(knee, lg(peak)), at(lx1, lg(peak)), c, 1.5, "6 4");
            }

            // Operators, largest first so small markers stay on top; labels for the clusters that matter.
            let mut order = drawn.clone();
            order.sort_by(|a, b| b.time_share.total_cmp(&a.time_share));
            let mut clusters: Vec<Cluster> = Vec::new();
            let mut markers = Vec::new();
            for p in &order {
                let xy = at(lg(p.intensity_flops_per_byte()), lg(p.attained_flops_per_s()));
                let r = 3.0 + 10.0 * p.time_share.clamp(0.0, 1.0).sqrt();
                let url = href(links, *p);
                overlay.point_link(xy, r, math_colour(p.math), "op", &tooltip(p, self.gpu), url.as_deref());
                let (cx, cy) = (f64::from(xy.0), f64::from(xy.1));
                markers.push((cx - r, cy - r, cx + r, cy + r));
                match clusters.iter_mut().find(|c| (c.xy.0 - xy.0).abs() <= 8 && (c.xy.1 - xy.1).abs() <= 8) {
                    Some(c) => {
                        c.names.push(p.op.clone());
                        c.share += p.time_share;
                        c.r = c.r.max(r);
                    }
                    None => clusters.push(Cluster { xy, r, names: vec![p.op.clone()], share: p.time_share }),
                }
            }
            // Labels avoid every marker and each other: try the right, then the left, at a few heights.
            let ((plot_left, plot_bottom), (plot_right, plot_top)) = (at(lx0, ly0), at(lx1, ly1));
            let mut placed: Vec<(f64, f64, f64, f64)> = markers;
            for c in clusters.iter().filter(|c| c.share >= 0.01).take(10) {
                let text = cluster_label(&c.names);
                let w = text_width(&text, small);
                let (cx, cy) = (f64::from(c.xy.0), f64::from(c.xy.1));
                let candidates = [4.0, -8.0, 16.0, -20.0, 28.0, -32.0]
                    .into_iter()
                    .flat_map(|dy| [(cx + c.r + 3.0, cy + dy), (cx - c.r - 3.0 - w, cy + dy)]);
                for (x, y) in candidates {
                    let bbox = (x, y - small - 1.0 + 2.0, x + w, y + 2.0);
                    let inside = bbox.0 >= f64::from(plot_left)
                        && bbox.2 <= f64::from(plot_right)
                        && bbox.1 >= f64::from(plot_top)
                        && bbox.3 <= f64::from(plot_bottom);
                    if inside && placed.iter().all(|b| !overlaps(*b, bbox)) {
                        placed.push(bbox);
                        overlay.text((x as i32, y as i32), &text, small, FG, Anchor::Start, 0.0);
                        break;
                    }
                }
            }
            if narrow {
                legend.draw_below(&mut overlay, size.height as i32 + 10, size);
            } else {
                // Legend: ceilings (top first, as drawn), achieved roofs, operator colours, what is not drawn.
                let x0 = (size.width - LEGEND_W + 8) as i32;
                let mut y = 24;
                let line = |overlay: &mut Overlay, y: &mut i32, text: &str, size: f64| {
                    overlay.text((x0, *y), text, size, FG, Anchor::Start, 0.0);
                    *y += 15;
                };
                line(&mut overlay, &mut y, "peak ceilings", FONT);
                for (formats, peak) in ceilings.iter().rev() {
                    let names: Vec<&str> = formats.iter().map(|m| m.name()).collect();
                    overlay.line((x0, y - 4), (x0 + 22, y - 4), math_colour(formats[0]), 2.0, "");
                    let text = format!("{} {}", names.join(" · "), human::rate(*peak, "FLOP"));
                    overlay.text((x0 + 28, y), &text, FONT - 1.0, FG, Anchor::Start, 0.0);
                    y += 15;
                }
                overlay.line((x0, y - 4), (x0 + 22, y - 4), FG, 2.0, "");
                overlay.text(
                    (x0 + 28, y),
                    &format!("HBM {} (slope)", human::rate(bw, "B")),
                    FONT - 1.0,
                    FG,
                    Anchor::Start,
                    0.0,
                );
                y += 21;
                overlay.line((x0, y - 4), (x0 + 22, y - 4), FG, 1.5, "6 4");
                overlay.text((x0 + 28, y), "achieved roofs:", FONT - 1.0, FG, Anchor::Start, 0.0);
                y += 15;
                overlay.text((x0 + 28, y), &achieved, FONT - 1.0, FG, Anchor::Start, 0.0);
                y += 21;
                line(&mut overlay, &mut y, "operators (area ∝ time share)", FONT);
                y += 2;
                for m in &used {
                    overlay.point((x0 + 6, y - 4), 5.0, math_colour(*m), "legend", m.name());
                    overlay.text((x0 + 16, y), m.name(), FONT - 1.0, FG, Anchor::Start, 0.0);
                    y += 16;
                }
                y += 4;
                line(&mut overlay, &mut y, "hover a marker for its numbers", FONT - 1.0);
                for (what, ops) in [("no FLOPs", no_flops), ("no HBM bytes", no_bytes)] {
                    if !ops.is_empty() {
                        y += 6;
                        for l in wrap_words(&format!("not drawn ({what}): {}", ops.join(", ")), 30) {
                            line(&mut overlay, &mut y, &l, FONT - 1.0);
                        }
                    }
                }
            }
        }
        let label = format!(
            "Roofline of {} operators on {}: attained FLOP/s against FLOP per byte",
            drawn.len(),
            esc(&self.gpu.display)
        );
        Ok(finish_frame(&frame.svg, overlay, "plot roofline", &label))
    }
}

/// What plotters draws of a roofline chart: the axes and their mesh, the bandwidth slope and the
/// peak ceilings. It depends only on what [`FrameKey`] holds (the GPU's ceilings, the axis
/// decades, the size and the title), not on the operators, so charts of other batches or
/// contexts on the same GPU usually share it.
struct Frame {
    /// The `<svg>` document, its sentinel colour already made `currentColor` ([`current_colour`]).
    svg: String,
    /// Data coordinates (decades) → SVG user units in the plotting area.
    coord: Cartesian2d<RangedCoordf64, RangedCoordf64>,
}

/// Every input of [`draw_frame`] (floats by their bits: equal keys draw equal frames).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FrameKey {
    size: (u32, u32),
    legend_h: u32,
    title_h: u32,
    narrow: bool,
    /// The wide chart's caption.
    caption: Option<String>,
    /// `lx0, lx1, ly0, ly1`: the axes' decades.
    ranges: [u64; 4],
    bandwidth: u64,
    top_peak: u64,
    /// Each ceiling's colour (its first format) and peak.
    ceilings: Vec<(MathFormat, u64)>,
}

/// Frames drawn recently, at most [`FRAMES_KEPT`]; emptied when full (a frame costs about as
/// much to draw again as the rest of the chart together).
static FRAMES: std::sync::LazyLock<Mutex<HashMap<FrameKey, Arc<Frame>>>> = std::sync::LazyLock::new(Default::default);
const FRAMES_KEPT: usize = 64;

/// The frame for `key`: from [`FRAMES`] or drawn now (and kept).
fn frame(key: FrameKey) -> Result<Arc<Frame>, PlotError> {
    if let Some(f) = FRAMES.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(f.clone());
    }
    let f = Arc::new(draw_frame(&key)?);
    let mut kept = FRAMES.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() >= FRAMES_KEPT {
        kept.clear();
    }
    kept.insert(key, f.clone());
    Ok(f)
}

/// The peak bandwidth slope `FLOP/s = bandwidth × intensity` in decades, from the chart's left
/// or bottom edge (`lx0`, `ly0`) up to the highest ridge: its two ends.
fn bandwidth_slope(lx0: f64, ly0: f64, bw: f64, top_peak: f64) -> [(f64, f64); 2] {
    let lbw = bw.log10();
    let start = lx0.max(ly0 - lbw);
    [(start, start + lbw), (top_peak.log10() - lbw, top_peak.log10())]
}

/// Draw a [`Frame`] with plotters.
fn draw_frame(key: &FrameKey) -> Result<Frame, PlotError> {
    let lg = f64::log10;
    let (width, height) = key.size;
    let [lx0, lx1, ly0, ly1] = key.ranges.map(f64::from_bits);
    let (bw, top_peak) = (f64::from_bits(key.bandwidth), f64::from_bits(key.top_peak));
    let narrow = key.narrow;
    // What plotters is asked for: its SVG text comes out 1.24 times smaller.
    let mesh_font = if narrow { plotters_font(NARROW_FONT) } else { FONT };
    let mut buf = String::new();
    let coord = {
        let root = SVGBackend::with_string(&mut buf, (width, height + key.legend_h)).into_drawing_area();
        let left = if narrow { root.clone() } else { root.split_horizontally(width - LEGEND_W).0 };
        let mut builder = ChartBuilder::on(&left);
        if narrow {
            builder
                .margin(6)
                .margin_top(12 + key.title_h)
                .margin_right(12)
                .margin_bottom(6 + key.legend_h)
                .x_label_area_size(40)
                .y_label_area_size(50);
        } else {
            builder.margin(10).margin_right(16).x_label_area_size(46).y_label_area_size(62);
        }
        if let Some(t) = &key.caption {
            builder.caption(t, ("sans-serif", 14).into_font().color(&BLACK));
        }
        let mut chart = builder.build_cartesian_2d(lx0..lx1, ly0..ly1)?;
        chart
            .configure_mesh()
            .x_labels((lx1 - lx0) as usize + 1)
            .y_labels((ly1 - ly0) as usize + 1)
            .x_label_formatter(&|v| decade_label(*v))
            .y_label_formatter(&|v| decade_label(*v))
            .x_desc(if narrow {
                "arithmetic intensity (FLOP/B, log scale)"
            } else {
                "arithmetic intensity (FLOP/byte, log scale)"
            })
            .y_desc(if narrow { "attained FLOP/s (log scale)" } else { "attained performance (FLOP/s, log scale)" })
            .bold_line_style(BLACK.mix(0.12))
            .light_line_style(TRANSPARENT)
            .axis_style(BLACK)
            .label_style(("sans-serif", mesh_font).into_font().color(&BLACK))
            .axis_desc_style(("sans-serif", if narrow { mesh_font } else { FONT + 1.0 }).into_font().color(&BLACK))
            .draw()?;

        // Peak bandwidth slope, up to the highest ridge, and the peak ceilings.
        let lbw = lg(bw);
        chart.draw_series(LineSeries::new(bandwidth_slope(lx0, ly0, bw, top_peak), BLACK.stroke_width(2)))?;
        for (format, peak) in &key.ceilings {
            let peak = f64::from_bits(*peak);
            let ridge = lg(peak) - lbw;
            let colour = rgb(math_colour(*format));
            chart.draw_series(LineSeries::new([(ridge, lg(peak)), (lx1, lg(peak))], colour.stroke_width(2)))?;
        }
        let coord = chart.as_coord_spec().clone();
        root.present()?;
        coord
    };
    Ok(Frame { svg: current_colour(&buf), coord })
}

struct Cluster {
    xy: (i32, i32),
    r: f64,
    names: Vec<String>,
    share: f64,
}

fn cluster_label(names: &[String]) -> String {
    if names.len() <= 3 {
        names.join(", ")
    } else {
        format!("{}, {} +{} more", names[0], names[1], names.len() - 2)
    }
}

fn overlaps(a: (f64, f64, f64, f64), b: (f64, f64, f64, f64)) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// `#RRGGBB` → plotters colour.
pub(crate) fn rgb(hex: &str) -> RGBColor {
    let v = u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap_or(0);
    RGBColor((v >> 16) as u8, (v >> 8) as u8, v as u8)
}

/// The hover text of one operator.
fn tooltip(p: &RooflinePoint, gpu: &Gpu) -> String {
    format!(
        "{} × {}\nFLOPs {} · bytes {}\nintensity {} FLOP/B ({} ridge {:.0} FLOP/B)\nattained {}\nroofline time {} · {} of the step · {}-bound",
        p.op,
        p.layers,
        human::flops(p.flops),
        human::bytes(p.bytes),
        human::intensity(Some(p.intensity_flops_per_byte())),
        p.math.name(),
        gpu.ridge_flops_per_byte(p.math),
        human::rate(p.attained_flops_per_s(), "FLOP"),
        human::seconds(p.time_s),
        human::percent(p.time_share),
        p.bound,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::LedgerReport;
    use llm_ledger_core::{Ledger, Scenario, ScenarioRequest};

    fn default_chart_svg() -> String {
        let sc = Scenario::default_decode();
        let report = LedgerReport::new(&sc, &Ledger::build(&sc));
        Roofline::from_report(&report, &sc.gpu).svg(PlotSize::default()).unwrap()
    }

    /// A frame kept from one chart is only ever reused by a chart that would draw the same one:
    /// charts that differ in each input of the frame, drawn one after another from the kept
    /// frames, are each what they are when drawn on their own with nothing kept.
    #[test]
    fn kept_frames_draw_what_fresh_ones_do() {
        let charts: Vec<(&str, u32, PlotSize, Option<&str>)> = vec![
            ("h100-sxm", 1, PlotSize::default(), None),
            ("h100-sxm", 1, PlotSize::NARROW, None),
            ("h100-sxm", 1, PlotSize::default(), Some("a title")),
            ("h100-sxm", 1, PlotSize::NARROW, Some("a longer title that wraps onto two lines of a phone")),
            ("h100-sxm", 1, PlotSize { width: 900, height: 420 }, None),
            ("h100-sxm", 4096, PlotSize::default(), None),
            ("h100-pcie", 1, PlotSize::default(), None),
            ("b200", 1, PlotSize::default(), None),
            ("a100-80gb-sxm", 1, PlotSize::default(), None),
        ];
        let draw = |(gpu, batch, size, title): &(&str, u32, PlotSize, Option<&str>)| {
            let req = ScenarioRequest {
                gpu: Some(gpu.to_string()),
                batch: Some(batch.to_string()),
                ..ScenarioRequest::default()
            };
            let sc = req.resolve(&llm_ledger_core::Catalog::builtin()).unwrap();
            let report = LedgerReport::new(&sc, &Ledger::build(&sc));
            let mut chart = Roofline::from_report(&report, &sc.gpu);
            chart.title = title.map(String::from);
            chart.svg(*size).unwrap()
        };
        let fresh: Vec<String> = charts
            .iter()
            .map(|c| {
                FRAMES.lock().unwrap().clear();
                draw(c)
            })
            .collect();
        for (c, f) in charts.iter().zip(&fresh).chain(charts.iter().zip(&fresh).rev()) {
            assert_eq!(&draw(c), f, "{c:?}");
        }
        let distinct: std::collections::HashSet<&String> = fresh.iter().collect();
        assert_eq!(distinct.len(), charts.len());
    }

    #[test]
    fn a_narrow_roofline_fits_a_phone_with_its_legend_below() {
        let sc = Scenario::default_decode();
        let report = LedgerReport::new(&sc, &Ledger::build(&sc));
        let s = Roofline::from_report(&report, &sc.gpu).svg(PlotSize::NARROW).unwrap();
        super::super::phone::assert_fits(&s);
        assert_eq!(s.matches("<circle class=\"op\"").count(), 16, "the same operators as wide");
        assert!(s.contains("achieved roofs: "), "{s}");
    }

    #[test]
    fn a_narrow_rooflines_title_wraps_to_its_width() {
        let sc = Scenario::default_decode();
        let report = LedgerReport::new(&sc, &Ledger::build(&sc));
        let mut chart = Roofline::from_report(&report, &sc.gpu);
        chart.title = Some(crate::plot::title(&report.inputs));
        let s = chart.svg(PlotSize::NARROW).unwrap();
        super::super::phone::assert_fits(&s);
        let title_lines = s.matches("font-size=\"12\" fill=\"currentColor\" text-anchor=\"middle\"").count();
        assert!(title_lines >= 2, "{s}");
    }

    #[test]
    fn h100_ceilings_group_equal_peaks() {
        let sc = Scenario::default_decode();
        let report = LedgerReport::new(&sc, &Ledger::build(&sc));
        let chart = Roofline::from_report(&report, &sc.gpu);
        let c = chart.ceilings();
        // H100 SXM: vector 66.9 T, bf16 = fp16 989.4 T, fp8 = int8 1978.9 T; no fp4.
        let names: Vec<Vec<&str>> = c.iter().map(|(m, _)| m.iter().map(|m| m.name()).collect()).collect();
        assert_eq!(names, [vec!["vector"], vec!["bf16", "fp16"], vec!["fp8", "int8"]]);
    }

    #[test]
    fn every_drawable_operator_is_a_point_with_a_tooltip() {
        let s = default_chart_svg();
        // 19 rows at the default scenario; embedding and kv_write have no FLOPs, softmax no bytes.
        assert_eq!(s.matches("<circle class=\"op\"").count(), 16, "{s}");
        assert!(s.contains(
            "<title>gate_proj × 32\nFLOPs 3.76 GFLOP · bytes 3.76 GB\nintensity 1.0 FLOP/B (bf16 ridge 295 FLOP/B)"
        ));
        // (The legend wraps lines at 28 characters.)
        assert!(s.contains(">not drawn (no FLOPs):<") && s.contains(">embedding, kv_write<"), "{s}");
        assert!(s.contains(">not drawn (no HBM bytes):<") && s.contains(">softmax<"), "{s}");
    }

    /// Every drawn operator is a marker whose `<title>` holds the report row's
    /// numbers with units, linked where the link builder says; without one, no links.
    #[test]
    fn every_marker_carries_its_rows_numbers_and_link() {
        for sc in [
            Scenario::default_decode(),
            ScenarioRequest { phase: Some("prefill".into()), batch: Some("4".into()), ..Default::default() }
                .resolve(&llm_ledger_core::Catalog::builtin())
                .unwrap(),
        ] {
            let report = LedgerReport::new(&sc, &Ledger::build(&sc));
            let chart = Roofline::from_report(&report, &sc.gpu);
            let link = |p: &RooflinePoint| Some(format!("/ledger?x=1#op-{}", p.op));
            let s = chart.svg_linked(PlotSize::default(), Some(&link)).unwrap();
            let ops: Vec<super::super::MarkInfo> =
                super::super::marks(&s).into_iter().filter(|m| m.class == "op").collect();
            let drawn: Vec<_> =
                report.rows.iter().filter(|r| r.flops > 0.0 && r.bytes > 0.0 && r.roofline_time_s > 0.0).collect();
            assert_eq!(ops.len(), drawn.len(), "{s}");
            for r in drawn {
                let head = format!("{} × {}\n", r.op, r.layers);
                let m = ops.iter().find(|m| m.tooltip.starts_with(&head)).unwrap_or_else(|| panic!("{head}"));
                for want in [
                    format!("FLOPs {}", human::flops(r.flops)),
                    format!("bytes {}", human::bytes(r.bytes)),
                    format!("intensity {} FLOP/B", human::intensity(r.intensity)),
                    format!("roofline time {}", human::seconds(r.roofline_time_s)),
                    format!("{} of the step", human::percent(r.time_share)),
                    format!("{}-bound", r.bound),
                ] {
                    assert!(m.tooltip.contains(&want), "{}: {want:?} not in {:?}", r.op, m.tooltip);
                }
                assert_eq!(m.href.as_deref(), Some(format!("/ledger?x=1#op-{}", r.op).as_str()));
            }
            assert!(!chart.svg(PlotSize::default()).unwrap().contains("<a "), "a file holds no links");
        }
    }

    #[test]
    fn axes_are_labelled_with_units_and_colours_follow_the_theme() {
        let s = default_chart_svg();
        assert!(s.contains("arithmetic intensity (FLOP/byte, log scale)"));
        assert!(s.contains("attained performance (FLOP/s, log scale)"));
        assert!(s.contains(">HBM 3.35 TB/s<"));
        assert!(s.contains(">HBM 3.35 TB/s (slope)<"));
        assert!(s.contains(">bf16 · fp16 989 TFLOP/s<"));
        assert!(s.contains(">60 % of peak, 80 % of HBM<"));
        assert!(!s.contains("#000000"), "the sentinel colour must be rewritten");
        assert!(s.contains("currentColor"));
        assert!(!s.contains("<style"), "inline plots must not need a style element (CSP)");
    }

    /// `(cx, cy)` of the operator's marker.
    fn marker(svg: &str, op: &str) -> (f64, f64) {
        let title = format!("<title>{op} × ");
        let end = svg.find(&title).unwrap_or_else(|| panic!("no marker for {op}"));
        let start = svg[..end].rfind("<circle").unwrap();
        let attr = |name: &str| -> f64 {
            let s = &svg[start..end];
            let v = s.split(&format!(" {name}=\"")).nth(1).unwrap();
            v[..v.find('"').unwrap()].parse().unwrap()
        };
        (attr("cx"), attr("cy"))
    }

    /// The dashed (achieved) segments in a colour: `((x1, y1), (x2, y2))`.
    fn dashed(svg: &str, colour: &str) -> Vec<((f64, f64), (f64, f64))> {
        svg.split("<line ")
            .skip(1)
            .filter(|l| l.contains(&format!("stroke=\"{colour}\"")) && l.contains("stroke-dasharray"))
            .map(|l| {
                let a = |n: &str| -> f64 {
                    let v = l.split(&format!("{n}=\"")).nth(1).unwrap();
                    v[..v.find('"').unwrap()].parse().unwrap()
                };
                ((a("x1"), a("y1")), (a("x2"), a("y2")))
            })
            .collect()
    }

    fn report_intensity(op: &str) -> f64 {
        let sc = Scenario::default_decode();
        let r = LedgerReport::new(&sc, &Ledger::build(&sc));
        r.rows.iter().find(|r| r.op == op).and_then(|r| r.intensity).unwrap()
    }

    /// Two paths to one position: a marker placed from its own FLOPs, bytes and time lies on the
    /// achieved roof drawn from the GPU's peak and bandwidth (to the pixel rounding).
    #[test]
    fn markers_lie_on_their_achieved_roofs() {
        let blue = math_colour(MathFormat::Bf16);
        // Decode at batch 1: every bf16 operator is memory-bound, so it sits on the dashed slope.
        let s = default_chart_svg();
        let [((x1, y1), (x2, y2)), _] = dashed(&s, blue)[..] else { panic!("two dashed bf16 segments") };
        let slope = (y2 - y1) / (x2 - x1);
        for op in ["q_proj", "attention", "lm_head"] {
            let (cx, cy) = marker(&s, op);
            let on_line = y1 + slope * (cx - x1);
            assert!((cy - on_line).abs() <= 1.5, "{op}: cy {cy} vs the slope's {on_line}");
        }
        // q_proj (1.0 FLOP/B) and attention (4.0 FLOP/B) are log10(4) of a decade apart, the decade
        // measured between the axis labels "1" and "10".
        let label_x = |t: &str| -> f64 {
            let end = s.find(&format!(">\n{t}\n</text>")).unwrap();
            let start = s[..end].rfind("<text").unwrap();
            let v = s[start..end].split(" x=\"").nth(1).unwrap();
            v[..v.find('"').unwrap()].parse().unwrap()
        };
        let decade = label_x("10") - label_x("1");
        let (q, a) = (marker(&s, "q_proj"), marker(&s, "attention"));
        let intensity_ratio = report_intensity("attention") / report_intensity("q_proj");
        assert!((a.0 - q.0 - decade * intensity_ratio.log10()).abs() <= 1.5, "{q:?} {a:?} decade {decade}");

        // Prefill at batch 8 × 4096: the MLP GEMMs are compute-bound, on the flat dashed bf16 roof.
        let sc = ScenarioRequest {
            phase: Some("prefill".into()),
            batch: Some("8".into()),
            ctx: Some("4096".into()),
            ..Default::default()
        }
        .resolve(&llm_ledger_core::Catalog::builtin())
        .unwrap();
        let report = LedgerReport::new(&sc, &Ledger::build(&sc));
        let s = Roofline::from_report(&report, &sc.gpu).svg(PlotSize::default()).unwrap();
        let flat = dashed(&s, blue).into_iter().find(|(a, b)| a.1 == b.1).expect("a flat bf16 roof");
        for op in ["gate_proj", "up_proj", "down_proj"] {
            let (_, cy) = marker(&s, op);
            assert!((cy - flat.0 .1).abs() <= 1.0, "{op}: cy {cy} vs the roof at {}", flat.0 .1);
        }
    }
}
