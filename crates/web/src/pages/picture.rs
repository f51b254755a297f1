//! The picture of Powers of ten: the pass as an icicle — the node on top, its children
//! under it, their children under them — each block's width its share of the time (or of the
//! bytes or FLOPs), coloured by what bounds it, its numbers on hover (`<title>`), and a link that
//! zooms into it (so it works without JavaScript). Identical layers are one block "× 32" that a
//! link expands. At model level the layer stack is the model, and the embedding, the final norm
//! and the LM head sit beside it, outside (the Powers of Ten walk-through's convention). A GEMM operator and its tiles
//! are drawn as the tile grid (the GEMM tiling page's drawing) with one tile's re-read strips.
//!
//! Hand-written SVG: a handful of rectangles and links, no library needed; it is server-rendered
//! like every other number on the page.

use llm_ledger_core::zoom::{Level, NodeView, TileLevel, Totals};
use llm_ledger_core::ZoomTree;
use llm_ledger_report::human;
use llm_ledger_report::plot::{Dataflow, PlotSize, TileGrid};
use maud::{html, Markup, PreEscaped};
use std::fmt::Write;

/// The page key choosing what a block's width is.
pub(super) const SIZE: &str = "size";
/// The page key that draws identical layers one by one.
pub(super) const EXPAND: &str = "expand";

/// What a block's width stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Measure {
    /// Roofline time (the default).
    Time,
    /// HBM bytes.
    Bytes,
    /// FLOPs.
    Flops,
}

impl Measure {
    /// From the `size` key (anything else is time).
    pub(super) fn parse(v: Option<&str>) -> Measure {
        match v.map(str::trim) {
            Some("bytes") => Measure::Bytes,
            Some("flops") => Measure::Flops,
            _ => Measure::Time,
        }
    }

    fn key(self) -> Option<&'static str> {
        match self {
            Measure::Time => None,
            Measure::Bytes => Some("bytes"),
            Measure::Flops => Some("flops"),
        }
    }

    fn word(self) -> &'static str {
        match self {
            Measure::Time => "time",
            Measure::Bytes => "bytes",
            Measure::Flops => "FLOPs",
        }
    }

    /// A value of this measure, for people.
    fn fmt(self, v: f64) -> String {
        match self {
            Measure::Time => human::seconds(v),
            Measure::Bytes => human::bytes(v),
            Measure::Flops => human::flops(v),
        }
    }

    fn of(self, t: &Totals) -> f64 {
        match self {
            Measure::Time => t.timing.time_s,
            Measure::Bytes => t.cost.bytes(),
            Measure::Flops => t.cost.flops,
        }
    }
}

/// One block of the picture.
struct Block {
    label: String,
    /// The zoom path it links to.
    path: String,
    value: f64,
    bound: &'static str,
    tip: String,
    /// Drawn beside the stack (embedding, final norm, LM head at model level).
    outside: bool,
    /// Identical copies it stands for (`value` is all of them).
    times: u64,
    kids: Vec<Block>,
}

fn tip(name: &str, t: &Totals, times: u64, clock: &str) -> String {
    let bytes = t.cost.bytes();
    let intensity = if bytes > 0.0 { Some(t.cost.flops / bytes) } else { None };
    let each = if times > 1 { format!(" (× {times}, the numbers of one)") } else { String::new() };
    format!(
        "{name}{each}\n{clock} time {}\nFLOPs {}\nbytes {}\nintensity {} FLOP/B\n{}-bound",
        human::seconds(t.timing.time_s),
        human::flops(t.cost.flops),
        human::bytes(bytes),
        human::intensity(intensity),
        t.timing.bound().name()
    )
}

