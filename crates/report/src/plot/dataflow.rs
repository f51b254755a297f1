//! One decoder layer as a dataflow diagram: the operators as boxes whose width
//! is their time (the same expected time the ledger and the zoom use), coloured by what bounds
//! them; the activation tensors as arrows labelled with their bytes.
//!
//! Everything comes from the zoom tree's [`LayerDetail`] (the ledger's operators, in execution
//! order): nothing is recomputed here. An arrow's bytes are the bytes its source operators write
//! ([`Cost::activation_written_bytes`], the part of the ledger's activation bytes that is their
//! output), so with FlashAttention off the arrows out of `attn_scores` and `softmax` carry the
//! score matrix exactly as the ledger counts it; with it on the softmax runs inside the attention
//! kernel ([`llm_ledger_core::ops::Op::fused`]) and is drawn inside the attention box.
//!
//! **Where an operator's input comes from** is a property of its kind, not of a model:
//!
//! * the layer's norms read the residual stream (the layer input, or the last residual add's
//!   output);
//! * the projections that open a block (Q/K/V, MLA's down-projections, the router, gate/up of the
//!   MLP, the experts and the shared experts) read the latest norm's output — operators of this
//!   kind that follow one another with the same input run side by side in one row (Q ‖ K ‖ V,
//!   gate ‖ up); the routed experts also take the router's output;
//! * a residual add reads the stream and the block outputs (output projection, down projection,
//!   the experts' combine, the shared experts' down projection) since the previous add (one in a
//!   standard layer; attention's and the MLP's in a parallel-attention layer; the routed and the
//!   shared experts' in an MoE layer);
//! * every other operator reads the output of the latest operator that wrote an activation (the
//!   KV-cache append writes to the cache, not to an activation, so attention reads past it), and
//!   any branch of its block that nothing has read yet (MLA's query path joins its KV path at
//!   RoPE; a norm reads one tensor and joins nothing).
//!
//! Layout: vertical (a phone's screen is tall), a `viewBox` 400 units wide; the widest row spans
//! [`MAX_BOX_W`] and every box is `time × scale` wide with one scale for the whole layer (at least
//! [`MIN_BOX_W`], so the smallest stays clickable). Arrows between neighbouring rows run down the
//! left; an arrow that skips rows (the residual stream, a block's input read again further down)
//! runs down a lane on the right.

use super::svg::{esc, text_width, FG};
use crate::human;
use llm_ledger_core::cost::Cost;
use llm_ledger_core::kinds::{Block, OpKind, Reads};
use llm_ledger_core::roofline::Bound;
use llm_ledger_core::zoom::{op_path, LayerDetail, NodeDetail, NodeView, OpNode};
use std::fmt::Write;

/// Width of the drawing (user units).
pub const WIDTH: f64 = 400.0;
/// The widest row's width.
pub const MAX_BOX_W: f64 = 250.0;
/// The narrowest box.
pub const MIN_BOX_W: f64 = 22.0;
const X0: f64 = 8.0;
const BOX_H: f64 = 24.0;
const GAP: f64 = 28.0;
const TOP: f64 = 34.0;
const FONT: f64 = 12.0;
const SMALL: f64 = 11.0;
const LANE_W: f64 = 14.0;

/// Colour of a box: memory-bound blue, compute-bound orange (the explorer's picture and the
/// roofline's bf16/fp8 mid-tones), link- or wait-bound grey.
pub fn bound_colour(b: Bound) -> &'static str {
    match b {
        Bound::Memory => "#3B82F6",
        Bound::Compute => "#E8710A",
        _ => "#8C959F",
    }
}

/// One box: one operator, or one kernel with the operators that run inside it (FlashAttention's
/// softmax inside the attention kernel).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowBox {
    /// The operators' names, `+` between fused ones (`attention + softmax`).
    pub name: String,
    /// The zoom path of the (first) operator: `layer.0.attn.q`.
    pub path: String,
    /// The operators' kinds.
    pub kinds: Vec<OpKind>,
    /// FLOPs and bytes, summed over the operators (the ledger's).
    pub cost: Cost,
    /// Time, seconds (the zoom tree's timing, summed).
    pub time_s: f64,
    /// What bounds the (first) operator.
    pub bound: Bound,
    /// Width, user units.
    pub width: f64,
}

/// A row of boxes that read the same input and run one after another without depending on each
/// other (Q ‖ K ‖ V), or one box.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowRow {
    /// The boxes, left to right.
    pub boxes: Vec<FlowBox>,
    /// The block the row belongs to.
    pub block: Block,
}

impl FlowRow {
    /// Activation bytes the row's operators write (the tensor its outgoing arrows carry).
    pub fn written_bytes(&self) -> f64 {
        self.boxes.iter().map(|b| b.cost.activation_written_bytes).sum()
    }

