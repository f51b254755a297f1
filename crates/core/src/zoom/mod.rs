//! Powers of ten: one forward step as a tree — model → layers → blocks → operations → tiles —
//! whose every level is computed from the level below, with an add-up report at each step
//! (seed 000, "Powers of Ten").
//!
//! ```text
//! model                      embedding + layer.0 + … + layer.{L−1} + final_norm + lm_head
//! └ layer.i                  attn + mlp                       (every layer is its own node)
//!   └ layer.i.attn           its operators (norm, q, k, v, rope, kv_write, attention, …)
//!     └ layer.i.attn.q       one operator: the ledger's FLOPs and bytes
//!       └ layer.i.attn.q.tiles   the operator cut into thread-block tiles on the GPU
//! ```
//!
//! The embedding and the LM head sit beside the layer stack, not folded into it. Operator names
//! are [`OpKind::short`], blocks `attn` and `mlp`.
//!
//! **Where the sums stop adding up.** Model, layer and block totals are sums of their children,
//! exactly (same additions in the same order). Below an operator they do not: a tile grid that
//! does not divide the output computes padding that is thrown away (FLOPs grow), and each operand
//! strip is re-read by every tile that needs it (bytes grow by the reuse factor); see
//! [`crate::tiling`]. At model level, FLOPs per token differ from 2 × parameters, and
//! [`FlopsGap`] says by how much and which parts make the gap.
//!
//! Identical layers share one computed [`LayerDetail`]; every layer is still its own node.

use crate::clock::Profiled;
use crate::cost::Cost;
use crate::error::{Error, Result};
use crate::model::ModelSpec;
use crate::ops::{Block, Op, OpBuilder, OpKind};
use crate::roofline::{KernelTimer, Timing};
use crate::scenario::Scenario;
use crate::tiling::gemm::{choose_tile, GemmShape, MAX_M};
use crate::tiling::{tile_attention, AttentionTiling, GemmTiling, TileChoice};
use serde::Serialize;

mod gap;
mod view;

use gap::flops_gap;
pub use gap::{FlopsGap, GapItem, GapKind};
pub use view::{AddUp, ChildView, NodeDetail, NodeView};

/// Levels of the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// The whole step.
    Model,
    /// One decoder layer.
    Layer,
    /// The attention or MLP half of a layer.
    Block,
    /// One operator.
    Op,
    /// An operator's thread-block tiles.
    Tiles,
}

/// Why an operator has no tile level.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason", content = "detail")]
pub enum NoTiles {
    /// Elementwise or reduction work on the vector units: one pass over its tensors.
    Elementwise,
    /// The embedding gather: rows copied from the table, no arithmetic to tile.
    Gather,
    /// Unfused attention (`--flash off`): three kernels through HBM; the fused kernel's blocks
    /// are modelled with FlashAttention on.
    Unfused,
    /// The shape is outside what the tile model accepts (the message says why).
    NotModelled(String),
}

/// The tile level of an operator. (A tree holds a few dozen; the GEMM variant's size is not worth
/// a heap allocation each.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum TileLevel {
    /// A GEMM with its default tile.
    Gemm {
        /// The chosen tiling (over all instances) and the runner-up.
        choice: TileChoice,
        /// The GEMM as tiled: M and the instance count rounded up to whole rows and matrices.
        shape: GemmShape,
    },
    /// The attention core, with the ledger's unfused rows for comparison.
    Attention {
        /// Blocks and traffic of the fused kernel.
        tiling: AttentionTiling,
        /// Fused attention and its softmax as the ledger counts them.
        fused: Cost,
        /// The same layer's attention with FlashAttention off (scores, softmax, values rows).
        unfused: Cost,
    },
    /// No tiles.
    None(NoTiles),
}

impl TileLevel {
    /// Useful and executed FLOPs, bytes moved and modelled time of the tiles.
    pub fn totals(&self) -> Option<TileTotals> {
        let t = |flops, executed_flops, bytes, time_s| Some(TileTotals { flops, executed_flops, bytes, time_s });
        match self {
            TileLevel::Gemm { choice, .. } => {
                let g = &choice.best;
                t(g.flops, g.padded_flops, g.tiled_bytes, g.time_s)
            }
            TileLevel::Attention { tiling, .. } => {
                t(tiling.flops, tiling.executed_flops, tiling.tiled_bytes, tiling.time_s)
            }
            TileLevel::None(_) => None,
        }
    }