/// The block of the node at `path` (its children too when `depth` > 0), `times` identical copies.
fn block(tree: &ZoomTree, path: &str, label: String, m: Measure, times: u64, depth: u32, clock: &str) -> Option<Block> {
    let v = tree.node(path).ok()?;
    if v.level == Level::Tiles {
        return None;
    }
    let kids = if depth > 0 { children(tree, &v, m, false, depth - 1, times, clock) } else { Vec::new() };
    Some(Block {
        label,
        path: path.to_string(),
        value: m.of(&v.totals) * times as f64,
        bound: v.totals.timing.bound().name(),
        tip: tip(path, &v.totals, times, clock),
        outside: false,
        times,
        kids,
    })
}

/// The children of `v` as blocks; at model level identical neighbouring layers are one block
/// unless `expand`.
fn children(
    tree: &ZoomTree,
    v: &NodeView<'_>,
    m: Measure,
    expand: bool,
    depth: u32,
    times: u64,
    clock: &str,
) -> Vec<Block> {
    let mut out = Vec::new();
    if v.level == Level::Model {
        let outside = |name: &str| -> Option<Block> {
            let mut b = block(tree, name, name.to_string(), m, 1, 0, clock)?;
            b.outside = true;
            Some(b)
        };
        // The rest of the step beside the stack: what runs before it, then after it.
        let before = |n: &&llm_ledger_core::zoom::OpNode| n.op.kind.block() == llm_ledger_core::kinds::Block::Embedding;
        out.extend(tree.rest.iter().filter(before).filter_map(|n| outside(n.op.kind.name())));
        let groups = &tree.layer_group;
        let first = tree.first_layer;
        let mut i = 0;
        while i < groups.len() {
            let mut j = i + 1;
            while !expand && j < groups.len() && groups[j] == groups[i] {
                j += 1;
            }
            let n = (j - i) as u64;
            let (a, b) = (first + i, first + j - 1);
            let label = if n > 1 { format!("layer.{a}–{b} × {n}") } else { format!("layer.{a}") };
            out.extend(block(tree, &format!("layer.{a}"), label, m, n, depth, clock));
            i = j;
        }
        out.extend(tree.rest.iter().filter(|n| !before(n)).filter_map(|n| outside(n.op.kind.name())));
        return out;
    }
    for c in &v.children {
        let Some(p) = &c.path else { continue };
        out.extend(block(tree, p, c.name.clone(), m, times, depth, clock));
    }
    out
}

const W: f64 = 720.0;
const ROW_H: f64 = 38.0;
const ROW_GAP: f64 = 4.0;
const OUTSIDE_GAP: f64 = 10.0;
const FONT: f64 = 12.0;

fn text_fits(label: &str, w: f64) -> bool {
    label.chars().count() as f64 * FONT * 0.6 + 6.0 <= w
}

fn draw_block(svg: &mut String, b: &Block, x: f64, y: f64, w: f64, href: &dyn Fn(&str) -> String, current: bool) {
    let class = format!("blk {}{}", b.bound, if b.outside { " outside" } else { "" });
    let rect = format!(
        "<rect class=\"{class}\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{ROW_H}\" rx=\"2\"><title>{}</title></rect>",
        (w - 1.0).max(0.5),
        esc(&b.tip)
    );
    let text = if text_fits(&b.label, w) {
        format!(
            "<text x=\"{:.2}\" y=\"{:.2}\" font-size=\"{FONT}\" class=\"blk-label\">{}</text>",
            x + 4.0,
            y + ROW_H / 2.0 + FONT * 0.35,
            esc(&b.label)
        )
    } else {
        String::new()
    };
    if current {
        let _ = write!(svg, "<g class=\"here\" data-path=\"{}\">{rect}{text}</g>", esc(&b.path));
    } else {
        let _ = write!(svg, "<a href=\"{}\" data-path=\"{}\">{rect}{text}</a>", esc(&href(&b.path)), esc(&b.path));
    }
}