    /// Time of the row's operators, seconds.
    pub fn time_s(&self) -> f64 {
        self.boxes.iter().map(|b| b.time_s).sum()
    }

    fn names(&self) -> String {
        self.boxes.iter().map(|b| b.name.as_str()).collect::<Vec<_>>().join(" ‖ ")
    }

    /// Names, time, and the KV cache it reads or appends to.
    fn label(&self) -> String {
        let mut l = format!("{} · {}", self.names(), human::seconds(self.time_s()));
        let kv_read: f64 = self.boxes.iter().map(|b| b.cost.kv_read_bytes).sum();
        let kv_write: f64 = self.boxes.iter().map(|b| b.cost.kv_write_bytes).sum();
        if kv_read > 0.0 {
            let _ = write!(l, " · reads KV {}", human::bytes(kv_read));
        }
        if kv_write > 0.0 {
            let _ = write!(l, " · KV +{}", human::bytes(kv_write));
        }
        l
    }
}

/// Where an arrow starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The layer's input (the residual stream entering the layer).
    Input,
    /// A row's output.
    Row(usize),
}

/// Where an arrow ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A row.
    Row(usize),
    /// The layer's output.
    Output,
}

/// One tensor between operators.
#[derive(Debug, Clone, PartialEq)]
pub struct Arrow {
    /// Its source.
    pub from: Source,
    /// Its destination.
    pub to: Target,
    /// Bytes: what the source row writes ([`FlowRow::written_bytes`]); for the layer input, the
    /// residual stream's size (what a residual add of the layer writes); out of communication
    /// between GPUs (a parallel deployment's all-reduce), the tensor it received.
    pub bytes: f64,
    /// What the tensor is, where the kind of its source says (`score matrix`).
    pub what: Option<&'static str>,
}

/// A layer's dataflow: rows of boxes and the arrows between them.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataflow {
    /// `layer.0`.
    pub layer: String,
    /// The clock the times come from, as the labels name it (`expected`, `roofline`:
    /// [`crate::zoom::clock_word`]).
    pub clock: &'static str,
    /// Rows, top to bottom (execution order).
    pub rows: Vec<FlowRow>,
    /// Arrows.
    pub arrows: Vec<Arrow>,
}

/// The name of what the first of `kinds` writes, where it has one
/// ([`llm_ledger_core::kinds::KindFacts::writes`]).
fn what(kinds: &[OpKind]) -> Option<&'static str> {
    kinds.first().and_then(|k| k.facts().writes)
}

impl Dataflow {
    /// The dataflow of layer `index` of a zoom tree (`detail`: its [`LayerDetail`]), or of one of
    /// its blocks (`only`).
    pub fn of_layer(detail: &LayerDetail, index: usize, only: Option<Block>, clock: &'static str) -> Dataflow {
        let ops: Vec<&OpNode> = detail.ops.iter().filter(|o| only.is_none_or(|b| o.op.kind.block() == b)).collect();
        let mut rows: Vec<FlowRow> = Vec::new();
        let mut row_reads: Vec<Reads> = Vec::new();
        for o in ops {
            let kind = o.op.kind;
            let path = op_path(index, o);
            if o.op.fused {
                if let Some(b) = rows.last_mut().and_then(|r| r.boxes.last_mut()) {
                    b.name = format!("{} + {}", b.name, kind.name());
                    b.kinds.push(kind);
                    b.cost += o.cost;
                    b.time_s += o.timing.time_s;
                    continue;
                }
            }
            let fb = FlowBox {
                name: kind.name().to_string(),
                path,
                kinds: vec![kind],
                cost: o.cost,
                time_s: o.timing.time_s,
                bound: o.timing.bound(),
                width: 0.0,
            };
            let r = kind.facts().reads;
            let sibling = matches!(r, Reads::BlockInput | Reads::Experts)
                && row_reads.last() == Some(&r)
                && rows.last().is_some_and(|last| {
                    last.block == kind.block()
                        && last.boxes.iter().all(|b| input_bytes(b) == input_bytes(&fb) && b.kinds[0] != OpKind::Router)
                });
            if sibling {
                rows.last_mut().expect("checked").boxes.push(fb);
            } else {
                rows.push(FlowRow { boxes: vec![fb], block: kind.block() });
                row_reads.push(r);
            }
        }
        let arrows = wire(&rows, &row_reads);
        let mut flow = Dataflow { layer: format!("layer.{index}"), clock, rows, arrows };
        flow.size_boxes();
        flow
    }

    /// The dataflow of a zoom node: a layer (`layer.N`), or one of its blocks where the path
    /// named one (`layer.N.attn`, `layer.N.mlp`); `None` at any other level (the CLI's `zoom
    /// --plot` and the explorer's Powers of ten both ask here).
    pub fn of_node(view: &NodeView<'_>, clock: &'static str) -> Option<Dataflow> {
        match view.detail {
            NodeDetail::Layer { index, detail, focus } => Some(Dataflow::of_layer(detail, index, focus, clock)),
            _ => None,
        }
    }

