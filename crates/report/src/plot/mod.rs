//! Plots as SVG text, drawn with `plotters`' SVG backend (no bitmap, no font files: text is laid
//! out with plotters' built-in size estimate and rendered by the viewer's sans-serif font). The same
//! functions serve the CLI (`--plot FILE.svg`) and the web explorer (inline `<svg>`).
//!
//! Theming: every neutral stroke and label is drawn in the sentinel colour black and rewritten to
//! `currentColor`, so the plot takes the colour of the surrounding text (light and dark pages
//! alike); the data colours are mid-tones legible on both backgrounds. [`standalone`] adds the
//! colours a lone `.svg` file needs, with a dark variant under `prefers-color-scheme: dark`.
//!
//! Interactivity: each data point is an SVG element with a `<title>` child holding its numbers, so
//! hovering shows them in any browser without script.

pub mod batch_curve;
pub mod dataflow;
pub mod graph;
pub mod kv_chart;
pub mod memory_wall;
pub mod moe_curve;
pub mod pareto;
pub mod roofline;
pub mod serving;
mod svg;
pub mod tile_grid;

pub use batch_curve::{BatchCurve, BatchPoint};
pub use dataflow::Dataflow;
pub use graph::NetworkGraph;
pub use kv_chart::{KvChart, KvMark};
pub use memory_wall::MemoryWallChart;
pub use moe_curve::{MoeCurve, MoeCurvePoint};
pub use pareto::ParetoPlot;
pub use roofline::{Roofline, RooflinePoint};
pub use svg::{marks, Links, MarkInfo};
pub use tile_grid::TileGrid;

use llm_ledger_core::MathFormat;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::fmt;

/// A plot that could not be drawn (empty or non-finite data); one line, like every error here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlotError(pub String);

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot draw the plot: {}", self.0)
    }
}

impl std::error::Error for PlotError {}

impl<E: std::error::Error + Send + Sync> From<plotters::drawing::DrawingAreaErrorKind<E>> for PlotError {
    fn from(e: plotters::drawing::DrawingAreaErrorKind<E>) -> Self {
        PlotError(e.to_string())
    }
}

/// Size of a plot in SVG user units (the `viewBox`; pages scale it to their width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlotSize {
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

impl Default for PlotSize {
    fn default() -> Self {
        PlotSize { width: 800, height: 480 }
    }
}

/// Font size of the line charts' labels.
const CHART_FONT: f64 = 12.0;

/// The labelled mesh of a line chart (batch curve, MoE curve, KV chart).
pub(crate) struct Mesh<'a> {
    /// Labels across, and up (`None`: plotters' default).
    pub x_labels: usize,
    pub y_labels: Option<usize>,
    /// Label text for a value.
    pub x_fmt: &'a dyn Fn(&f64) -> String,
    pub y_fmt: &'a dyn Fn(&f64) -> String,
    /// Axis descriptions, with units.
    pub x_desc: &'a str,
    pub y_desc: &'a str,
}

/// A line chart's builder: the title (drawn into `overlay`) and room for a one-line legend in the
/// top margin, label areas, and a right label area for a secondary axis. Returns the builder and
/// the legend's baseline.
pub(crate) fn line_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: Option<&str>,
    width: u32,
    overlay: &mut svg::Overlay,
    right_axis: bool,
) -> (ChartBuilder<'a, 'b, SVGBackend<'b>>, i32) {
    let legend_y = if title.is_some() { 42 } else { 22 };
    if let Some(t) = title {
        overlay.text(((width / 2) as i32, 18), t, CHART_FONT + 1.0, svg::FG, svg::Anchor::Middle, 0.0);
    }
    let mut b = ChartBuilder::on(root);
    b.margin(12).margin_top(legend_y + 14).x_label_area_size(46).y_label_area_size(62);
    if right_axis {
        b.right_y_label_area_size(72);
    } else {
        b.margin_right(24);
    }
    (b, legend_y)
}