/// Lay `blocks` out across `x0..x0 + w` in proportion to their values (a gap before and after
/// the stack for the blocks outside it); returns each block's x and width.
fn lay_out(blocks: &[Block], x0: f64, w: f64) -> Vec<(f64, f64)> {
    let gaps = blocks.windows(2).filter(|p| p[0].outside != p[1].outside).count() as f64 * OUTSIDE_GAP;
    let total: f64 = blocks.iter().map(|b| b.value.max(0.0)).sum();
    let avail = (w - gaps).max(0.0);
    let mut x = x0;
    let mut out = Vec::with_capacity(blocks.len());
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 && blocks[i - 1].outside != b.outside {
            x += OUTSIDE_GAP;
        }
        let bw = if total > 0.0 { avail * b.value.max(0.0) / total } else { avail / blocks.len() as f64 };
        out.push((x, bw));
        x += bw;
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The pinned scenario's size of a block: a dashed outline from the block's
/// left edge, as wide as the block would be at the pinned value on the same scale (width ×
/// pinned ÷ now, clipped at the picture's edge), with the pinned value, Δ and ratio on hover and,
/// where it fits, the ratio written under the block's label.
fn ghost(svg: &mut String, b: &Block, pinned: Option<f64>, m: Measure, x: f64, y: f64, w: f64) {
    let Some(p) = pinned else { return };
    let ratio = if b.value > 0.0 { Some(p / b.value) } else { None };
    let gw = match ratio {
        Some(r) => (w * r).min(W - x),
        None => 0.0,
    };
    let d = b.value - p;
    let sign = if d < 0.0 { "−" } else { "+" };
    let r_text = ratio.map(human::ratio).unwrap_or_else(|| "—".into());
    let title = format!(
        "{}: pinned {} · now {} · Δ {sign}{} · now ÷ pinned {}",
        b.label,
        m.fmt(p),
        m.fmt(b.value),
        m.fmt(d.abs()),
        if p > 0.0 { human::ratio(b.value / p) } else { "—".into() }
    );
    let _ = write!(
        svg,
        "<rect class=\"ghost\" data-path=\"{}\" data-pinned=\"{p}\" data-now=\"{}\" x=\"{x:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{:.2}\" rx=\"2\"><title>{}</title></rect>",
        esc(&b.path),
        b.value,
        y + 1.0,
        (gw - 1.0).max(0.5),
        ROW_H - 2.0,
        esc(&title)
    );
    let label = format!("pinned {r_text}");
    if text_fits(&label, w) {
        let _ = write!(
            svg,
            "<text class=\"ghost-label\" x=\"{:.2}\" y=\"{:.2}\" font-size=\"{}\">{}</text>",
            x + 4.0,
            y + ROW_H - 4.0,
            FONT - 2.0,
            esc(&label)
        );
    }
}

/// The picture of the node at `path`, or nothing where it has no parts to draw.
/// `href(path)` is the page at another zoom path; `switch(key, value)` the page with one of the
/// picture's keys changed; `pin`, the pinned scenario's tree, draws each block's pinned size.
#[allow(clippy::too_many_arguments)]
pub(super) fn picture(
    tree: &ZoomTree,
    view: &NodeView<'_>,
    m: Measure,
    expand: bool,
    href: &dyn Fn(&str) -> String,
    switch: &dyn Fn(&str, Option<&str>) -> String,
    pin: Option<&ZoomTree>,
    clock: &str,
) -> Markup {
    if let Some(grid) = tile_grid(view, href) {
        return grid;
    }
    let kids = children(tree, view, m, expand, 1, 1, clock);
    if kids.is_empty() {
        return html! {};
    }
    let rows = if kids.iter().any(|k| !k.kids.is_empty()) { 3.0 } else { 2.0 };
    let h = rows * ROW_H + (rows - 1.0) * ROW_GAP;
    let mut svg = String::new();
    let slots = lay_out(&kids, 0.0, W);
    // Row 0: the node (at model level: the layer stack, over the layers only).
    let stack: Vec<usize> = (0..kids.len()).filter(|i| !kids[*i].outside).collect();
    let node_name = if view.level == Level::Model {
        format!("model: the layer stack, Σ {} layers", tree.num_layers)
    } else {
        view.path.clone()
    };
    if let (Some(first), Some(last)) = (stack.first(), stack.last()) {
        let x = slots[*first].0;
        let w = slots[*last].0 + slots[*last].1 - x;
        let totals = if view.level == Level::Model { tree.stack } else { view.totals };
        let here = Block {
            label: node_name.clone(),
            path: view.path.clone(),
            value: m.of(&totals),
            bound: totals.timing.bound().name(),
            tip: tip(&node_name, &totals, 1, clock),
            outside: false,
            times: 1,
            kids: Vec::new(),
        };
        let pinned = pin.and_then(|p| {
            let t = if view.level == Level::Model { p.stack } else { p.node(&view.path).ok()?.totals };
            Some(m.of(&t))
        });
        draw_block(&mut svg, &here, x, 0.0, w, href, true);
        ghost(&mut svg, &here, pinned, m, x, 0.0, w);
    }
    let outside: Vec<usize> = (0..kids.len()).filter(|i| kids[*i].outside).collect();
    if !outside.is_empty() {
        // Beside the stack: a frame over each part outside it, on the node's row.
        for i in &outside {
            let (x, w) = slots[*i];
            let _ = write!(
                svg,
                "<rect class=\"outside-frame\" x=\"{x:.2}\" y=\"0\" width=\"{:.2}\" height=\"{ROW_H}\" rx=\"2\"/>",
                (w - 1.0).max(0.5)
            );
        }
        let (x, w) = slots[outside[outside.len() - 1]];
        if text_fits("outside", w + 40.0) {
            let _ = write!(
                svg,
                "<text x=\"{:.2}\" y=\"{:.2}\" font-size=\"{}\" text-anchor=\"end\" class=\"outside-label\">outside</text>",
                x + w - 3.0,
                ROW_H / 2.0 + FONT * 0.35,
                FONT
            );
        }
    }
    let y1 = ROW_H + ROW_GAP;
    let y2 = 2.0 * (ROW_H + ROW_GAP);
    let pinned = |b: &Block| pin.and_then(|p| p.node(&b.path).ok()).map(|v| m.of(&v.totals) * b.times as f64);
    for (b, (x, w)) in kids.iter().zip(&slots) {
        draw_block(&mut svg, b, *x, y1, *w, href, false);
        ghost(&mut svg, b, pinned(b), m, *x, y1, *w);
        if !b.kids.is_empty() {
            for (k, (kx, kw)) in b.kids.iter().zip(lay_out(&b.kids, *x, *w)) {
                draw_block(&mut svg, k, kx, y2, kw, href, false);
                ghost(&mut svg, k, pinned(k), m, kx, y2, kw);
            }
        }
    }
    let groups = kids.iter().filter(|k| k.label.contains(" × ")).count();
    let label = format!("The pass at {}: blocks sized by {}, coloured by what bounds them", view.path, m.word());
    html! {
        figure.plot.wide.picture #picture data-size=(m.word()) {
            svg.plot.icicle viewBox={ "0 0 " (W) " " (h) } width=(W) height=(h) role="group" aria-label=(label) {
                (PreEscaped(svg))
            }
            figcaption {
                "Each block's width is its share of the " strong { (m.word()) } "; "
                span.key.memory { "memory-bound" } " · " span.key.compute { "compute-bound" }
                ". Hover a block for its numbers, click it to zoom in. Area: "
                @for (i, alt) in [Measure::Time, Measure::Bytes, Measure::Flops].iter().enumerate() {
                    @if i > 0 { " · " }
                    @if *alt == m { strong { (alt.word()) } }
                    @else { a.size href=(switch(SIZE, alt.key())) data-size=(alt.word()) { (alt.word()) } }
                }
                "."
                @if view.level == Level::Model {
                    @if groups > 0 {
                        " Identical layers are one block; "
                        a #expand-layers href=(switch(EXPAND, Some("1"))) { "draw each layer" } "."
                    } @else if expand {
                        " " a #group-layers href=(switch(EXPAND, None)) { "Group identical layers" } "."
                    }
                    " The layer stack is the model; the rest of the step (the embedding, the final norm, the LM head"
                    @if tree.rest.iter().any(|n| n.op.kind.is_comm()) { ", their collectives, a stage's send and wait" }
                    ") sits beside it, outside."
                }
                @if pin.is_some() {
                    " " span #picture-pinned { "Dashed outlines: each block's size in the pinned scenario, on the same scale; the ratio written in a block is pinned ÷ now (hover for the pinned value, Δ and ratio)." }
                }
            }
        }
    }
}