    /// Box widths: one scale for the layer, the slowest row [`MAX_BOX_W`] wide.
    fn size_boxes(&mut self) {
        let widest = self.rows.iter().map(FlowRow::time_s).fold(0.0, f64::max);
        let scale = if widest > 0.0 { MAX_BOX_W / widest } else { 0.0 };
        for r in &mut self.rows {
            for b in &mut r.boxes {
                b.width = (b.time_s * scale).max(MIN_BOX_W);
            }
        }
    }

    /// The box drawn for an operator's zoom path.
    pub fn find(&self, path: &str) -> Option<&FlowBox> {
        self.rows.iter().flat_map(|r| &r.boxes).find(|b| b.path == path)
    }

    /// The arrows leaving `row`.
    pub fn arrows_from(&self, row: usize) -> impl Iterator<Item = &Arrow> {
        self.arrows.iter().filter(move |a| a.from == Source::Row(row))
    }
}

/// A row whose output is its block's output, added to the residual stream: the attention's
/// output projection, the MLP's down projection, the routed experts' combine and the shared
/// experts' down projection.
fn is_block_output(row: &FlowRow) -> bool {
    use OpKind::*;
    row.boxes.iter().any(|b| matches!(b.kinds[0], OProj | DownProj | ExpertCombine | SharedDown | Mlp))
}

/// A GEMM's input bytes (siblings read the same input); elementwise operators have none here.
fn input_bytes(b: &FlowBox) -> f64 {
    b.cost.activation_read_bytes()
}

/// The arrows of the rows, by what each row's kind reads (module docs).
fn wire(rows: &[FlowRow], row_reads: &[Reads]) -> Vec<Arrow> {
    let mut stream = Source::Input;
    let mut block_input: Option<Source> = None;
    let mut router: Option<usize> = None;
    let mut writer: Option<usize> = None;
    let mut consumed = vec![false; rows.len()];
    let mut since_residual = 0usize;
    let mut out = Vec::new();
    let stream_bytes = rows
        .iter()
        .zip(row_reads)
        .find(|(_, r)| **r == Reads::Residual)
        .map(|(row, _)| row.written_bytes())
        .or_else(|| rows.first().map(|r| r.boxes.iter().map(input_bytes).sum()))
        .unwrap_or(0.0);
    // What each row's outgoing arrows carry: what it writes; for communication between GPUs
    // (an all-reduce of a parallel deployment: link bytes, no HBM activation) the tensor it
    // received, summed across the GPUs.
    let mut carries = vec![0.0; rows.len()];
    let mut edge = |from: Source, to: usize, consumed: &mut Vec<bool>, carries: &mut Vec<f64>| {
        let bytes = match from {
            Source::Input => stream_bytes,
            Source::Row(i) => carries[i],
        };
        if rows[to].boxes.iter().all(|b| b.kinds.iter().all(|k| k.is_comm())) {
            carries[to] = carries[to].max(bytes);
        }
        if let Source::Row(i) = from {
            consumed[i] = true;
        }
        let what = match from {
            Source::Row(i) => what(&rows[i].boxes[0].kinds),
            Source::Input => Some("input"),
        };
        out.push(Arrow { from, to: Target::Row(to), bytes, what });
    };
    for (i, (row, r)) in rows.iter().zip(row_reads).enumerate() {
        carries[i] = row.written_bytes();
        let previous = writer.map_or(stream, Source::Row);
        match r {
            Reads::Stream => edge(stream, i, &mut consumed, &mut carries),
            Reads::BlockInput => edge(block_input.unwrap_or(stream), i, &mut consumed, &mut carries),
            Reads::Experts => {
                edge(block_input.unwrap_or(stream), i, &mut consumed, &mut carries);
                if let Some(k) = router {
                    edge(Source::Row(k), i, &mut consumed, &mut carries);
                }
            }
            Reads::Residual => {
                edge(stream, i, &mut consumed, &mut carries);
                let outputs: Vec<usize> = (since_residual..i)
                    .filter(|k| !consumed[*k] && rows[*k].written_bytes() > 0.0 && is_block_output(&rows[*k]))
                    .collect();
                if outputs.is_empty() {
                    edge(previous, i, &mut consumed, &mut carries);
                }
                for k in outputs {
                    edge(Source::Row(k), i, &mut consumed, &mut carries);
                }
            }
            Reads::Previous => {
                edge(previous, i, &mut consumed, &mut carries);
                // A branch of the block left unread (MLA's query path, beside its KV path) joins
                // here, unless this is a norm (which normalises one tensor).
                let first = row.boxes[0].kinds[0];
                let joins = !matches!(first, OpKind::QANorm | OpKind::KvANorm | OpKind::QkNorm);
                let dangling: Vec<usize> = (since_residual..i)
                    .filter(|k| {
                        joins
                            && Source::Row(*k) != previous
                            && !consumed[*k]
                            && rows[*k].written_bytes() > 0.0
                            && rows[*k].block == row.block
                            && row_reads[*k] != Reads::Residual
                            && !is_block_output(&rows[*k])
                    })
                    .collect();
                for k in dangling {
                    edge(Source::Row(k), i, &mut consumed, &mut carries);
                }
            }
        }
        let first = row.boxes[0].kinds[0];
        if matches!(first, OpKind::AttnNorm | OpKind::MlpNorm) {
            block_input = Some(Source::Row(i));
        }
        if first == OpKind::Router {
            router = Some(i);
        }
        if *r == Reads::Residual {
            stream = Source::Row(i);
            since_residual = i + 1;
        }
        if row.written_bytes() > 0.0 || row.boxes.iter().all(|b| b.cost.activation_bytes == 0.0) {
            writer = Some(i);
        }
    }
    let last = match stream {
        Source::Row(_) => stream,
        Source::Input => writer.map_or(Source::Input, Source::Row),
    };
    if !rows.is_empty() {
        let what = match last {
            Source::Row(i) => what(&rows[i].boxes[0].kinds),
            Source::Input => None,
        };
        let bytes = match last {
            Source::Input => stream_bytes,
            Source::Row(i) => carries[i],
        };
        out.push(Arrow { from: last, to: Target::Output, bytes, what });
    }
    out
}

