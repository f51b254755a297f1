//! The SVG text around plotters' output: escaping, the elements plotters cannot make (points with
//! `<title>` tooltips, rotated labels), and the final rewrite of the sentinel colour.

use std::fmt::Write;

/// Escape text for SVG/XML content and attribute values.
pub(super) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_esc(&mut out, s);
    out
}

/// [`esc`] appended to `out`: the runs between markup characters are copied whole.
pub(super) fn push_esc(out: &mut String, s: &str) {
    let mut from = 0;
    for (i, b) in s.bytes().enumerate() {
        let entity = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.push_str(&s[from..i]);
        out.push_str(entity);
        from = i + 1;
    }
    out.push_str(&s[from..]);
}

/// Elements appended after plotters' drawing (so they sit on top of it).
#[derive(Debug, Default)]
pub(crate) struct Overlay {
    buf: String,
    /// A mark without a link has been made a keyboard stop (the first one is; the explorer's
    /// script moves between the others with the arrow keys).
    stop: bool,
}

/// Text anchor.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Anchor {
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

/// Where a plot's marks link to: the explorer passes a function from a mark's key (a point, a
/// batch size …) to a URL, or `None` for a mark that goes nowhere; the CLI's standalone files pass
/// no builder at all, so they hold no links. One drawing function serves both.
pub type Links<'a, K> = Option<&'a dyn Fn(&K) -> Option<String>>;

/// The URL `links` gives `key`, if any.
pub(super) fn href<K>(links: Links<'_, K>, key: &K) -> Option<String> {
    links.and_then(|f| f(key))
}

impl Overlay {
    /// A data mark: the element `<{tag} {attrs}>` with a `<title>` child holding `tooltip` (its
    /// numbers with units: hovering shows them in any viewer, without script; the explorer's script
    /// shows the same text styled, and on a tap), wrapped in `<a href>` when `href` is given. Every
    /// point, bar and cell of every plot is drawn through this one function.
    ///
    /// Every mark is reachable by keyboard: a linked one is a link; of the others the first is a
    /// tab stop (`tabindex="0"`), from which the arrow keys go to the rest.
    pub(crate) fn mark(&mut self, tag: &str, attrs: &str, tooltip: &str, href: Option<&str>) {
        if let Some(h) = href {
            self.buf.push_str("<a class=\"mark-link\" href=\"");
            push_esc(&mut self.buf, h);
            self.buf.push_str("\">");
        }
        let stop = if href.is_none() && !self.stop {
            self.stop = true;
            " tabindex=\"0\""
        } else {
            ""
        };
        for part in ["<", tag, " ", attrs, stop, "><title>"] {
            self.buf.push_str(part);
        }
        push_esc(&mut self.buf, tooltip);
        for part in ["</title></", tag, ">"] {
            self.buf.push_str(part);
        }
        if href.is_some() {
            self.buf.push_str("</a>");
        }
    }

    /// A filled circle with a hover tooltip. `class` lets a page style or select it.
    pub(crate) fn point(&mut self, xy: (i32, i32), r: f64, fill: &str, class: &str, tooltip: &str) {
        self.point_link(xy, r, fill, class, tooltip, None);
    }