    /// The GEMM tiling, if this is a GEMM.
    pub fn gemm(&self) -> Option<&GemmTiling> {
        match self {
            TileLevel::Gemm { choice, .. } => Some(&choice.best),
            _ => None,
        }
    }
}

/// Totals of a tile level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TileTotals {
    /// Useful FLOPs (the GEMM's or the attention core's).
    pub flops: f64,
    /// FLOPs executed by whole tiles.
    pub executed_flops: f64,
    /// Bytes the tiles load and store.
    pub bytes: f64,
    /// Modelled time, seconds.
    pub time_s: f64,
}

/// One operator with its roofline time and tile level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpNode {
    /// The ledger's operator.
    #[serde(skip)]
    pub op: Op,
    /// Its roofline time.
    pub timing: Timing,
    /// Its tiles.
    pub tiles: TileLevel,
}

impl OpNode {
    /// Name in paths ([`OpKind::short`]).
    pub fn name(&self) -> &'static str {
        self.op.kind.short()
    }
}

/// Cost and time of a set of children, summed in order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Totals {
    /// FLOPs and bytes.
    pub cost: Cost,
    /// Roofline time (sum of the children's).
    pub timing: Timing,
}

impl Totals {
    fn add(&mut self, cost: Cost, timing: Timing) {
        self.cost += cost;
        self.timing += timing;
    }
}

/// One distinct layer shape, computed once and shared by the layers that have it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerDetail {
    /// Operators in execution order.
    pub ops: Vec<OpNode>,
    /// Σ of the attention block's operators.
    pub attn: Totals,
    /// Σ of the MLP block's operators.
    pub mlp: Totals,
    /// attn + mlp.
    pub total: Totals,
    /// Layers with this shape.
    pub count: u64,
}

impl LayerDetail {
    fn block(&self, b: Block) -> &Totals {
        match b {
            Block::Mlp => &self.mlp,
            _ => &self.attn,
        }
    }
}

/// The whole tree of one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ZoomTree {
    /// Model name.
    pub model: String,
    /// Layers in the stack.
    pub num_layers: usize,
    /// The embedding gather.
    pub embedding: OpNode,
    /// The final norm, if the model has one.
    pub final_norm: Option<OpNode>,
    /// The LM head.
    pub lm_head: OpNode,
    /// Distinct layer shapes.
    pub groups: Vec<LayerDetail>,
    /// For each layer, its index in `groups`.
    pub layer_group: Vec<usize>,
    /// Σ of the layers.
    pub stack: Totals,
    /// embedding + stack + final_norm + lm_head.
    pub total: Totals,
    /// FLOPs per token against 2 × parameters.
    pub gap: FlopsGap,
}

pub(super) fn is_attention_core(kind: OpKind) -> bool {
    matches!(kind, OpKind::Attention | OpKind::AttnScores | OpKind::AttnValues)
}

/// Build the tile level of one operator.
fn tile_level(sc: &Scenario, op: &Op, unfused: Option<Cost>, fused: Cost) -> TileLevel {
    if let Some(g) = &op.gemm {
        if !(g.m.is_finite() && g.instances.is_finite()) || g.m.ceil() > MAX_M as f64 {
            return TileLevel::None(NoTiles::NotModelled(format!("M = {} rows is outside 1..={MAX_M}", g.m)));
        }
        let batch = g.instances.ceil().max(1.0) as u64;
        let shape = match GemmShape::new(
            g.m.ceil().max(1.0) as u64,
            g.n,
            g.k,
            batch,
            g.activation,
            g.weight,
            g.activation,
            g.bias,
        ) {
            Ok(s) => s,
            Err(e) => return TileLevel::None(NoTiles::NotModelled(e.to_string())),
        };
        return match choose_tile(&shape, &sc.gpu, sc.efficiency) {
            Ok(choice) => TileLevel::Gemm { choice, shape },
            Err(e) => TileLevel::None(NoTiles::NotModelled(e.to_string())),
        };
    }
    match (op.kind, op.attention) {
        (OpKind::Attention, Some(shape)) => TileLevel::Attention {
            tiling: tile_attention(&shape, &op.cost, op.math, &sc.workload, &sc.gpu, sc.efficiency),
            fused,
            unfused: unfused.unwrap_or(fused),
        },
        (OpKind::AttnScores | OpKind::AttnValues, _) => TileLevel::None(NoTiles::Unfused),
        (OpKind::Embedding, _) => TileLevel::None(NoTiles::Gather),
        _ => TileLevel::None(NoTiles::Elementwise),
    }
}