/// Geometry of the drawing.
struct Frame {
    lanes: usize,
}

impl Frame {
    fn row_y(&self, i: usize) -> f64 {
        TOP + i as f64 * (BOX_H + GAP)
    }
    fn lane_x(&self, lane: usize) -> f64 {
        WIDTH - 6.0 - lane as f64 * LANE_W
    }
    /// Where row labels must end (left of the lanes).
    fn text_end(&self) -> f64 {
        WIDTH - 10.0 - self.lanes as f64 * LANE_W
    }
}

impl Dataflow {
    /// The diagram as SVG (inline; [`super::standalone`] makes a file of it). `href(path)` is the
    /// link of an operator's zoom level (`None`: no links, as in a file).
    pub fn svg(&self, href: Option<&dyn Fn(&str) -> String>) -> String {
        self.svg_marked(href, &|_| false)
    }

    /// [`Dataflow::svg`] with the boxes `marked` picks drawn as found (class `match`: a search's
    /// hits on the explorer's network graph).
    pub fn svg_marked(&self, href: Option<&dyn Fn(&str) -> String>, marked: &dyn Fn(&FlowBox) -> bool) -> String {
        // Lanes for the arrows that skip rows, greedily (an arrow takes the first lane free over
        // its span).
        let span = |a: &Arrow| -> (f64, f64) {
            let from = match a.from {
                Source::Input => -1.0,
                Source::Row(i) => i as f64,
            };
            let to = match a.to {
                Target::Row(j) => j as f64,
                Target::Output => self.rows.len() as f64,
            };
            (from, to)
        };
        let mut lanes: Vec<Vec<(f64, f64)>> = Vec::new();
        let mut lane_of = vec![None; self.arrows.len()];
        for (n, a) in self.arrows.iter().enumerate() {
            let (f, t) = span(a);
            if t - f <= 1.0 {
                continue;
            }
            let free = lanes.iter().position(|l| l.iter().all(|(a0, a1)| t <= *a0 || f >= *a1));
            let k = free.unwrap_or_else(|| {
                lanes.push(Vec::new());
                lanes.len() - 1
            });
            lanes[k].push((f, t));
            lane_of[n] = Some(k);
        }
        let frame = Frame { lanes: lanes.len() };
        let height = frame.row_y(self.rows.len()) + 10.0;
        let mut s = String::new();
        let _ = write!(
            s,
            "<svg class=\"plot dataflow\" role=\"group\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height:.0}\" font-family=\"sans-serif\">",
            esc(&format!(
                "{} as a dataflow: operators as boxes sized by {} time, tensors as arrows labelled with their bytes",
                self.layer, self.clock
            ))
        );
        s.push_str(
            "<defs><marker id=\"flow-head\" viewBox=\"0 0 8 8\" refX=\"7\" refY=\"4\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"#000000\"/></marker></defs>",
        );
        let _ = write!(
            s,
            "<text x=\"{X0}\" y=\"14\" font-size=\"{SMALL}\" fill=\"{FG}\">{}: boxes sized by {} time, arrows labelled with bytes</text>",
            esc(&self.layer),
            self.clock
        );
        for (n, a) in self.arrows.iter().enumerate() {
            self.draw_arrow(&mut s, a, lane_of[n].map(|k| frame.lane_x(k)), &frame);
        }
        for (i, row) in self.rows.iter().enumerate() {
            self.draw_row(&mut s, i, row, &frame, href, marked);
        }
        s.push_str("</svg>");
        s.replace(&format!("\"{FG}\""), "\"currentColor\"")
    }

