//! A node of the tree as seen from a path: its children, its breadcrumb and the report of whether
//! (and why not) the children add up to it.

use super::{FlopsGap, LayerDetail, Level, NoTiles, OpNode, TileLevel, Totals};
use crate::cost::Cost;
use crate::ops::Block;
use serde::Serialize;

/// One child row of a node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChildView {
    /// Name (`layer.3`, `mlp`, `up`, `tiles`, `full tiles` …).
    pub name: String,
    /// Path to zoom into it (`None` for tile classes).
    pub path: Option<String>,
    /// The block an operator sits in (`attn`, `mlp` in a layer; `embedding`, `head` for the rest
    /// of the step); `None` for layers and tiles.
    pub block: Option<Block>,
    /// What a layer is made of, in words (`Gated DeltaNet + MLP`); `None` below the model level.
    pub kind: Option<String>,
    /// How many: 1 for structural children, tiles or blocks at tile level.
    pub count: f64,
    /// Useful FLOPs (what the level above counts).
    pub flops: f64,
    /// FLOPs executed (tiles: padded; otherwise = `flops`).
    pub executed_flops: f64,
    /// HBM bytes (tiles: as the tiles load and store them).
    pub bytes: f64,
    /// The cost by category, at exact levels.
    pub cost: Option<Cost>,
    /// Time by the scenario's clock (exact levels) or the tile model's (tiles), seconds; 0 for
    /// tile classes.
    pub time_s: f64,
    /// The roofline's time of the same work (exact levels; the tile model's time for tiles).
    pub roofline_s: f64,
}

impl ChildView {
    pub(super) fn exact(name: String, path: Option<String>, t: &Totals) -> Self {
        ChildView {
            name,
            path,
            block: None,
            kind: None,
            count: 1.0,
            flops: t.cost.flops,
            executed_flops: t.cost.flops,
            bytes: t.cost.bytes(),
            cost: Some(t.cost),
            time_s: t.timing.time_s,
            roofline_s: t.timing.roofline_s,
        }
    }

    pub(super) fn of_op(path: &str, n: &OpNode) -> Self {
        let name = path.rsplit('.').next().unwrap_or(path).to_string();
        ChildView { block: Some(n.op.kind.block()), ..Self::exact(name, Some(path.to_string()), &n.totals()) }
    }
}

/// Parent against the sum of its children.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AddUp {
    /// The parent's FLOPs.
    pub parent_flops: f64,
    /// Σ children's FLOPs (executed FLOPs at the tile level).
    pub children_flops: f64,
    /// The parent's bytes.
    pub parent_bytes: f64,
    /// Σ children's bytes.
    pub children_bytes: f64,
    /// Children − parent, FLOPs.
    pub flops_difference: f64,
    /// Children − parent, bytes.
    pub bytes_difference: f64,
    /// The children add up to the parent (within 1e−9 relative: the same numbers summed in
    /// another order; exactly at model and layer, which are built from their children).
    pub exact: bool,
    /// The node has no children (nothing to add up; the children fields repeat the parent).
    pub leaf: bool,
}

impl AddUp {
    /// A parent's FLOPs and bytes against its children's (an inexact comparison: the tile level
    /// against the operator above it).
    pub fn between(parent_flops: f64, parent_bytes: f64, children_flops: f64, children_bytes: f64) -> AddUp {
        AddUp {
            parent_flops,
            children_flops,
            parent_bytes,
            children_bytes,
            flops_difference: children_flops - parent_flops,
            bytes_difference: children_bytes - parent_bytes,
            exact: false,
            leaf: false,
        }
    }

    pub(super) fn of(parent: &Totals, children: &[ChildView]) -> AddUp {
        let (pf, pb) = (parent.cost.flops, parent.cost.bytes());
        let leaf = children.is_empty();
        let cf: f64 = if leaf { pf } else { children.iter().map(|c| c.executed_flops).sum() };
        // Exact levels add their children's costs field by field, as the parent was built.
        let costs: Option<Cost> = children.iter().map(|c| c.cost).sum();
        let cb: f64 = match costs {
            _ if leaf => pb,
            Some(c) => c.bytes(),
            None => children.iter().map(|c| c.bytes).sum(),
        };
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
        AddUp {
            parent_flops: pf,
            children_flops: cf,
            parent_bytes: pb,
            children_bytes: cb,
            flops_difference: cf - pf,
            bytes_difference: cb - pb,
            exact: close(pf, cf) && close(pb, cb),
            leaf,
        }
    }