/// A GEMM operator or its tiles: the tile grid with one tile's re-read strips.
fn tile_grid(view: &NodeView<'_>, href: &dyn Fn(&str) -> String) -> Option<Markup> {
    if !matches!(view.level, Level::Op | Level::Tiles) {
        return None;
    }
    let op = view.op()?;
    let TileLevel::Gemm { choice, .. } = &op.tiles else { return None };
    let svg =
        TileGrid { tiling: &choice.best, title: None }.svg_with_reread(PlotSize { width: 820, height: 480 }).ok()?;
    Some(html! {
        figure.plot.wide.picture #picture data-size="tiles" {
            @if view.level == Level::Op {
                @let tiles = format!("{}.tiles", view.path);
                a.zoomto href=(href(&tiles)) data-path=(tiles) title="zoom into the tiles" { (PreEscaped(svg)) }
            } @else {
                (PreEscaped(svg))
            }
            figcaption {
                "The operator's output cut into its tiles, to scale, coloured by wave; hatched: padding. Outlined: one tile, "
                "the tiles of its row (each re-reads the same strip of A) and of its column (the same strip of B). "
                "Those re-reads are the reuse factor. The same drawing as the GEMM tiling page."
            }
        }
    })
}

/// The layer (or block) as a dataflow diagram ([`Dataflow`]), at layer and block
/// level: every box links to its operator's zoom level. `flash_href` is the page with
/// FlashAttention toggled.
pub(super) fn dataflow(
    view: &NodeView<'_>,
    clock: &'static str,
    flash: bool,
    href: &dyn Fn(&str) -> String,
    flash_href: &str,
) -> Markup {
    let Some(flow) = Dataflow::of_node(view, clock) else { return html! {} };
    let svg = flow.svg(Some(href));
    let drawn = match view.detail {
        llm_ledger_core::zoom::NodeDetail::Layer { focus: Some(b), .. } => {
            format!("{}.{}", view.path, llm_ledger_core::zoom::block_name(b))
        }
        _ => view.path.clone(),
    };
    html! {
        figure.plot.flow.zoomto #dataflow data-flash=(if flash { "on" } else { "off" }) aria-labelledby="dataflow-h" {
            figcaption {
                strong #dataflow-h { (drawn) " as a dataflow" } ": each box is an operator, as wide as its " (clock) " time and "
                span.key.memory { "memory-" } " or " span.key.compute { "compute-bound" }
                "; each arrow a tensor with the bytes it carries (what the operator above writes, as the ledger counts it). "
                "Click a box to zoom into it. "
                @if flash {
                    "FlashAttention is on: QKᵀ, the softmax and P·V are one kernel and the score matrix never reaches memory — "
                    a #flash-toggle href=(flash_href) { "turn it off" } " to see them split and the score matrix on the arrows."
                } @else {
                    "FlashAttention is off: the score matrix is written, read by the softmax, written again and read by P·V — "
                    a #flash-toggle href=(flash_href) { "turn it on" } " to fuse them into one box."
                }
            }
            (PreEscaped(svg))
        }
    }
}
