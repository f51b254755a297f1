//! The SVG text around plotters' output: escaping, the elements plotters cannot make (points with
//! `<title>` tooltips, rotated labels), and the final rewrite of the sentinel colour.

use std::fmt::Write;

/// Escape text for SVG/XML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Elements appended after plotters' drawing (so they sit on top of it).
#[derive(Debug, Default)]
pub struct Overlay {
    buf: String,
}

/// Text anchor.
#[derive(Debug, Clone, Copy)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn name(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

impl Overlay {
    /// A filled circle with a hover tooltip. `class` lets a page style or select it.
    pub fn point(&mut self, (x, y): (i32, i32), r: f64, fill: &str, class: &str, tooltip: &str) {
        let _ = write!(
            self.buf,
            "<circle class=\"{}\" cx=\"{x}\" cy=\"{y}\" r=\"{r:.1}\" fill=\"{fill}\" fill-opacity=\"0.85\" stroke=\"#000000\" stroke-width=\"0.8\"><title>{}</title></circle>",
            esc(class),
            esc(tooltip)
        );
    }

    /// Text at a point, optionally rotated by `angle_deg` about it.
    #[allow(clippy::too_many_arguments)]
    pub fn text(&mut self, (x, y): (i32, i32), s: &str, size: f64, fill: &str, anchor: Anchor, angle_deg: f64) {
        let rotate = if angle_deg.abs() > 1e-9 {
            format!(" transform=\"rotate({angle_deg:.2} {x} {y})\"")
        } else {
            String::new()
        };
        let _ = write!(
            self.buf,
            "<text x=\"{x}\" y=\"{y}\" font-family=\"sans-serif\" font-size=\"{size}\" fill=\"{fill}\" text-anchor=\"{}\"{rotate}>{}</text>",
            anchor.name(),
            esc(s)
        );
    }

    /// A straight line; `dash` is an SVG `stroke-dasharray` ("" for solid).
    pub fn line(&mut self, (x0, y0): (i32, i32), (x1, y1): (i32, i32), stroke: &str, width: f64, dash: &str) {
        let dash = if dash.is_empty() { String::new() } else { format!(" stroke-dasharray=\"{dash}\"") };
        let _ = write!(
            self.buf,
            "<line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y1}\" stroke=\"{stroke}\" stroke-width=\"{width}\"{dash}/>"
        );
    }

    /// A rectangle with a fill opacity.
    pub fn rect(&mut self, (x0, y0): (i32, i32), (x1, y1): (i32, i32), fill: &str, opacity: f64) {
        let (x, y, w, h) = (x0.min(x1), y0.min(y1), (x1 - x0).abs(), (y1 - y0).abs());
        let _ = write!(
            self.buf,
            "<rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" fill=\"{fill}\" fill-opacity=\"{opacity}\"/>"
        );
    }
}

impl Overlay {
    /// A rectangle in fractional user units with a class, an optional outline and a hover tooltip.
    #[allow(clippy::too_many_arguments)]
    pub fn cell(
        &mut self,
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        fill: &str,
        opacity: f64,
        class: &str,
        tooltip: Option<&str>,
    ) {
        let _ = write!(
            self.buf,
            "<rect class=\"{}\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\" fill=\"{fill}\" fill-opacity=\"{opacity}\"",
            esc(class)
        );
        match tooltip {
            Some(t) => {
                let _ = write!(self.buf, "><title>{}</title></rect>", esc(t));
            }
            None => self.buf.push_str("/>"),
        }
    }

    /// Markup as given (definitions such as a `<pattern>`); the caller escapes what it interpolates.
    pub fn raw(&mut self, markup: &str) {
        self.buf.push_str(markup);
    }

    /// The outline of a rectangle in fractional user units.
    pub fn outline(&mut self, x: f64, y: f64, w: f64, h: f64, stroke: &str, width: f64) {
        let _ = write!(
            self.buf,
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{width}\"/>"
        );
    }
}

/// A plain SVG document of `size` holding `overlay` (for plots drawn without plotters), finished as
/// [`finish`] does.
pub fn plain(size: (u32, u32), overlay: Overlay, class: &str, label: &str) -> String {
    let (w, h) = size;
    let shell = format!(
        "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" xmlns=\"http://www.w3.org/2000/svg\"></svg>"
    );
    finish(&shell, overlay, class, label)
}

/// The sentinel for "the surrounding text colour".
pub const FG: &str = "#000000";

/// Finish plotters' SVG: add `class`, `role` and an accessible name to the root, append the
/// overlay, and turn the sentinel colour into `currentColor`.
pub fn finish(plotters_svg: &str, overlay: Overlay, class: &str, label: &str) -> String {
    let mut s = plotters_svg.replacen(
        "<svg ",
        &format!("<svg class=\"{}\" role=\"img\" aria-label=\"{}\" ", esc(class), esc(label)),
        1,
    );
    if let Some(end) = s.rfind("</svg>") {
        s.insert_str(end, &overlay.buf);
    }
    s.replace(&format!("\"{FG}\""), "\"currentColor\"")
}

/// Estimated width of a label in user units (plotters' own estimate: 0.6 em per character).
pub fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_rewrites_the_sentinel_and_appends_the_overlay() {
        let mut o = Overlay::default();
        o.point((1, 2), 3.0, "#3B82F6", "pt", "a <b> & \"c\"");
        let s = finish("<svg width=\"1\"><line stroke=\"#000000\"/></svg>", o, "plot", "x");
        assert_eq!(
            s,
            "<svg class=\"plot\" role=\"img\" aria-label=\"x\" width=\"1\"><line stroke=\"currentColor\"/>\
<circle class=\"pt\" cx=\"1\" cy=\"2\" r=\"3.0\" fill=\"#3B82F6\" fill-opacity=\"0.85\" stroke=\"currentColor\" stroke-width=\"0.8\">\
<title>a &lt;b&gt; &amp; &quot;c&quot;</title></circle></svg>"
        );
    }
}