    /// [`Overlay::point`], linked to `href` when given.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn point_link(
        &mut self,
        (x, y): (i32, i32),
        r: f64,
        fill: &str,
        class: &str,
        tooltip: &str,
        href: Option<&str>,
    ) {
        let attrs = format!(
            "class=\"{}\" cx=\"{x}\" cy=\"{y}\" r=\"{r:.1}\" fill=\"{fill}\" fill-opacity=\"0.85\" stroke=\"#000000\" stroke-width=\"0.8\"",
            esc(class)
        );
        self.mark("circle", &attrs, tooltip, href);
    }

    /// An invisible hover target (a line's sample: the line itself is drawn by plotters), a circle
    /// of radius `r` with a tooltip.
    pub(crate) fn target(&mut self, (x, y): (i32, i32), r: f64, class: &str, tooltip: &str, href: Option<&str>) {
        let attrs =
            format!("class=\"{}\" cx=\"{x}\" cy=\"{y}\" r=\"{r:.1}\" fill=\"#000000\" fill-opacity=\"0\"", esc(class));
        self.mark("circle", &attrs, tooltip, href);
    }

    /// Text at a point, optionally rotated by `angle_deg` about it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn text(&mut self, (x, y): (i32, i32), s: &str, size: f64, fill: &str, anchor: Anchor, angle_deg: f64) {
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
    pub(crate) fn line(&mut self, (x0, y0): (i32, i32), (x1, y1): (i32, i32), stroke: &str, width: f64, dash: &str) {
        let dash = if dash.is_empty() { String::new() } else { format!(" stroke-dasharray=\"{dash}\"") };
        let _ = write!(
            self.buf,
            "<line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y1}\" stroke=\"{stroke}\" stroke-width=\"{width}\"{dash}/>"
        );
    }

    /// A rectangle with a fill opacity.
    pub(crate) fn rect(&mut self, (x0, y0): (i32, i32), (x1, y1): (i32, i32), fill: &str, opacity: f64) {
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
    pub(crate) fn cell(
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
        let attrs = format!(
            "class=\"{}\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\" fill=\"{fill}\" fill-opacity=\"{opacity}\"",
            esc(class)
        );
        match tooltip {
            Some(t) => self.mark("rect", &attrs, t, None),
            None => {
                let _ = write!(self.buf, "<rect {attrs}/>");
            }
        }
    }

    /// [`Overlay::cell`] with a hover tooltip and an outline of `stroke_width` in the text colour
    /// (one element where a cell and its outline were two: a big tile grid has a thousand).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn cell_outlined(
        &mut self,
        (x, y, w, h): (f64, f64, f64, f64),
        fill: &str,
        opacity: f64,
        class: &str,
        tooltip: &str,
        stroke_width: f64,
    ) {
        let attrs = format!(
            "class=\"{}\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\" fill=\"{fill}\" fill-opacity=\"{opacity}\" stroke=\"{FG}\" stroke-width=\"{stroke_width}\"",
            esc(class)
        );
        self.mark("rect", &attrs, tooltip, None);
    }

    /// Markup as given (definitions such as a `<pattern>`); the caller escapes what it interpolates.
    pub(crate) fn raw(&mut self, markup: &str) {
        self.buf.push_str(markup);
    }

    /// The outline of a rectangle in fractional user units.
    pub(crate) fn outline(&mut self, x: f64, y: f64, w: f64, h: f64, stroke: &str, width: f64) {
        let _ = write!(
            self.buf,
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{width}\"/>"
        );
    }
}

/// A plain SVG document of `size` holding `overlay` (for plots drawn without plotters), finished as
/// [`finish`] does.
pub(super) fn plain(size: (u32, u32), overlay: Overlay, class: &str, label: &str) -> String {
    let (w, h) = size;
    let shell = format!(
        "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" xmlns=\"http://www.w3.org/2000/svg\"></svg>"
    );
    finish(&shell, overlay, class, label)
}

/// The sentinel for "the surrounding text colour".
pub(super) const FG: &str = "#000000";

/// Finish plotters' SVG: add `class`, `role` and an accessible name to the root, append the
/// overlay, and turn the sentinel colour into `currentColor`. A plot whose marks can be reached
/// (links, a keyboard stop) is a `group` of them; one without is an `img`.
pub(super) fn finish(plotters_svg: &str, overlay: Overlay, class: &str, label: &str) -> String {
    finish_frame(&current_colour(plotters_svg), overlay, class, label)
}

/// The sentinel colour of `svg` turned into `currentColor`.
pub(super) fn current_colour(svg: &str) -> String {
    svg.replace(SENTINEL_ATTR, "\"currentColor\"")
}

/// The sentinel as an attribute value.
const SENTINEL_ATTR: &str = "\"#000000\"";

/// [`finish`] of an SVG whose sentinel colour is already `currentColor` ([`current_colour`]): a
/// frame drawn once and kept. The overlay's sentinel is turned here; an attribute value never
/// spans the frame and the overlay, so the result is [`finish`]'s.
pub(super) fn finish_frame(svg: &str, overlay: Overlay, class: &str, label: &str) -> String {
    let role = if overlay.stop || overlay.buf.contains("<a ") { "group" } else { "img" };
    let overlay = current_colour(&overlay.buf);
    let mut s = String::with_capacity(svg.len() + overlay.len() + class.len() + label.len() + 64);
    match svg.split_once("<svg ") {
        Some((head, rest)) => {
            s.push_str(head);
            let _ = write!(s, "<svg class=\"{}\" role=\"{role}\" aria-label=\"{}\" ", esc(class), esc(label));
            s.push_str(rest);
        }
        None => s.push_str(svg),
    }
    match s.rfind("</svg>") {
        Some(end) => s.insert_str(end, &overlay),
        None => s.push_str(&overlay),
    }
    s
}