    /// Children ÷ parent bytes (the reuse factor at the tile level).
    pub fn bytes_ratio(&self) -> f64 {
        if self.parent_bytes > 0.0 {
            self.children_bytes / self.parent_bytes
        } else {
            1.0
        }
    }

    /// Children ÷ parent FLOPs.
    pub fn flops_ratio(&self) -> f64 {
        if self.parent_flops > 0.0 {
            self.children_flops / self.parent_flops
        } else {
            1.0
        }
    }
}

/// What a node is, beyond its totals.
#[derive(Debug, Clone, Copy)]
pub enum NodeDetail<'t> {
    /// The model (the layer stack), with the FLOPs-per-token gap.
    Model(&'t FlopsGap),
    /// A layer.
    Layer {
        /// Its index.
        index: usize,
        /// Its (shared) detail.
        detail: &'t LayerDetail,
        /// The block the path named (`layer.0.mlp`), whose operators are marked.
        focus: Option<Block>,
    },
    /// An operator.
    Op(&'t OpNode),
    /// An operator's tiles.
    Tiles(&'t OpNode),
}

/// A node of the tree as seen from `path`: its totals, children, breadcrumb and add-up report.
#[derive(Debug, Clone)]
pub struct NodeView<'t> {
    /// Its path.
    pub path: String,
    /// Its level.
    pub level: Level,
    /// Its totals (at the tile level: executed FLOPs in `cost.flops`, tiled bytes in
    /// `cost.activation_bytes`, modelled time).
    pub totals: Totals,
    /// Its children.
    pub children: Vec<ChildView>,
    /// Parent against the children.
    pub addup: AddUp,
    /// Paths from the model down to this node.
    pub breadcrumb: Vec<String>,
    /// Level-specific detail.
    pub detail: NodeDetail<'t>,
}

impl<'t> NodeView<'t> {
    pub(super) fn new(
        path: String,
        level: Level,
        totals: Totals,
        children: Vec<ChildView>,
        detail: NodeDetail<'t>,
    ) -> Self {
        let addup = AddUp::of(&totals, &children);
        let breadcrumb = breadcrumb(&path);
        NodeView { path, level, totals, children, addup, breadcrumb, detail }
    }

    /// Why a leaf has no children (for messages).
    pub fn leaf_reason(&self) -> &'static str {
        match self.detail {
            NodeDetail::Op(n) => match &n.tiles {
                TileLevel::None(NoTiles::Elementwise) => "an elementwise operator has no tiles",
                TileLevel::None(NoTiles::Gather) => "the embedding is a gather and has no tiles",
                TileLevel::None(NoTiles::Unfused) => "unfused attention is not tiled; set `flash` = on",
                TileLevel::None(NoTiles::Communication) => "communication between GPUs has no tiles",
                TileLevel::None(NoTiles::NotModelled(_)) => "its tiles are not modelled",
                _ => "a leaf",
            },
            NodeDetail::Tiles(_) => "the tile level is the bottom",
            _ => "a leaf",
        }
    }

    /// The operator at an op or tiles node.
    pub fn op(&self) -> Option<&'t OpNode> {
        match self.detail {
            NodeDetail::Op(n) | NodeDetail::Tiles(n) => Some(n),
            _ => None,
        }
    }
}

/// `layer.0.mlp.up.tiles` → `model`, `layer.0`, `layer.0.mlp.up`, `layer.0.mlp.up.tiles` (the
/// block is part of the operator's name, not a level); `lm_head.tiles` → `model`, `lm_head`,
/// `lm_head.tiles`.
fn breadcrumb(path: &str) -> Vec<String> {
    let mut out = vec!["model".to_string()];
    let steps = super::path_steps(path);
    let Some((first, below)) = steps.split_first() else { return out };
    out.push(first.clone());
    let layer = first.starts_with("layer.");
    let mut cur = first.clone();
    for (i, s) in below.iter().enumerate() {
        cur = format!("{cur}.{s}");
        // In a layer, the block and the operator are one step.
        if !(layer && i == 0) {
            out.push(cur.clone());
        }
    }
    out
}