fn op_node(sc: &Scenario, timer: &mut KernelTimer<Profiled>, op: Op, unfused: Option<Cost>, fused: Cost) -> OpNode {
    OpNode { timing: crate::parallel::op_timing(sc, timer, &op), tiles: tile_level(sc, &op, unfused, fused), op }
}

/// The attention-core cost (core + softmax) of one layer under `sc`.
fn core_cost(b: &OpBuilder, layer: &crate::model::LayerSpec) -> Cost {
    let mut c = Cost::ZERO;
    b.layer(layer, &mut |op| {
        if is_attention_core(op.kind) || op.kind == OpKind::Softmax {
            c += op.cost;
        }
    });
    c
}

fn layer_detail(
    sc: &Scenario,
    unfused_sc: Option<&Scenario>,
    b: &OpBuilder,
    layer: &crate::model::LayerSpec,
    count: u64,
) -> LayerDetail {
    let mut ops: Vec<Op> = Vec::with_capacity(24);
    b.layer(layer, &mut |op| ops.push(op));
    let fused = ops.iter().filter(|o| is_attention_core(o.kind) || o.kind == OpKind::Softmax).map(|o| o.cost).sum();
    let unfused = unfused_sc.map(|u| core_cost(&OpBuilder::new(u), layer));
    let mut timer = crate::parallel::pipeline::kernel_timer(sc);
    let nodes: Vec<OpNode> = ops.into_iter().map(|op| op_node(sc, &mut timer, op, unfused, fused)).collect();
    let (mut attn, mut mlp) = (Totals::default(), Totals::default());
    for n in &nodes {
        match n.op.kind.block() {
            Block::Mlp => mlp.add(n.op.cost, n.timing),
            _ => attn.add(n.op.cost, n.timing),
        }
    }
    let mut total = attn;
    total.add(mlp.cost, mlp.timing);
    LayerDetail { ops: nodes, attn, mlp, total, count }
}

impl ZoomTree {
    /// Build the tree of one step.
    pub fn build(sc: &Scenario) -> ZoomTree {
        let b = OpBuilder::new(sc);
        let model: &ModelSpec = &sc.model;
        let unfused_sc = sc.workload.flash_attention.then(|| {
            let mut w = sc.workload.clone();
            w.flash_attention = false;
            sc.with_workload(w)
        });
        let mut groups = Vec::new();
        let mut reps = Vec::new();
        for (layer, count) in model.layer_groups() {
            groups.push(layer_detail(sc, unfused_sc.as_ref(), &b, layer, count));
            reps.push(layer);
        }
        let layer_group: Vec<usize> =
            model.layers().iter().map(|l| reps.iter().position(|r| *r == l).unwrap_or(0)).collect();
        let mut single: Vec<Op> = Vec::with_capacity(3);
        b.embedding(&mut |op| single.push(op));
        // Seed counting has no embedding row: an empty one keeps the tree's shape.
        let none = Op {
            kind: OpKind::Embedding,
            cost: Cost::ZERO,
            math: crate::MathFormat::Vector,
            gemm: None,
            attention: None,
            fused: false,
        };
        let mut timer = crate::parallel::pipeline::kernel_timer(sc);
        let embedding = single.pop().unwrap_or(none);
        let embedding = op_node(sc, &mut timer, embedding, None, Cost::ZERO);
        b.head(&mut |op| single.push(op));
        let mut final_norm = None;
        let mut lm_head = None;
        for op in single {
            let node = op_node(sc, &mut timer, op, None, Cost::ZERO);
            match op.kind {
                OpKind::FinalNorm => final_norm = Some(node),
                _ => lm_head = Some(node),
            }
        }
        let lm_head = lm_head.expect("OpBuilder::head always yields the LM head");
        let mut stack = Totals::default();
        for g in &layer_group {
            let t = groups[*g].total;
            stack.add(t.cost, t.timing);
        }
        let mut total = Totals::default();
        total.add(embedding.op.cost, embedding.timing);
        for g in &layer_group {
            let t = groups[*g].total;
            total.add(t.cost, t.timing);
        }
        for n in final_norm.iter().chain(std::iter::once(&lm_head)) {
            total.add(n.op.cost, n.timing);
        }
        let gap = flops_gap(sc, &groups, &embedding, final_norm.as_ref(), &lm_head, total.cost.flops);
        ZoomTree {
            model: model.name.clone(),
            num_layers: layer_group.len(),
            embedding,
            final_norm,
            lm_head,
            groups,
            layer_group,
            stack,
            total,
            gap,
        }
    }