    fn draw_arrow(&self, s: &mut String, a: &Arrow, lane: Option<f64>, f: &Frame) {
        let bottom = |i: usize| f.row_y(i) + BOX_H;
        let y_from = match a.from {
            Source::Input => TOP - 14.0,
            Source::Row(i) => bottom(i),
        };
        let y_to = match a.to {
            Target::Row(j) => f.row_y(j),
            Target::Output => f.row_y(self.rows.len()) - GAP + 20.0,
        };
        let label = match a.what {
            Some(w) => format!("{w} {}", human::bytes(a.bytes)),
            None => human::bytes(a.bytes),
        };
        let from = match a.from {
            Source::Input => "input".to_string(),
            Source::Row(i) => self.rows[i].boxes[0].path.clone(),
        };
        let to = match a.to {
            Target::Row(j) => self.rows[j].boxes[0].path.clone(),
            Target::Output => "output".to_string(),
        };
        let _ = write!(
            s,
            "<g class=\"flow-arrow{}\" data-bytes=\"{}\" data-from=\"{}\" data-to=\"{}\"><title>{}</title>",
            if lane.is_some() { " skip" } else { "" },
            a.bytes,
            esc(&from),
            esc(&to),
            esc(&format!("{from} → {to}: {label}"))
        );
        match lane {
            None => {
                let x = X0 + 10.0;
                let _ = write!(
                    s,
                    "<line x1=\"{x}\" y1=\"{y_from:.1}\" x2=\"{x}\" y2=\"{:.1}\" stroke=\"{FG}\" stroke-width=\"1.2\" marker-end=\"url(#flow-head)\"/>",
                    y_to - 1.0
                );
                let _ = write!(
                    s,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"{SMALL}\" fill=\"{FG}\">{}</text>",
                    x + 7.0,
                    (y_from + y_to) / 2.0 + SMALL * 0.35,
                    esc(&label)
                );
            }
            Some(x) => {
                // Out of the source row's right end, down the lane, into the destination's.
                let (ya, yb) = (y_from - BOX_H / 2.0, y_to + BOX_H / 2.0);
                let (ya, xa) = match a.from {
                    Source::Input => (y_from, X0 + 10.0),
                    Source::Row(i) => (ya, self.row_end(i, f) + 3.0),
                };
                let (yb, xb) = match a.to {
                    Target::Output => (y_to, X0 + 10.0),
                    Target::Row(j) => (yb, self.row_end(j, f) + 3.0),
                };
                let _ = write!(
                    s,
                    "<path d=\"M{xa:.1},{ya:.1} H{x:.1} V{yb:.1} H{xb:.1}\" fill=\"none\" stroke=\"{FG}\" stroke-width=\"1\" stroke-opacity=\"0.7\" stroke-dasharray=\"4 2\" marker-end=\"url(#flow-head)\"/>"
                );
                let mid = (ya + yb) / 2.0;
                let short = human::bytes(a.bytes);
                let label = if text_width(&label, SMALL) <= (yb - ya).abs() { label } else { short };
                let _ = write!(
                    s,
                    "<text x=\"{:.1}\" y=\"{mid:.1}\" font-size=\"{SMALL}\" fill=\"{FG}\" text-anchor=\"middle\" transform=\"rotate(-90 {:.1} {mid:.1})\">{}</text>",
                    x - 3.0,
                    x - 3.0,
                    esc(&label)
                );
            }
        }
        s.push_str("</g>");
    }

    /// The row's label, where it starts and whether it sits inside the boxes: names, time and KV
    /// inside the boxes where they are wide enough, else after them; shorter forms where the
    /// room is short (the numbers are on hover).
    fn row_text(&self, row: &FlowRow, f: &Frame) -> (String, f64, bool) {
        let end = X0 + row.boxes.iter().map(|b| b.width).sum::<f64>();
        let full = row.label();
        let timed = format!("{} · {}", row.names(), human::seconds(row.time_s()));
        let names = row.names();
        let room_inside = end - X0 - 10.0;
        let room_after = f.text_end() - (end + 5.0);
        let fits = |t: &str, room: f64| text_width(t, FONT) <= room;
        let (text, inside) = [(&full, true), (&full, false), (&timed, true), (&timed, false), (&names, true)]
            .into_iter()
            .find(|(t, inside)| fits(t, if *inside { room_inside } else { room_after }))
            .unwrap_or((&names, false));
        let tx = if inside { X0 + 6.0 } else { end + 5.0 };
        (text.clone(), tx, inside)
    }

