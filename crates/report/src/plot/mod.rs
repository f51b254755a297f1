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

impl PlotSize {
    /// A phone's plot: 360 units across, about one CSS pixel per unit in the content box of a
    /// 390 px screen. Plots this narrow ([`PlotSize::is_narrow`]) put their legend below the plot
    /// area, where it adds to the height, and draw fewer axis labels in text of 11 units or more.
    pub const NARROW: PlotSize = PlotSize { width: 360, height: 320 };

    /// Whether a plot of this size takes the narrow layout (narrower than 480 units).
    pub fn is_narrow(self) -> bool {
        self.width < 480
    }

    /// The canvas of a plot of this size: taller by `legend`'s height where it is narrow (the
    /// legend goes below the plot area), as given where it is wide.
    pub(crate) fn canvas(self, legend: &Legend) -> (u32, u32) {
        if self.is_narrow() {
            (self.width, self.height + legend.height(self.width))
        } else {
            (self.width, self.height)
        }
    }

    /// The size of a line chart's labels at this size.
    pub(crate) fn font(self) -> f64 {
        if self.is_narrow() {
            NARROW_FONT
        } else {
            CHART_FONT
        }
    }
}

/// Font size of the line charts' labels.
const CHART_FONT: f64 = 12.0;
/// Font size of a narrow plot's text: labels, legend and notes alike.
pub(crate) const NARROW_FONT: f64 = 11.0;

/// The font size to ask plotters for to get text of `units` in its SVG (its backend writes a
/// font's size divided by 1.24: a 12 asked for is a `font-size` of 9.68).
pub(crate) fn plotters_font(units: f64) -> f64 {
    units * 1.24
}

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

/// A line chart's builder at `size`: as [`line_chart`] where it is wide; where it is narrow, the
/// title on top, smaller label areas, and a bottom margin of `legend_h` below the axis for the
/// legend. Returns the builder and the baseline of the legend's first line.
pub(crate) fn line_chart_sized<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: Option<&str>,
    size: PlotSize,
    overlay: &mut svg::Overlay,
    right_axis: bool,
    legend_h: u32,
) -> (ChartBuilder<'a, 'b, SVGBackend<'b>>, i32) {
    if !size.is_narrow() {
        return line_chart(root, title, size.width, overlay, right_axis);
    }
    let top = title.map_or(10, |t| narrow_title(overlay, t, size.width) + 6);
    let mut b = ChartBuilder::on(root);
    b.margin(6).margin_top(top).margin_bottom(6 + legend_h).x_label_area_size(40).y_label_area_size(54);
    if right_axis {
        b.right_y_label_area_size(54);
    } else {
        b.margin_right(14);
    }
    (b, size.height as i32 + 10)
}

/// A narrow plot's title, wrapped to its `width` and centred from the top. Returns the height it
/// takes.
pub(crate) fn narrow_title(overlay: &mut svg::Overlay, title: &str, width: u32) -> u32 {
    let font = NARROW_FONT + 1.0;
    let chars = ((f64::from(width) - 12.0) / (font * 0.6)).floor().max(10.0) as usize;
    let lines = wrap_words(title, chars);
    for (i, l) in lines.iter().enumerate() {
        overlay.text(((width / 2) as i32, 16 + 15 * i as i32), l, font, svg::FG, svg::Anchor::Middle, 0.0);
    }
    15 * lines.len() as u32 + 6
}

/// How many labels a narrow axis `span` units long holds, at most `wanted`: one per 52 units.
pub(crate) fn narrow_labels(wanted: usize, span: u32) -> usize {
    wanted.min((span / 52).max(2) as usize)
}

/// Draw the mesh: faint grid lines, axes and labels in the sentinel colour (the page's text colour).
pub(crate) fn draw_mesh(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    m: &Mesh,
) -> Result<(), PlotError> {
    draw_mesh_sized(chart, m, CHART_FONT)
}

/// [`draw_mesh`] at `size`: as it is where wide; where narrow, labels of [`NARROW_FONT`] and no
/// more labels across than the plot area's width holds ([`narrow_labels`]).
pub(crate) fn draw_mesh_at(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    m: &Mesh,
    size: PlotSize,
) -> Result<(), PlotError> {
    if !size.is_narrow() {
        return draw_mesh(chart, m);
    }
    let span = chart.plotting_area().dim_in_pixel().0;
    let m = Mesh { x_labels: narrow_labels(m.x_labels, span), ..*m };
    draw_mesh_sized(chart, &m, plotters_font(NARROW_FONT))
}

