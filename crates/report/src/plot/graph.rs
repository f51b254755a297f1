//! The whole network as a graph (LLM-Viewer's view): the step's operators in execution order on the
//! GPU shown — the embedding, the layer stack, the final norm and the LM head (and, in a parallel
//! deployment, their collectives and a pipeline stage's send and wait) — with each run of
//! identical neighbouring layers one part, `layer.0 … layer.31 × 32`, whose inside is one layer's
//! dataflow ([`super::Dataflow`]). Everything comes from the zoom tree ([`ZoomTree`]): its times
//! are the ledger's, and every part's path is a zoom path.
//!
//! Each part is drawn as one bar whose width is its time (all the layers of a run together) on
//! one scale for the step, coloured by what bounds it (a run: the bound of most of its time).

use super::dataflow::{bound_colour, Dataflow, FlowBox};
use super::svg::{esc, FG};
use crate::human;
use llm_ledger_core::cost::Cost;
use llm_ledger_core::kinds::Block;
use llm_ledger_core::roofline::Bound;
use llm_ledger_core::zoom::{op_path, LayerDetail, OpNode};
use llm_ledger_core::ZoomTree;
use std::fmt::Write;

/// Width of a part's drawing (user units).
pub const WIDTH: f64 = 400.0;
/// The slowest part's bar.
pub const MAX_BAR_W: f64 = 390.0;
/// The narrowest bar.
pub const MIN_BAR_W: f64 = 4.0;
const BAR_H: f64 = 16.0;
const FONT: f64 = 12.0;
/// The label's line above the bar.
const LABEL_H: f64 = 16.0;

/// What a part is.
#[derive(Debug, Clone, PartialEq)]
pub enum PartKind {
    /// An operator outside the layers (embedding, final norm, LM head, a collective).
    Op,
    /// `count` identical neighbouring layers from `first` (the model's index), all of layer group
    /// `group` of the tree.
    Layers {
        /// Index of the run's first layer in the model.
        first: usize,
        /// Layers in the run.
        count: usize,
        /// The layers' group in [`ZoomTree::groups`].
        group: usize,
    },
}

/// One part of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphPart {
    /// What it is.
    pub kind: PartKind,
    /// Its name: the ledger's operator name, or `layer.0 … layer.31` (`layer.4` for one).
    pub name: String,
    /// Its zoom path (a run's: its first layer's).
    pub path: String,
    /// FLOPs and bytes (a run: all its layers).
    pub cost: Cost,
    /// Time, seconds (a run: all its layers).
    pub time_s: f64,
    /// What bounds it (a run: the bound of most of its operators' time).
    pub bound: Bound,
    /// Bar width, user units.
    pub width: f64,
}

impl GraphPart {
    /// Layers in the part (0 for an operator).
    pub fn layers(&self) -> usize {
        match self.kind {
            PartKind::Op => 0,
            PartKind::Layers { count, .. } => count,
        }
    }
}

/// The network: its parts in execution order.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkGraph {
    /// Model name.
    pub model: String,
    /// The clock the times come from ([`crate::zoom::clock_word`]).
    pub clock: &'static str,
    /// The parts, in execution order.
    pub parts: Vec<GraphPart>,
    /// The step's time (the sum of the parts'), seconds.
    pub step_time_s: f64,
}

/// Whether an operator (its ledger `name` and zoom `path`) matches a search: the text, trimmed and
/// lower-cased, is part of the name or of the path (`proj`, `up`, `mlp.down`, `layer.3.attn`).
pub fn matches(name: &str, path: &str, text: &str) -> bool {
    let t = text.trim().to_ascii_lowercase();
    !t.is_empty() && (name.to_ascii_lowercase().contains(&t) || path.to_ascii_lowercase().contains(&t))
}

/// The bound of most of a layer's operator time (memory or compute; link or wait where those
/// dominate).
fn layer_bound(d: &LayerDetail) -> Bound {
    let mut by: Vec<(Bound, f64)> = Vec::new();
    for o in &d.ops {
        let b = o.timing.bound();
        match by.iter_mut().find(|(x, _)| *x == b) {
            Some((_, t)) => *t += o.timing.time_s,
            None => by.push((b, o.timing.time_s)),
        }
    }
    by.into_iter().filter(|(b, _)| *b != Bound::Fused).max_by(|a, b| a.1.total_cmp(&b.1)).map_or(Bound::Memory, |x| x.0)
}