/// Draw the mesh: faint grid lines, axes and labels in the sentinel colour (the page's text colour).
pub(crate) fn draw_mesh(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    m: &Mesh,
) -> Result<(), PlotError> {
    let font = ("sans-serif", CHART_FONT).into_font().color(&BLACK);
    let mut mesh = chart.configure_mesh();
    mesh.x_labels(m.x_labels)
        .x_label_formatter(m.x_fmt)
        .y_label_formatter(m.y_fmt)
        .x_desc(m.x_desc)
        .y_desc(m.y_desc)
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(TRANSPARENT)
        .axis_style(BLACK)
        .label_style(font.clone())
        .axis_desc_style(font);
    if let Some(n) = m.y_labels {
        mesh.y_labels(n);
    }
    mesh.draw()?;
    Ok(())
}

/// Colour of a math format's points and ceilings: mid-tones that read on white and on near-black.
pub fn math_colour(m: MathFormat) -> &'static str {
    match m {
        MathFormat::Vector | MathFormat::Fp32 => "#8C959F",
        MathFormat::Bf16 => "#3B82F6",
        MathFormat::Fp16 => "#A371F7",
        MathFormat::Fp8 => "#E8710A",
        MathFormat::Int8 => "#2DA44E",
        MathFormat::Fp4 => "#E5484D",
    }
}

/// Wrap an inline plot as a standalone SVG file: XML declaration, and foreground/background
/// colours for light and dark viewers (an inline plot inherits them from the page instead).
pub fn standalone(svg: &str) -> String {
    const STYLE: &str = "<style>svg{color:#1F2328;background:#FFFFFF;font-family:sans-serif}\
@media (prefers-color-scheme: dark){svg{color:#E6EDF3;background:#0D1117}}</style>";
    let body = match svg.find('>') {
        Some(i) => format!("{}{STYLE}{}", &svg[..=i], &svg[i + 1..]),
        None => svg.to_string(),
    };
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{body}\n")
}

/// A one-line plot title for a scenario: model, GPU, phase, batch shape and storage formats
/// (mixed weight storage is summarised as "mixed"; the report lists it in full).
pub fn title(inputs: &crate::Inputs) -> String {
    let shape = match inputs.ctx {
        Some(c) => format!("batch {} × {} tokens", inputs.batch, crate::human::count(c)),
        None => {
            format!("{} sequences, {} tokens", inputs.batch, crate::human::count(inputs.total_context_tokens as u64))
        }
    };
    let weights = if inputs.weights.contains(' ') { "mixed".to_string() } else { inputs.weights_shown() };
    format!("{} on {} · {} · {shape} · weights {weights} · KV {}", inputs.model, inputs.gpu, inputs.phase, inputs.kv)
}

/// An axis label for a power of ten, with an SI prefix: 10⁹ → `1G`, 0.01 → `0.01`.
pub fn decade_label(exponent: f64) -> String {
    let e = exponent.round() as i32;
    const PREFIX: [(i32, &str); 6] = [(18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k")];
    if e < 0 {
        return format!("{}", 10f64.powi(e));
    }
    for (p, s) in PREFIX {
        if e >= p {
            return format!("{}{s}", 10u64.pow((e - p) as u32));
        }
    }
    format!("{}", 10u64.pow(e as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decade_labels_use_si_prefixes() {
        let l: Vec<String> = [-2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 9.0, 14.0, 15.0].map(decade_label).to_vec();
        assert_eq!(l, ["0.01", "0.1", "1", "10", "100", "1k", "10k", "1G", "100T", "1P"]);
    }

    #[test]
    fn standalone_adds_a_declaration_and_theme_colours() {
        let s = standalone("<svg viewBox=\"0 0 1 1\"><g/></svg>");
        assert!(s.starts_with("<?xml"));
        assert!(s.contains("<svg viewBox=\"0 0 1 1\"><style>"), "{s}");
        assert!(s.contains("prefers-color-scheme: dark"));
    }
}