/// A data mark read back from a plot's SVG (what `Overlay::mark` wrote): its element, class,
/// hover text and link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkInfo {
    /// Element name (`circle`, `rect`).
    pub tag: String,
    /// Its `class` attribute.
    pub class: String,
    /// The `<title>` text, unescaped.
    pub tooltip: String,
    /// The enclosing link's `href`, unescaped.
    pub href: Option<String>,
}

/// Every titled mark of the `<svg>` elements in `text` (a plot, or a page holding plots), in
/// document order: the numbers a person sees on hover, and where clicking goes (for tests and tools).
pub fn marks(text: &str) -> Vec<MarkInfo> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").map(|e| start + e).unwrap_or(rest.len());
        out.extend(svg_marks(&rest[start..end]));
        rest = &rest[end..];
        if rest.len() <= "</svg>".len() {
            break;
        }
        rest = &rest["</svg>".len()..];
    }
    out
}

/// [`marks`] of one `<svg>` element.
fn svg_marks(svg: &str) -> Vec<MarkInfo> {
    let attr = |tag: &str, name: &str| -> Option<String> {
        let key = format!(" {name}=\"");
        let i = tag.find(&key)? + key.len();
        let len = tag[i..].find('"')?;
        Some(unesc(&tag[i..i + len]))
    };
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = svg[from..].find("<title>").map(|i| i + from) {
        let body = i + "<title>".len();
        let Some(end) = svg[body..].find("</title>").map(|e| e + body) else { break };
        from = end;
        let Some(open) = svg[..i].rfind('<') else { continue };
        let tag_text = &svg[open..i];
        let tag = tag_text[1..].split([' ', '>']).next().unwrap_or("").to_string();
        let before = &svg[..open];
        let href = before
            .rfind("<a ")
            .filter(|a| {
                before[*a..].ends_with("\">") && !before[*a..].contains("</a>") && !before[*a + 1..].contains('<')
            })
            .and_then(|a| attr(&before[a..], "href"));
        out.push(MarkInfo {
            tag,
            class: attr(tag_text, "class").unwrap_or_default(),
            tooltip: unesc(&svg[body..end]),
            href,
        });
    }
    out
}

/// Undo [`esc`].
fn unesc(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
}

/// Estimated width of a label in user units (plotters' own estimate: 0.6 em per character).
pub(super) fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_read_back_what_mark_wrote() {
        let mut o = Overlay::default();
        o.point_link((1, 2), 3.0, "#3B82F6", "op", "q & k\n1 ms", Some("/ledger?a=1&b=2#op-q"));
        o.point((4, 5), 3.0, "#3B82F6", "rate", "x <y>");
        o.cell(0.0, 0.0, 1.0, 1.0, "#fff", 1.0, "tile", Some("t"));
        let s = finish("<svg width=\"1\"></svg>", o, "plot", "x");
        assert!(s.contains("<a class=\"mark-link\" href=\"/ledger?a=1&amp;b=2#op-q\"><circle class=\"op\""), "{s}");
        let m = marks(&s);
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].tag.as_str(), m[0].class.as_str()), ("circle", "op"));
        assert_eq!(m[0].tooltip, "q & k\n1 ms");
        assert_eq!(m[0].href.as_deref(), Some("/ledger?a=1&b=2#op-q"));
        assert_eq!((m[1].tooltip.as_str(), m[1].href.as_deref()), ("x <y>", None));
        assert_eq!((m[2].tag.as_str(), m[2].class.as_str(), m[2].href.as_deref()), ("rect", "tile", None));
    }

    #[test]
    fn finish_rewrites_the_sentinel_and_appends_the_overlay() {
        let mut o = Overlay::default();
        o.point((1, 2), 3.0, "#3B82F6", "pt", "a <b> & \"c\"");
        let s = finish("<svg width=\"1\"><line stroke=\"#000000\"/></svg>", o, "plot", "x");
        assert_eq!(
            s,
            "<svg class=\"plot\" role=\"group\" aria-label=\"x\" width=\"1\"><line stroke=\"currentColor\"/>\
<circle class=\"pt\" cx=\"1\" cy=\"2\" r=\"3.0\" fill=\"#3B82F6\" fill-opacity=\"0.85\" stroke=\"currentColor\" stroke-width=\"0.8\" tabindex=\"0\">\
<title>a &lt;b&gt; &amp; &quot;c&quot;</title></circle></svg>"
        );
    }
}