impl NetworkGraph {
    /// The graph of a zoom tree; `expand` gives every layer a part of its own instead of one per
    /// run of identical layers.
    pub fn of_tree(tree: &ZoomTree, clock: &'static str, expand: bool) -> NetworkGraph {
        let op = |n: &OpNode| GraphPart {
            kind: PartKind::Op,
            name: n.op.kind.name().to_string(),
            path: n.op.kind.name().to_string(),
            cost: n.cost,
            time_s: n.timing.time_s,
            bound: n.timing.bound(),
            width: 0.0,
        };
        let mut parts: Vec<GraphPart> =
            tree.rest.iter().filter(|n| n.op.kind.block() == Block::Embedding).map(op).collect();
        let mut j = 0;
        while j < tree.layer_group.len() {
            let g = tree.layer_group[j];
            let count = if expand { 1 } else { tree.layer_group[j..].iter().take_while(|x| **x == g).count() };
            let first = tree.first_layer + j;
            let d = &tree.groups[g];
            let name = if count == 1 {
                format!("layer.{first}")
            } else {
                format!("layer.{first} … layer.{}", first + count - 1)
            };
            parts.push(GraphPart {
                kind: PartKind::Layers { first, count, group: g },
                name,
                path: format!("layer.{first}"),
                cost: d.total.cost * count as f64,
                time_s: d.total.timing.time_s * count as f64,
                bound: layer_bound(d),
                width: 0.0,
            });
            j += count;
        }
        parts.extend(tree.rest.iter().filter(|n| n.op.kind.block() != Block::Embedding).map(op));
        let widest = parts.iter().map(|p| p.time_s).fold(0.0, f64::max);
        let scale = if widest > 0.0 { MAX_BAR_W / widest } else { 0.0 };
        for p in &mut parts {
            p.width = (p.time_s * scale).max(MIN_BAR_W);
        }
        let step_time_s = parts.iter().map(|p| p.time_s).sum();
        NetworkGraph { model: tree.model.clone(), clock, parts, step_time_s }
    }

    /// The dataflow inside a run of layers (its first layer's: the others are the same), or
    /// `None` for an operator.
    pub fn dataflow(&self, tree: &ZoomTree, part: &GraphPart) -> Option<Dataflow> {
        match part.kind {
            PartKind::Op => None,
            PartKind::Layers { first, group, .. } => {
                Some(Dataflow::of_layer(&tree.groups[group], first, None, self.clock))
            }
        }
    }

    /// The operators of a part that match a search (for a run: its first layer's, by path).
    pub fn hits(&self, tree: &ZoomTree, part: &GraphPart, text: &str) -> Vec<String> {
        match part.kind {
            PartKind::Op => {
                if matches(&part.name, &part.path, text) {
                    vec![part.path.clone()]
                } else {
                    Vec::new()
                }
            }
            PartKind::Layers { first, group, .. } => tree.groups[group]
                .ops
                .iter()
                .filter(|o| matches(o.op.kind.name(), &op_path(first, o), text))
                .map(|o| op_path(first, o))
                .collect(),
        }
    }

    /// A dataflow's boxes that match a search.
    pub fn box_matches(b: &FlowBox, text: &str) -> bool {
        matches(&b.name, &b.path, text)
    }

    /// The hover text of a part.
    pub fn tip(&self, p: &GraphPart) -> String {
        let share = self.share(p);
        let what = match p.kind {
            PartKind::Op => format!("{} ({})", p.name, p.path),
            PartKind::Layers { count: 1, .. } => p.name.clone(),
            PartKind::Layers { count, .. } => format!("{}: {} identical layers", p.name, count),
        };
        let each = match p.kind {
            PartKind::Layers { count, .. } if count > 1 => {
                format!(" ({} each)", human::seconds(p.time_s / count as f64))
            }
            _ => String::new(),
        };
        format!(
            "{what}\n{} time {}{each} · {} of the step\nFLOPs {} · bytes {}\n{}-bound",
            self.clock,
            human::seconds(p.time_s),
            human::percent(share),
            human::flops(p.cost.flops),
            human::bytes(p.cost.bytes()),
            p.bound.name()
        )
    }