    /// Where a row's drawing (boxes and label) ends on the right.
    fn row_end(&self, i: usize, f: &Frame) -> f64 {
        let row = &self.rows[i];
        let end = X0 + row.boxes.iter().map(|b| b.width).sum::<f64>();
        let (text, tx, inside) = self.row_text(row, f);
        if inside {
            end
        } else {
            tx + text_width(&text, FONT)
        }
    }

    fn draw_row(
        &self,
        s: &mut String,
        i: usize,
        row: &FlowRow,
        f: &Frame,
        href: Option<&dyn Fn(&str) -> String>,
        marked: &dyn Fn(&FlowBox) -> bool,
    ) {
        let y = f.row_y(i);
        let mut x = X0;
        for b in &row.boxes {
            let tip = tip(b, self.clock);
            let open = match href {
                Some(h) => format!("<a href=\"{}\" data-path=\"{}\">", esc(&h(&b.path)), esc(&b.path)),
                None => String::new(),
            };
            let _ = write!(
                s,
                "{open}<g class=\"flow-op {}{}\" data-path=\"{}\" data-name=\"{}\" data-time-s=\"{}\" data-width=\"{:.3}\"><title>{}</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{BOX_H}\" rx=\"3\" fill=\"{}\"/></g>{}",
                b.bound.name(),
                if marked(b) { " match" } else { "" },
                esc(&b.path),
                esc(&b.name),
                b.time_s,
                b.width,
                esc(&tip),
                (b.width - 1.5).max(1.0),
                bound_colour(b.bound),
                if href.is_some() { "</a>" } else { "" }
            );
            x += b.width;
        }
        let (text, tx, inside) = self.row_text(row, f);
        let fill = if inside { "#FFFFFF" } else { FG };
        let _ = write!(
            s,
            "<text class=\"flow-label\" x=\"{tx:.1}\" y=\"{:.1}\" font-size=\"{FONT}\" fill=\"{fill}\" pointer-events=\"none\">{}</text>",
            y + BOX_H / 2.0 + FONT * 0.35,
            esc(&text)
        );
    }
}