    /// The detail of layer `i`.
    pub fn layer(&self, i: usize) -> Option<&LayerDetail> {
        self.layer_group.get(i).map(|g| &self.groups[*g])
    }

    /// The node at `path` (`model`, `layer.0`, `layer.0.mlp`, `layer.0.mlp.up`,
    /// `layer.0.mlp.up.tiles`, `lm_head.tiles` …). An unknown path is an error listing the
    /// valid children of the deepest node it reached.
    pub fn node(&self, path: &str) -> Result<NodeView<'_>> {
        let norm = path.trim().to_ascii_lowercase();
        let rest = norm.strip_prefix("model").map(|r| r.trim_start_matches('.')).unwrap_or(&norm);
        let segs: Vec<&str> = if rest.is_empty() { Vec::new() } else { rest.split('.').collect() };
        let fail = |at: &NodeView<'_>| {
            let mut accepted: Vec<String> = at.children.iter().filter_map(|c| c.path.clone()).collect();
            if accepted.is_empty() {
                accepted.push(format!("nothing below `{}` ({})", at.path, at.leaf_reason()));
            } else if at.level == Level::Model && self.num_layers > 3 {
                let n = self.num_layers;
                accepted.retain(|p| !p.starts_with("layer."));
                accepted.insert(1, format!("layer.0 … layer.{}", n - 1));
            }
            Error::unknown("zoom path", path.trim(), accepted).about("path")
        };
        let mut node = self.model_view();
        let mut i = 0;
        while i < segs.len() {
            let seg = segs[i];
            // `layer.N` is one step of two segments.
            let (step, used) = if seg == "layer" && i + 1 < segs.len() {
                (format!("layer.{}", segs[i + 1]), 2)
            } else {
                (seg.to_string(), 1)
            };
            let want = if node.level == Level::Model { step.clone() } else { format!("{}.{step}", node.path) };
            if !node.children.iter().any(|c| c.path.as_deref() == Some(want.as_str())) {
                return Err(fail(&node));
            }
            node = self.view(&want)?;
            i += used;
        }
        Ok(node)
    }

    fn model_view(&self) -> NodeView<'_> {
        let mut children = vec![ChildView::of_op("embedding", &self.embedding)];
        for (i, g) in self.layer_group.iter().enumerate() {
            let t = &self.groups[*g].total;
            children.push(ChildView::exact(format!("layer.{i}"), Some(format!("layer.{i}")), t));
        }
        if let Some(n) = &self.final_norm {
            children.push(ChildView::of_op("final_norm", n));
        }
        children.push(ChildView::of_op("lm_head", &self.lm_head));
        NodeView::new("model".into(), Level::Model, self.total, children, NodeDetail::Model(&self.gap))
    }

    /// Build the view of a path already known to be valid (one step below a valid node).
    fn view(&self, path: &str) -> Result<NodeView<'_>> {
        let segs: Vec<&str> = path.split('.').collect();
        let top_op = |name: &str| match name {
            "embedding" => Some(&self.embedding),
            "final_norm" => self.final_norm.as_ref(),
            "lm_head" => Some(&self.lm_head),
            _ => None,
        };
        let bad = || Error::unknown("zoom path", path, ["model"]).about("path");
        match segs.as_slice() {
            [name] => top_op(name).map(|n| self.op_view(path, n)).ok_or_else(bad),
            [name, "tiles"] => top_op(name).map(|n| self.tiles_view(path, n)).ok_or_else(bad),
            ["layer", i, rest @ ..] => {
                let idx: usize = i.parse().map_err(|_| bad())?;
                let detail = self.layer(idx).ok_or_else(bad)?;
                match rest {
                    [] => {
                        let children = [Block::Attention, Block::Mlp]
                            .into_iter()
                            .map(|b| {
                                let name = block_name(b);
                                ChildView::exact(name.into(), Some(format!("{path}.{name}")), detail.block(b))
                            })
                            .collect();
                        Ok(NodeView::new(
                            path.into(),
                            Level::Layer,
                            detail.total,
                            children,
                            NodeDetail::Layer { index: idx, detail },
                        ))
                    }
                    [block] => {
                        let b = block_of(block).ok_or_else(bad)?;
                        let children = detail
                            .ops
                            .iter()
                            .filter(|n| n.op.kind.block() == b)
                            .map(|n| ChildView::of_op(&format!("{path}.{}", n.name()), n))
                            .collect();
                        Ok(NodeView::new(path.into(), Level::Block, *detail.block(b), children, NodeDetail::Block(b)))
                    }
                    [block, op, tail @ ..] => {
                        let b = block_of(block).ok_or_else(bad)?;
                        let n =
                            detail.ops.iter().find(|n| n.op.kind.block() == b && n.name() == *op).ok_or_else(bad)?;
                        match tail {
                            [] => Ok(self.op_view(path, n)),
                            ["tiles"] => Ok(self.tiles_view(path, n)),
                            _ => Err(bad()),
                        }
                    }
                }
            }
            _ => Err(bad()),
        }
    }

    fn op_view<'t>(&'t self, path: &str, n: &'t OpNode) -> NodeView<'t> {
        let children = match n.tiles.totals() {
            Some(t) => vec![ChildView {
                name: "tiles".into(),
                path: Some(format!("{path}.tiles")),
                count: tile_count(&n.tiles),
                flops: t.flops,
                executed_flops: t.executed_flops,
                bytes: t.bytes,
                cost: None,
                time_s: t.time_s,
            }],
            None => Vec::new(),
        };
        let totals = Totals { cost: n.op.cost, timing: n.timing };
        NodeView::new(path.into(), Level::Op, totals, children, NodeDetail::Op(n))
    }

    fn tiles_view<'t>(&'t self, path: &str, n: &'t OpNode) -> NodeView<'t> {
        let mut children = Vec::new();
        let part = |name: &str, count: f64, flops: f64, executed: f64, bytes: f64| ChildView {
            name: name.into(),
            path: None,
            count,
            flops,
            executed_flops: executed,
            bytes,
            cost: None,
            time_s: 0.0,
        };
        match &n.tiles {
            TileLevel::Gemm { choice, .. } => {
                for c in choice.best.classes.iter().filter(|c| c.count > 0) {
                    children.push(part(c.kind.name(), c.count as f64, c.flops, c.padded_flops, c.tiled_bytes));
                }
                // Bias and output stores are inside the classes; the GEMM's own FLOPs may differ
                // from the operator's (MoE rows rounded up), which the add-up reports.
            }
            TileLevel::Attention { tiling, .. } => {
                for p in tiling.parts.iter().filter(|p| p.count > 0.0 || p.bytes > 0.0) {
                    children.push(part(p.kind.name(), p.count, p.flops, p.executed_flops, p.bytes));
                }
            }
            TileLevel::None(_) => {}
        }
        let t = n.tiles.totals().unwrap_or_default();
        let totals = Totals {
            cost: Cost { flops: t.executed_flops, activation_bytes: t.bytes, ..Cost::ZERO },
            timing: Timing {
                compute_s: 0.0,
                memory_s: 0.0,
                time_s: t.time_s,
                roofline_s: t.time_s,
                ..Timing::default()
            },
        };
        NodeView::new(path.into(), Level::Tiles, totals, children, NodeDetail::Tiles(n))
    }
}