    /// One part as a bar (an inline `<svg>`) under its label (name and time), linked to `href`
    /// when given; `marked`: a search's hit. The bar is a mark with its numbers as its `<title>`.
    pub fn part_svg(&self, p: &GraphPart, href: Option<&str>, marked: bool) -> String {
        let h = LABEL_H + BAR_H + 4.0;
        let mut s = String::new();
        let label = match p.kind {
            PartKind::Layers { count, .. } if count > 1 => {
                format!("{} × {count} · {} · {}", p.name, human::seconds(p.time_s), human::percent(self.share(p)))
            }
            _ => format!("{} · {} · {}", p.name, human::seconds(p.time_s), human::percent(self.share(p))),
        };
        let _ = write!(
            s,
            "<svg class=\"plot graph-part\" role=\"group\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {h:.0}\" font-family=\"sans-serif\">",
            esc(&label)
        );
        let _ = write!(
            s,
            "<text x=\"2\" y=\"{:.1}\" font-size=\"{FONT}\" fill=\"{FG}\" pointer-events=\"none\">{}</text>",
            LABEL_H - 4.0,
            esc(&label)
        );
        if let Some(u) = href {
            let _ = write!(s, "<a class=\"mark-link\" href=\"{}\" data-path=\"{}\">", esc(u), esc(&p.path));
        }
        let _ = write!(
            s,
            "<g class=\"graph-op {}{}\" data-path=\"{}\" data-name=\"{}\" data-time-s=\"{}\"><title>{}</title><rect x=\"2\" y=\"{LABEL_H}\" width=\"{:.1}\" height=\"{BAR_H}\" rx=\"3\" fill=\"{}\"/></g>",
            p.bound.name(),
            if marked { " match" } else { "" },
            esc(&p.path),
            esc(&p.name),
            p.time_s,
            esc(&self.tip(p)),
            p.width,
            bound_colour(p.bound)
        );
        if href.is_some() {
            s.push_str("</a>");
        }
        s.push_str("</svg>");
        s.replace(&format!("\"{FG}\""), "\"currentColor\"")
    }

    /// A part's share of the step.
    fn share(&self, p: &GraphPart) -> f64 {
        if self.step_time_s > 0.0 {
            p.time_s / self.step_time_s
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_ledger_core::testing::scenario;

    #[test]
    fn identical_layers_are_one_part_and_the_parts_add_up_to_the_step() {
        let tree = ZoomTree::build(&scenario(&[("batch", "8")]));
        let g = NetworkGraph::of_tree(&tree, "expected", false);
        let names: Vec<&str> = g.parts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["embedding", "layer.0 … layer.31", "final_norm", "lm_head"]);
        assert_eq!(g.parts[1].layers(), 32);
        let step = tree.step.step.timing.time_s;
        assert!((g.step_time_s - step).abs() <= 1e-12 * step, "{} {step}", g.step_time_s);
        let widest = g.parts.iter().map(|p| p.width).fold(0.0, f64::max);
        assert_eq!(widest, MAX_BAR_W);
        let expanded = NetworkGraph::of_tree(&tree, "expected", true);
        assert_eq!(expanded.parts.len(), 32 + 3);
        // Hits: by name or path, in the run's first layer.
        assert_eq!(g.hits(&tree, &g.parts[1], "UP_"), ["layer.0.mlp.up"]);
        assert_eq!(g.hits(&tree, &g.parts[3], "head"), ["lm_head"]);
        assert!(g.hits(&tree, &g.parts[1], " ").is_empty());
        let svg = g.part_svg(&g.parts[3], Some("/powers-of-ten?at=lm_head"), true);
        let m = crate::plot::marks(&svg);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].href.as_deref(), Some("/powers-of-ten?at=lm_head"));
        assert!(m[0].class.ends_with(" match"), "{}", m[0].class);
    }

    #[test]
    fn alternating_and_mixed_layers_make_runs() {
        let tree = ZoomTree::build(&scenario(&[("model", "deepseek-v3")]));
        let g = NetworkGraph::of_tree(&tree, "expected", false);
        let runs: Vec<usize> = g.parts.iter().map(GraphPart::layers).filter(|n| *n > 0).collect();
        assert_eq!(runs, [3, 58], "three dense layers, then the MoE ones");
    }
}