fn tip(b: &FlowBox, clock: &str) -> String {
    let c = &b.cost;
    let mut t = format!(
        "{} ({})\n{clock} time {}\nFLOPs {}\nbytes {} (weights {}, KV {}, activations {}: reads {}, writes {})\nintensity {} FLOP/B\n{}-bound",
        b.name,
        b.path,
        human::seconds(b.time_s),
        human::flops(c.flops),
        human::bytes(c.bytes()),
        human::bytes(c.weight_bytes),
        human::bytes(c.kv_bytes()),
        human::bytes(c.activation_bytes),
        human::bytes(c.activation_read_bytes()),
        human::bytes(c.activation_written_bytes),
        human::intensity(c.intensity()),
        b.bound.name()
    );
    if c.kv_write_bytes > 0.0 {
        let _ = write!(t, "\nappends {} to the KV cache", human::bytes(c.kv_write_bytes));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_ledger_core::testing::scenario;
    use llm_ledger_core::ZoomTree;

    fn flow(pairs: &[(&str, &str)]) -> (ZoomTree, Dataflow) {
        let tree = ZoomTree::build(&scenario(pairs));
        let f = Dataflow::of_layer(tree.layer(0).expect("layer 0"), 0, None, "expected");
        (tree, f)
    }

    fn op(tree: &ZoomTree, kind: OpKind) -> &OpNode {
        tree.layer(0).unwrap().ops.iter().find(|o| o.op.kind == kind).unwrap_or_else(|| panic!("{kind:?}"))
    }

    fn row_of(f: &Dataflow, kind: OpKind) -> usize {
        f.rows
            .iter()
            .position(|r| r.boxes.iter().any(|b| b.kinds.contains(&kind)))
            .unwrap_or_else(|| panic!("{kind:?}"))
    }

    #[test]
    fn arrow_bytes_are_the_ledgers_written_activation_bytes() {
        let (tree, f) = flow(&[("batch", "8")]);
        let layer = tree.layer(0).unwrap();
        // Every arrow out of a row carries what the row's operators write, as the ledger counts it.
        for a in &f.arrows {
            if let Source::Row(i) = a.from {
                let kinds: Vec<OpKind> = f.rows[i].boxes.iter().flat_map(|b| b.kinds.clone()).collect();
                let ledger: f64 = layer
                    .ops
                    .iter()
                    .filter(|o| kinds.contains(&o.op.kind))
                    .map(|o| o.op.cost.activation_written_bytes)
                    .sum();
                assert_eq!(a.bytes, ledger, "{a:?}");
            }
        }
        // Along a second path: the norm reads x and writes y of the same size, so its output is
        // half its activation bytes; llama's hidden size 4096, batch 8 decode, bf16.
        let norm = op(&tree, OpKind::AttnNorm);
        let out = f.arrows_from(row_of(&f, OpKind::AttnNorm)).next().unwrap();
        assert_eq!(out.bytes, norm.op.cost.activation_bytes / 2.0);
        assert_eq!(out.bytes, 8.0 * 4096.0 * 2.0);
        // Q ‖ K ‖ V in one row, reading the norm's output.
        let qkv = &f.rows[row_of(&f, OpKind::QProj)];
        let names: Vec<&str> = qkv.boxes.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["q_proj", "k_proj", "v_proj"]);
        let gu = &f.rows[row_of(&f, OpKind::GateProj)];
        assert_eq!(gu.boxes.len(), 2, "gate ‖ up");
        // The residual stream skips the attention block into its add.
        let res = row_of(&f, OpKind::AttnResidual);
        assert!(f.arrows.iter().any(|a| a.from == Source::Input && a.to == Target::Row(res)));
        let o = row_of(&f, OpKind::OProj);
        assert!(f.arrows.iter().any(|a| a.from == Source::Row(o) && a.to == Target::Row(res)));
        assert!(f
            .arrows
            .iter()
            .any(|a| a.from == Source::Row(row_of(&f, OpKind::MlpResidual)) && a.to == Target::Output));
    }

    #[test]
    fn flash_attention_on_is_one_box_without_a_score_matrix() {
        let (tree, f) = flow(&[("batch", "4"), ("phase", "prefill"), ("ctx", "512")]);
        let attn: Vec<&FlowBox> =
            f.rows.iter().flat_map(|r| &r.boxes).filter(|b| b.kinds.contains(&OpKind::Attention)).collect();
        assert_eq!(attn.len(), 1);
        assert_eq!(attn[0].kinds, [OpKind::Attention, OpKind::Softmax], "the softmax runs inside the kernel");
        assert_eq!(
            attn[0].time_s,
            op(&tree, OpKind::Attention).timing.time_s + op(&tree, OpKind::Softmax).timing.time_s
        );
        assert!(f.find("layer.0.attn.softmax").is_none());
        assert!(f.arrows.iter().all(|a| a.what != Some("score matrix")));
    }

    #[test]
    fn flash_attention_off_splits_the_core_and_the_score_matrix_is_on_the_arrows() {
        let (tree, f) = flow(&[("batch", "4"), ("phase", "prefill"), ("ctx", "512"), ("flash", "off")]);
        let (s, m, v) = (row_of(&f, OpKind::AttnScores), row_of(&f, OpKind::Softmax), row_of(&f, OpKind::AttnValues));
        assert_eq!((m, v), (s + 1, s + 2), "three boxes in a row");
        assert!(f.rows.iter().flat_map(|r| &r.boxes).all(|b| !b.kinds.contains(&OpKind::Attention)));
        // The score matrix as the ledger counts it: the softmax reads it and writes it back.
        let scores = op(&tree, OpKind::Softmax).op.cost.activation_bytes / 2.0;
        // batch 4 × 32 heads × 512 × 512 causal pairs … whatever the ledger says, and non-zero.
        assert!(scores > 0.0);
        let a = f.arrows.iter().find(|a| a.from == Source::Row(s)).unwrap();
        assert_eq!((a.to, a.bytes, a.what), (Target::Row(m), scores, Some("score matrix")));
        assert_eq!(a.bytes, op(&tree, OpKind::AttnScores).op.cost.activation_written_bytes);
        let p = f.arrows.iter().find(|a| a.from == Source::Row(m)).unwrap();
        assert_eq!((p.to, p.bytes), (Target::Row(v), scores));
        let svg = f.svg(None);
        assert!(svg.contains(&format!("data-bytes=\"{scores}\"")), "{svg}");
        assert!(svg.contains(&format!("score matrix {}", human::bytes(scores))));
    }

    #[test]
    fn box_widths_are_ordered_like_times() {
        let (_, f) = flow(&[("batch", "64")]);
        let boxes: Vec<&FlowBox> = f.rows.iter().flat_map(|r| &r.boxes).collect();
        for a in &boxes {
            for b in &boxes {
                if a.time_s > b.time_s {
                    assert!(a.width >= b.width, "{} {} vs {} {}", a.name, a.width, b.name, b.width);
                    if b.width > MIN_BOX_W {
                        assert!(a.width > b.width);
                        assert!((a.width / b.width - a.time_s / b.time_s).abs() < 1e-9, "proportional");
                    }
                }
            }
        }
        let widest = f.rows.iter().map(|r| r.boxes.iter().map(|b| b.width).sum::<f64>()).fold(0.0, f64::max);
        assert!((widest - MAX_BOX_W).abs() < 1e-9);
    }

    #[test]
    fn moe_mla_and_parallel_layers_draw() {
        for model in ["deepseek-v3", "deepseek-v2-lite", "mixtral-8x7b", "qwen3-30b-a3b", "falcon-7b", "gpt2", "phi-4"]
        {
            for flash in ["on", "off"] {
                for phase in ["decode", "prefill"] {
                    let tree = ZoomTree::build(&scenario(&[("model", model), ("flash", flash), ("phase", phase)]));
                    for (i, g) in tree.layer_group.iter().enumerate().take(4) {
                        let f = Dataflow::of_layer(&tree.groups[*g], i, None, "expected");
                        let ops = tree.groups[*g].ops.len();
                        let drawn: usize = f.rows.iter().flat_map(|r| &r.boxes).map(|b| b.kinds.len()).sum();
                        assert_eq!(drawn, ops, "{model}: every operator in a box");
                        assert!(f.arrows.iter().all(|a| a.bytes.is_finite() && a.bytes >= 0.0));
                        let svg = f.svg(Some(&|p: &str| format!("?at={p}")));
                        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
                        for b in f.rows.iter().flat_map(|r| &r.boxes) {
                            assert!(tree.node(&b.path).is_ok(), "{model}: {} is a zoom path", b.path);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_block_is_its_part_of_the_layer() {
        let tree = ZoomTree::build(&scenario(&[("batch", "8")]));
        let mlp = Dataflow::of_node(&tree.node("layer.3.mlp").unwrap(), "expected").unwrap();
        assert!(mlp.rows.iter().all(|r| r.block == Block::Mlp));
        assert_eq!(mlp.rows[0].boxes[0].path, "layer.3.mlp.norm");
        assert!(Dataflow::of_node(&tree.node("model").unwrap(), "expected").is_none());
        assert!(Dataflow::of_node(&tree.node("layer.0.mlp.up").unwrap(), "expected").is_none());
    }

    #[test]
    fn moe_experts_read_the_block_input_and_the_router() {
        let (_, f) = flow(&[("model", "mixtral-8x7b"), ("batch", "16")]);
        let router = row_of(&f, OpKind::Router);
        let experts = row_of(&f, OpKind::ExpertGate);
        let norm = row_of(&f, OpKind::MlpNorm);
        assert!(f.arrows.iter().any(|a| a.from == Source::Row(router) && a.to == Target::Row(experts)));
        assert!(f.arrows.iter().any(|a| a.from == Source::Row(norm) && a.to == Target::Row(experts)));
        let combine = row_of(&f, OpKind::ExpertCombine);
        let res = row_of(&f, OpKind::MlpResidual);
        assert!(f.arrows.iter().any(|a| a.from == Source::Row(combine) && a.to == Target::Row(res)));
    }

    #[test]
    fn mla_query_path_joins_at_rope_and_only_block_outputs_reach_the_residual() {
        let (_, f) = flow(&[("model", "deepseek-v3")]);
        let (qb, rope) = (row_of(&f, OpKind::QBProj), row_of(&f, OpKind::Rope));
        assert!(f.arrows.iter().any(|a| a.from == Source::Row(qb) && a.to == Target::Row(rope)));
        let res = row_of(&f, OpKind::AttnResidual);
        let into: Vec<Source> = f.arrows.iter().filter(|a| a.to == Target::Row(res)).map(|a| a.from).collect();
        assert_eq!(into, [Source::Input, Source::Row(row_of(&f, OpKind::OProj))]);
    }

    #[test]
    fn an_all_reduce_passes_its_tensor_on() {
        let (_, f) = flow(&[("tp", "2"), ("batch", "8")]);
        let ar = f
            .rows
            .iter()
            .position(|r| r.boxes.iter().any(|b| b.kinds.contains(&OpKind::AllReduceAttn)))
            .expect("an all-reduce after attention");
        let into = f.arrows.iter().find(|a| a.to == Target::Row(ar)).unwrap();
        let out = f.arrows.iter().find(|a| a.from == Source::Row(ar)).unwrap();
        assert!(into.bytes > 0.0);
        assert_eq!(out.bytes, into.bytes, "the all-reduce's output is its input, summed over the GPUs");
    }

    #[test]
    fn a_parallel_layer_adds_attention_and_mlp_to_the_stream() {
        let (_, f) = flow(&[("model", "falcon-7b")]);
        let res = row_of(&f, OpKind::Residual);
        let o = row_of(&f, OpKind::OProj);
        let down = row_of(&f, OpKind::DownProj);
        for src in [Source::Input, Source::Row(o), Source::Row(down)] {
            assert!(f.arrows.iter().any(|a| a.from == src && a.to == Target::Row(res)), "{src:?} → residual");
        }
        // The MLP does not read attention's output.
        assert!(!f.arrows.iter().any(|a| a.from == Source::Row(o) && a.to == Target::Row(o + 1)));
    }
}