/// [`draw_mesh`] with labels of `font` (as plotters takes it: see [`plotters_font`]).
pub(crate) fn draw_mesh_sized(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    m: &Mesh,
    font: f64,
) -> Result<(), PlotError> {
    let font = ("sans-serif", font).into_font().color(&BLACK);
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

/// What stands beside a legend's label.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Swatch {
    /// A line: colour, width, `stroke-dasharray` ("" for solid).
    Line(String, f64, &'static str),
    /// A dot of a colour.
    Dot(String),
    /// Nothing: a heading or a note.
    None,
}

/// A legend drawn below a narrow plot: rows of entries (a swatch and its label), each row's
/// entries side by side and wrapped onto further lines where they do not fit the width.
#[derive(Debug, Clone, Default)]
pub(crate) struct Legend {
    rows: Vec<Vec<(Swatch, String)>>,
}

/// Height of one line of a narrow legend, user units.
const LEGEND_LINE: f64 = 16.0;
/// Gap between two entries on one line.
const LEGEND_GAP: f64 = 14.0;

impl Legend {
    /// Start a new row.
    pub(crate) fn row(mut self) -> Self {
        self.rows.push(Vec::new());
        self
    }

    /// An entry on the current row.
    pub(crate) fn entry(mut self, swatch: Swatch, label: impl Into<String>) -> Self {
        if self.rows.is_empty() {
            self.rows.push(Vec::new());
        }
        self.rows.last_mut().expect("a row").push((swatch, label.into()));
        self
    }

    /// A line's entry on the current row.
    pub(crate) fn line(self, colour: &str, dash: &'static str, label: impl Into<String>) -> Self {
        self.entry(Swatch::Line(colour.to_string(), 2.0, dash), label)
    }

    /// Text alone on rows of its own, wrapped to `width`.
    pub(crate) fn note(mut self, text: &str, width: u32) -> Self {
        let chars = ((f64::from(width) - 12.0) / (NARROW_FONT * 0.6)).floor().max(10.0) as usize;
        for l in wrap_words(text, chars) {
            self = self.row().entry(Swatch::None, l);
        }
        self
    }

    fn entry_width(swatch: &Swatch, label: &str) -> f64 {
        let lead = match swatch {
            Swatch::Line(..) => 30.0,
            Swatch::Dot(_) => 16.0,
            Swatch::None => 0.0,
        };
        lead + svg::text_width(label, NARROW_FONT)
    }

    /// The entries' positions: (row line, x offset) for each, lines counted from 0.
    fn lay_out(&self, width: u32) -> Vec<Vec<(usize, f64)>> {
        let room = f64::from(width) - 12.0;
        let mut line = 0usize;
        let mut out = Vec::new();
        for row in &self.rows {
            let mut x = 0.0;
            let mut at = Vec::new();
            for (s, l) in row {
                let w = Self::entry_width(s, l);
                if x > 0.0 && x + w > room {
                    line += 1;
                    x = 0.0;
                }
                at.push((line, x));
                x += w + LEGEND_GAP;
            }
            out.push(at);
            line += 1;
        }
        out
    }

    /// The legend's height at `width`, user units (0 when empty).
    pub(crate) fn height(&self, width: u32) -> u32 {
        let lines = self.lay_out(width).iter().flatten().map(|(l, _)| l + 1).max().unwrap_or(0);
        if lines == 0 {
            0
        } else {
            (lines as f64 * LEGEND_LINE + 8.0) as u32
        }
    }

    /// Draw the legend below a narrow plot of `size`: from the left edge, its first baseline at
    /// `y` (what [`line_chart_sized`] returns).
    pub(crate) fn draw_below(&self, o: &mut svg::Overlay, y: i32, size: PlotSize) {
        self.draw(o, 8, y, size.width);
    }

    /// Draw the legend with its first baseline at `y`, from `x`, as a group of class `legend`.
    pub(crate) fn draw(&self, o: &mut svg::Overlay, x: i32, y: i32, width: u32) {
        o.raw("<g class=\"legend\">");
        for (row, at) in self.rows.iter().zip(self.lay_out(width)) {
            for ((swatch, label), (line, dx)) in row.iter().zip(at) {
                let (x, y) = (x + dx as i32, y + (line as f64 * LEGEND_LINE) as i32);
                let text_x = match swatch {
                    Swatch::Line(c, w, dash) => {
                        o.line((x, y - 4), (x + 24, y - 4), c, *w, dash);
                        x + 30
                    }
                    Swatch::Dot(c) => {
                        o.raw(&format!(
                            "<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{c}\" fill-opacity=\"0.85\" stroke=\"{}\" stroke-width=\"0.8\"/>",
                            x + 5,
                            y - 4,
                            svg::FG
                        ));
                        x + 16
                    }
                    Swatch::None => x,
                };
                o.text((text_x, y), label, NARROW_FONT, svg::FG, svg::Anchor::Start, 0.0);
            }
        }
        o.raw("</g>");
    }
}

/// Greedy word wrap at `width` characters.
pub(crate) fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let line = lines.last_mut().expect("never empty");
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
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

/// Checks of a narrow plot's SVG, for the plots' tests.
#[cfg(test)]
pub(crate) mod phone {
    /// The `name="…"` attribute of an element's text, as a number.
    fn num(tag: &str, name: &str) -> Option<f64> {
        let key = format!(" {name}=\"");
        let i = tag.find(&key)? + key.len();
        tag[i..].split('"').next()?.parse().ok()
    }

    /// The SVG's width in user units (its `viewBox`).
    pub(crate) fn width(svg: &str) -> f64 {
        let i = svg.find("viewBox=\"").expect("a viewBox") + "viewBox=\"".len();
        svg[i..].split([' ', '"']).nth(2).and_then(|w| w.parse().ok()).expect("a viewBox width")
    }

    /// Every `<text>` element: (its tag's text, inside the legend group).
    fn texts(svg: &str) -> Vec<(&str, bool)> {
        let (start, end) = match svg.find("<g class=\"legend\">") {
            Some(s) => (s, s + svg[s..].find("</g>").expect("the legend group's end")),
            None => (svg.len(), svg.len()),
        };
        svg.match_indices("<text ")
            .map(|(i, _)| (&svg[i..i + svg[i..].find('>').expect("a tag's end")], i > start && i < end))
            .collect()
    }

    /// A narrow plot fits a phone: shown 360 CSS px wide no text is under 10 px, and every
    /// line of its legend lies below everything else drawn (the x axis and its labels).
    pub(crate) fn assert_fits(svg: &str) {
        let scale = 360.0 / width(svg);
        let all = texts(svg);
        assert!(!all.is_empty());
        for (tag, _) in &all {
            let size = num(tag, "font-size").expect("a font size");
            assert!(size * scale >= 10.0, "{size} units is {:.1} px on a phone: {tag}", size * scale);
        }
        let legend: Vec<f64> =
            all.iter().filter(|t| t.1).map(|(t, _)| num(t, "y").unwrap() - num(t, "font-size").unwrap()).collect();
        assert!(!legend.is_empty(), "a narrow plot has its legend below: {svg}");
        let legend_top = legend.iter().copied().fold(f64::INFINITY, f64::min);
        for (tag, _) in all.iter().filter(|t| !t.1 && !t.0.contains("transform=")) {
            // Plotters hangs its labels from `y` (dy 0.76em) or sets them on it (-0.5ex); the
            // others stand on their baseline at `y`, their descenders a quarter em below.
            let (y, size) = (num(tag, "y").unwrap(), num(tag, "font-size").unwrap());
            let bottom = if tag.contains("dy=\"0.76em\"") {
                y + size
            } else if tag.contains("dy=\"-0.5ex\"") {
                y
            } else {
                y + 0.25 * size
            };
            assert!(bottom <= legend_top + 0.5, "{tag} reaches below the legend's top at {legend_top}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_word_boundaries() {
        assert_eq!(wrap_words("aa bb cc dd", 5), ["aa bb", "cc dd"]);
        assert_eq!(wrap_words("toolongword x", 4), ["toolongword", "x"]);
    }

    #[test]
    fn a_narrow_legend_wraps_its_entries_and_grows_the_canvas() {
        let l = Legend::default().line("#3B82F6", "", "a long label of the first line").line(
            "#E8710A",
            "",
            "and another long label",
        );
        assert_eq!(l.height(800), 24, "one line where wide");
        assert_eq!(l.height(360), 40, "two where narrow");
        assert_eq!(PlotSize::NARROW.canvas(&l), (360, 360));
        assert_eq!(PlotSize::default().canvas(&l), (800, 480), "a wide plot keeps its size");
        assert_eq!(Legend::default().height(360), 0);
    }

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