fn tile_count(t: &TileLevel) -> f64 {
    match t {
        TileLevel::Gemm { choice, .. } => choice.best.tiles as f64,
        TileLevel::Attention { tiling, .. } => tiling.blocks_computed,
        TileLevel::None(_) => 0.0,
    }
}

/// Path segment of a block.
pub fn block_name(b: Block) -> &'static str {
    match b {
        Block::Attention => "attn",
        Block::Mlp => "mlp",
        Block::Embedding => "embedding",
        Block::Head => "head",
    }
}

fn block_of(s: &str) -> Option<Block> {
    match s {
        "attn" => Some(Block::Attention),
        "mlp" => Some(Block::Mlp),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::Ledger;
    use crate::model::builtin_presets;
    use crate::scenario::{Catalog, ScenarioRequest};
    use crate::workload::{Contexts, Phase, Workload};
    use proptest::prelude::*;

    fn scenario(model: &str, phase: &str, batch: u64, ctx: u64) -> Scenario {
        ScenarioRequest {
            model: Some(model.into()),
            phase: Some(phase.into()),
            batch: Some(batch.to_string()),
            ctx: Some(ctx.to_string()),
            ..Default::default()
        }
        .resolve(&Catalog::builtin())
        .unwrap()
    }

    fn assert_exact(v: &NodeView) {
        let a = v.addup;
        assert_eq!(a.children_flops, a.parent_flops, "{} flops", v.path);
        assert_eq!(a.children_bytes, a.parent_bytes, "{} bytes", v.path);
        assert!(a.exact, "{}", v.path);
    }

    /// Every exact level of the tree adds up exactly, and the model matches the ledger.
    fn check_tree(sc: &Scenario) {
        let tree = ZoomTree::build(sc);
        let model = tree.node("model").unwrap();
        assert_exact(&model);
        let ledger = Ledger::build(sc).summary;
        let rel = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0);
        assert!(rel(model.totals.cost.flops, ledger.cost.flops), "{} flops", sc.model.name);
        assert!(rel(model.totals.cost.bytes(), ledger.cost.bytes()), "{} bytes", sc.model.name);
        assert!(rel(model.totals.timing.time_s, ledger.timing.time_s), "{} time", sc.model.name);
        let g = &tree.gap;
        let sum = g.two_params_flops + g.items.iter().map(|i| i.flops_per_token).sum::<f64>();
        assert!(
            (sum - g.flops_per_token).abs() <= 1e-9 * g.two_params_flops,
            "{} gap {sum} vs {}",
            sc.model.name,
            g.flops_per_token
        );
        for i in 0..tree.num_layers {
            let layer = tree.node(&format!("layer.{i}")).unwrap();
            assert_exact(&layer);
            for b in ["attn", "mlp"] {
                let block = tree.node(&format!("layer.{i}.{b}")).unwrap();
                assert_exact(&block);
                for c in &block.children {
                    let op = tree.node(c.path.as_deref().unwrap()).unwrap();
                    if let Some(tiles) = op.children.first() {
                        let o = op.op().unwrap();
                        // Tiles never compute less or move less than the operator's GEMM / core.
                        match &o.tiles {
                            TileLevel::Gemm { choice, shape } => {
                                assert!(choice.best.padded_flops >= o.op.gemm.unwrap().flops() * (1.0 - 1e-12));
                                assert!(choice.best.tiled_bytes >= shape.ideal_bytes() * (1.0 - 1e-12));
                            }
                            TileLevel::Attention { tiling, .. } => {
                                assert!(tiling.executed_flops >= tiling.flops * (1.0 - 1e-12), "{}", op.path);
                                assert!(tiling.tiled_bytes >= tiling.ideal_bytes * (1.0 - 1e-12), "{}", op.path);
                            }
                            TileLevel::None(_) => unreachable!(),
                        }
                        let tv = tree.node(tiles.path.as_deref().unwrap()).unwrap();
                        // The tile classes add up to the tile level.
                        assert!(tv.addup.exact, "{} {:?}", tv.path, tv.addup);
                    }
                }
            }
        }
    }

    #[test]
    fn llama_3_8b_decode_walks_from_the_model_to_a_tile() {
        let sc = Scenario::default_decode();
        let tree = ZoomTree::build(&sc);
        let v = tree.node("layer.0.mlp.up.tiles").unwrap();
        assert_eq!(v.level, Level::Tiles);
        assert_eq!(v.breadcrumb, ["model", "layer.0", "layer.0.mlp", "layer.0.mlp.up", "layer.0.mlp.up.tiles"]);
        let g = v.op().unwrap().tiles.gemm().unwrap();
        // Decode: M = 1 row in a tile of 16 or more.
        assert_eq!((g.shape.m, g.shape.n, g.shape.k), (1, 14336, 4096));
        assert_eq!(g.tiles_m, 1);
        assert!(g.padded_flops >= 16.0 * g.flops);
        // Every layer is its own node; the 32 identical layers share one detail.
        assert_eq!(tree.num_layers, 32);
        assert_eq!(tree.groups.len(), 1);
        let model = tree.node("model").unwrap();
        assert_eq!(model.children.len(), 1 + 32 + 2);
        assert_eq!(model.children[0].name, "embedding");
        assert_eq!(model.children.last().unwrap().name, "lm_head");
        check_tree(&sc);
    }

    #[test]
    fn the_gap_to_two_times_params_is_explained() {
        // Llama 3 8B decode at 2048: the embedding table (128,256 × 4,096 = 525,336,576
        // parameters) does no multiply-adds: −1.05 GFLOP per token; the untied LM head runs for
        // every decode token: 2·525,336,576 FLOPs, exactly its 2 × params (net 0). Attention over
        // 2,049 positions: 32 layers · 2·32 heads·(128 + 128)·2,049 = 1.074 GFLOP per token.
        let tree = ZoomTree::build(&Scenario::default_decode());
        let g = &tree.gap;
        let item = |k: GapKind| g.items.iter().find(|i| i.kind == k).unwrap().flops_per_token;
        assert_eq!(item(GapKind::EmbeddingGather), -2.0 * 525_336_576.0);
        assert_eq!(item(GapKind::LmHead), 0.0);
        assert_eq!(item(GapKind::InactiveExperts), 0.0);
        assert_eq!(item(GapKind::AttentionScores), 32.0 * 2.0 * 32.0 * 256.0 * 2049.0);
        // Prefill of 4,096 tokens: the LM head runs for the last token only.
        let tree = ZoomTree::build(&scenario("llama-3-8b", "prefill", 1, 4096));
        let lm = tree.gap.items[1].flops_per_token;
        assert_eq!(lm, 2.0 * 525_336_576.0 / 4096.0 - 2.0 * 525_336_576.0);
        // MoE: Mixtral routes each token to 2 of 8 experts; the other 6 are the gap.
        let tree = ZoomTree::build(&scenario("mixtral-8x7b", "decode", 1, 2048));
        let inactive = tree.gap.items[2].flops_per_token;
        // 32 layers · 6 experts · 3 · 4096 · 14336 parameters.
        assert_eq!(inactive, -2.0 * 32.0 * 6.0 * 3.0 * 4096.0 * 14336.0);
    }

    #[test]
    fn prefill_mlp_up_is_compute_bound_with_a_big_tile() {
        let sc = scenario("llama-3-8b", "prefill", 1, 4096);
        let tree = ZoomTree::build(&sc);
        let v = tree.node("layer.0.mlp.up").unwrap();
        let g = v.op().unwrap().tiles.gemm().unwrap();
        assert_eq!((g.shape.m, g.shape.n, g.shape.k), (4096, 14336, 4096));
        assert!(g.tile.bm >= 64);
        // 4096 × 14336 divides every candidate tile: no padding; re-reads only.
        assert_eq!(g.padded_flops, g.flops);
        assert_eq!(v.addup.flops_difference, 0.0);
        assert!(v.addup.bytes_ratio() > 10.0);
        check_tree(&sc);
    }

    #[test]
    fn flash_attention_prefill_saves_the_score_traffic() {
        // Llama 3 8B, one 8,192-token prompt: unfused attention writes the 32 × 8192² score
        // matrix (bf16), the softmax reads it and writes probabilities, P·V reads them:
        // 4 · 32 · 8192² · 2 B = 17.18 GB more per layer than the fused kernel.
        let sc = scenario("llama-3-8b", "prefill", 1, 8192);
        let tree = ZoomTree::build(&sc);
        let v = tree.node("layer.0.attn.attention.tiles").unwrap();
        let TileLevel::Attention { tiling, fused, unfused } = &v.op().unwrap().tiles else { panic!() };
        assert_eq!(unfused.bytes() - fused.bytes(), 4.0 * 32.0 * 8192.0 * 8192.0 * 2.0);
        assert!(tiling.tiled_bytes < unfused.bytes());
        // Blocks: 64 query blocks × 128 KV blocks of 64 per head; causal keeps 64·2 + 2·(63·64/2)
        // = 4,160 of 8,192; 32 heads.
        assert_eq!(tiling.blocks, 32.0 * 8192.0);
        assert_eq!(tiling.blocks_computed, 32.0 * 4160.0);
        assert_eq!(tiling.blocks_partial, 32.0 * 128.0);
        // The fused kernel reads K and V once per query block: positions loaded per head =
        // Σ_i 128·(i + 1) = 128 · 64·65/2, each 2 · 128 · 2 B per KV head.
        let positions = 128.0 * 64.0 * 65.0 / 2.0;
        assert_eq!(tiling.kv_tiled_bytes, 32.0 * positions * 512.0);
    }

    #[test]
    fn decode_attention_splits_the_keys_over_thread_blocks() {
        // Batch 1 × 8 KV heads × 1 query block (4 query heads per KV head) = 8 CTAs for 264
        // slots: FA2 splits the 2,049 keys (17 blocks of 128) 17 ways → 136 CTAs.
        let tree = ZoomTree::build(&Scenario::default_decode());
        let v = tree.node("layer.0.attn.attention.tiles").unwrap();
        let TileLevel::Attention { tiling, .. } = &v.op().unwrap().tiles else { panic!() };
        assert_eq!((tiling.splits, tiling.ctas, tiling.cta_slots), (17, 136.0, 264));
        // Split partials: 2 · 32 heads · 17 · (128 + 1) · 4 B.
        assert_eq!(tiling.split_bytes, 2.0 * 32.0 * 17.0 * 129.0 * 4.0);
        // Rows padded from 4 query heads to a 64-row block: executed = 16 × useful, up to the
        // last key block's padding (17·128 = 2,176 keys for 2,049).
        assert_eq!(tiling.executed_flops, 8.0 * 64.0 * 17.0 * 128.0 * 2.0 * 256.0);
    }

    #[test]
    fn unknown_paths_list_the_valid_children() {
        let tree = ZoomTree::build(&Scenario::default_decode());
        let e = tree.node("layer.0.mlp.upp").unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown zoom path `layer.0.mlp.upp`; did you mean `layer.0.mlp.up`? accepted: layer.0.mlp.norm, layer.0.mlp.gate, layer.0.mlp.up, layer.0.mlp.act, layer.0.mlp.down, layer.0.mlp.residual"
        );
        let e = tree.node("layer.32").unwrap_err().to_string();
        assert_eq!(e, "unknown zoom path `layer.32`; accepted: embedding, layer.0 … layer.31, final_norm, lm_head");
        let e = tree.node("layer.0.attn.norm.tiles").unwrap_err().to_string();
        assert!(e.contains("nothing below `layer.0.attn.norm` (an elementwise operator has no tiles)"), "{e}");
        assert!(tree.node("embedding.tiles").is_err());
        assert!(tree.node("layer.x").is_err());
        assert_eq!(tree.node("Model.Layer.3.MLP").unwrap().path, "layer.3.mlp");
        assert_eq!(tree.node("lm_head.tiles").unwrap().level, Level::Tiles);
        assert_eq!(tree.node("").unwrap().level, Level::Model);
    }

    #[test]
    fn every_preset_adds_up_in_prefill_and_decode() {
        for p in builtin_presets() {
            for phase in ["decode", "prefill"] {
                check_tree(&scenario(&p.name, phase, 3, 1000));
            }
        }
    }

    #[test]
    fn operator_names_are_unique_within_a_block() {
        for p in builtin_presets() {
            let tree = ZoomTree::build(&scenario(&p.name, "prefill", 1, 100));
            for g in &tree.groups {
                for (i, a) in g.ops.iter().enumerate() {
                    for b in &g.ops[..i] {
                        assert!(
                            a.name() != b.name() || a.op.kind.block() != b.op.kind.block(),
                            "{} {}",
                            p.name,
                            a.name()
                        );
                    }
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn random_workloads_add_up(preset in 0usize..27, batch in 1u64..64, ctx in 1u64..20_000, prefill: bool, flash: bool) {
            let presets = builtin_presets();
            let p = &presets[preset % presets.len()];
            let base = scenario(&p.name, "decode", 1, 1);
            let mut w = if prefill { Workload::prefill(batch, ctx).unwrap() } else { Workload::decode(batch, ctx).unwrap() };
            w.flash_attention = flash;
            let sc = base.with_workload(w);
            prop_assert_eq!(sc.workload.phase, if prefill { Phase::Prefill } else { Phase::Decode });
            check_tree(&sc);
        }

        #[test]
        fn context_mixes_add_up(a in 1u64..5000, b in 1u64..5000, n in 1u64..8) {
            let base = scenario("gemma-2-9b", "decode", 1, 1);
            let mut w = base.workload.clone();
            w.contexts = Contexts::mix([
                crate::workload::ContextBucket { tokens: a, count: n },
                crate::workload::ContextBucket { tokens: b, count: 1 },
            ]).unwrap();
            check_tree(&base.with_workload(w.clone()));
            w.phase = Phase::Prefill;
            check_tree(&base.with_workload(w));
        }
    }
}
