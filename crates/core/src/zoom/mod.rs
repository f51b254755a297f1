//! Powers of ten: one forward step as a tree — model → layers → operations → tiles — whose every
//! level is computed from the level below, with an add-up report at each step (the Powers of Ten walk-through,
//! "Powers of Ten": "one forward pass, at four magnifications").
//!
//! ```text
//! model                      layer.0 + … + layer.{L−1}: the layer stack
//! └ layer.i                  its operators, under their block (attn, mlp)   (every layer is its own node)
//!   └ layer.i.attn.q         one operator: the ledger's FLOPs and bytes
//!     └ layer.i.attn.q.tiles the operator cut into thread-block tiles on the GPU
//! ```
//!
//! **The model is the layer stack** (the Powers of Ten walk-through: the 2 × parameters shortcut "counts the layer
//! stack, which is what this page sums"; the embedding and the vocabulary projection "are
//! excluded here rather than silently folded in"). The embedding, the final norm and the LM head
//! (and, on several GPUs, their collectives, a pipeline stage's send and its wait) are the *rest
//! of the step*, beside the model: `model + rest = step`, and the step is the ledger's total
//! ([`StepCheck`], checked against [`crate::ledger::summarise`]).
//!
//! **One GPU, as the ledger.** The tree is built from [`for_each_gpu_site`], the visit the ledger
//! sums: in a tensor- or expert-parallel deployment it holds one GPU's share of every operator
//! and the communication operators (`layer.i.attn.all_reduce`, `layer.i.mlp.dispatch`,
//! `all_reduce_embedding`, `all_gather_logits` …); with pipeline stages it is one GPU of the
//! busiest stage: the model is that stage's layers (`layer.16` … `layer.31` of 32 on the second
//! of two stages), each operator summed over the micro-batches the GPU runs ([`OpNode::runs`]),
//! and the rest of the step holds the stage's embedding or head, its `pp_send` and its
//! `pipeline_wait`.
//!
//! **Blocks are not a level.** An operator's path keeps its block (`layer.0.mlp.up`); the layer
//! level lists its operators with their block; `layer.0.mlp` is the layer level with the MLP's
//! operators marked ([`NodeDetail::Layer`]'s `focus`).
//!
//! **Where the sums stop adding up.** Model and layer totals are sums of their children, exactly
//! (same additions in the same order). Below an operator they do not: a tile grid that does not
//! divide the output computes padding that is thrown away (FLOPs grow), and each operand strip is
//! re-read by every tile that needs it (bytes grow by the reuse factor); see [`crate::tiling`].
//! At model level, FLOPs per token differ from 2 × the stack's parameters, and [`FlopsGap`] says
//! by how much and which parts make the gap.
//!
//! Identical layers share one computed [`LayerDetail`]; every layer is still its own node.

use crate::cost::Cost;
use crate::error::{Error, Result};
use crate::kinds::OpClass;
use crate::ledger::summarise;
use crate::model::{LayerSpec, Reach};
use crate::ops::{Block, Op, OpBuilder, OpKind};
use crate::parallel::{for_each_gpu_site, PipelineTiming, Site};
use crate::roofline::Timing;
use crate::scenario::Scenario;
use crate::tiling::gemm::{choose_tile, GemmShape, MAX_M};
use crate::tiling::{tile_attention, AttentionTiling, GemmTiling, TileChoice};
use serde::Serialize;

mod deepest;
mod flip;
mod gap;
mod view;

pub use flip::{weight_flip, Flip, FlipSide};
use gap::flops_gap;
pub use gap::{FlopsGap, GapItem, GapKind};
pub use view::{AddUp, ChildView, NodeDetail, NodeView};

/// Levels of the tree (the Powers of Ten walk-through's four magnifications).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// The layer stack (the rest of the step beside it).
    Model,
    /// One decoder layer: its operators, by block.
    Layer,
    /// One operator (of a layer, or of the rest of the step).
    Op,
    /// An operator's thread-block tiles.
    Tiles,
}

impl Level {
    /// Lower-case name (`model`, `layer`, `operator`, `tile`).
    pub fn name(self) -> &'static str {
        match self {
            Level::Model => "model",
            Level::Layer => "layer",
            Level::Op => "operator",
            Level::Tiles => "tile",
        }
    }
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
    /// Communication between GPUs, or a pipeline stage's wait: no arithmetic on the GPU.
    Communication,
    /// A recurrent mixer's scan: the state's update per token (decode) or the chunked
    /// algorithm's small matmuls (prefill), not one GEMM to tile.
    Recurrence,
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

/// One operator of one layer (or of the rest of the step) on the GPU the tree shows, with its
/// time and tile level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpNode {
    /// The ledger's operator as one run computes it: the whole step's, or, with pipeline stages,
    /// one micro-batch's (the first the GPU runs). Its tiles are this run's.
    #[serde(skip)]
    pub op: Op,
    /// Runs per step: 1, or the micro-batches the GPU runs it for with pipeline stages.
    pub runs: u64,
    /// FLOPs and bytes over all runs (= `op.cost` with one run): the ledger's, for one layer.
    pub cost: Cost,
    /// Its time over all runs, by the scenario's clock.
    pub timing: Timing,
    /// The tiles of one run.
    pub tiles: TileLevel,
}

impl OpNode {
    /// Name in a layer's paths ([`OpKind::short`]).
    pub fn name(&self) -> &'static str {
        self.op.kind.short()
    }

    /// Its totals.
    pub fn totals(&self) -> Totals {
        Totals { cost: self.cost, timing: self.timing }
    }
}

/// Cost and time of a set of children, summed in order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Totals {
    /// FLOPs and bytes.
    pub cost: Cost,
    /// Time by the scenario's clock, with the roofline's beside it (sum of the children's).
    pub timing: Timing,
}

impl Totals {
    fn add(&mut self, t: Totals) {
        self.cost += t.cost;
        self.timing += t.timing;
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
    /// Σ of its operators (attn + mlp).
    pub total: Totals,
    /// Layers with this shape on the GPU the tree shows.
    pub count: u64,
    /// What the layer is made of, in words ([`LayerSpec::kind_words`]: `Gated DeltaNet + MLP`).
    pub kind: String,
}

impl LayerDetail {
    /// Σ of one block's operators.
    pub fn block(&self, b: Block) -> &Totals {
        match b {
            Block::Mlp => &self.mlp,
            _ => &self.attn,
        }
    }
}

/// `model + rest = step`, against the ledger's total.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepCheck {
    /// The model level: the layer stack.
    pub model: Totals,
    /// The rest of the step: embedding, final norm, LM head, their collectives, a pipeline
    /// stage's send and wait.
    pub rest: Totals,
    /// model + rest.
    pub step: Totals,
    /// The ledger's total for the same scenario ([`crate::ledger::summarise`]).
    pub ledger: Totals,
    /// `step` equals `ledger` in FLOPs, every byte kind, link bytes and both times (to 1e−9
    /// relative: the two sum the same numbers in another order).
    pub exact: bool,
}

/// Whether two totals are the same numbers summed in another order (1e−9 relative; zero equals
/// only zero): FLOPs, each byte kind, link bytes, the clock's time and the roofline's.
pub fn same_totals(a: &Totals, b: &Totals) -> bool {
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(y.abs());
    let (p, q) = (&a.cost, &b.cost);
    close(p.flops, q.flops)
        && close(p.weight_bytes, q.weight_bytes)
        && close(p.kv_read_bytes, q.kv_read_bytes)
        && close(p.kv_write_bytes, q.kv_write_bytes)
        && close(p.activation_bytes, q.activation_bytes)
        && close(p.link_bytes, q.link_bytes)
        && close(a.timing.time_s, b.timing.time_s)
        && close(a.timing.roofline_s, b.timing.roofline_s)
}

/// The whole tree of one step on one GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ZoomTree {
    /// Model name.
    pub model: String,
    /// Layers on the GPU the tree shows (the whole stack but with pipeline stages).
    pub num_layers: usize,
    /// Index of its first layer in the model (0 but on a later pipeline stage).
    pub first_layer: usize,
    /// Layers in the model.
    pub model_layers: usize,
    /// Distinct layer shapes.
    pub groups: Vec<LayerDetail>,
    /// For each layer on this GPU (`first_layer`, `first_layer + 1`, …), its index in `groups`.
    pub layer_group: Vec<usize>,
    /// The model level: Σ of the layers.
    pub stack: Totals,
    /// The rest of the step, in execution order.
    pub rest: Vec<OpNode>,
    /// The step against the ledger.
    pub step: StepCheck,
    /// How the pipeline spent the step (with pipeline stages only).
    pub pipeline: Option<PipelineTiming>,
    /// FLOPs per token of the whole layer stack against 2 × its parameters.
    pub gap: FlopsGap,
}

pub(super) fn is_attention_core(kind: OpKind) -> bool {
    matches!(kind.facts().class, OpClass::FusedAttention | OpClass::UnfusedAttention)
}

/// Build the tile level of one operator.
fn tile_level(sc: &Scenario, op: &Op, unfused: Option<Cost>, fused: Cost) -> TileLevel {
    if op.kind.is_comm() {
        return TileLevel::None(NoTiles::Communication);
    }
    if let Some(g) = &op.gemm {
        if !(g.m.is_finite() && g.instances.is_finite()) || g.m.ceil() > MAX_M as f64 {
            return TileLevel::None(NoTiles::NotModelled(format!(
                "M = {} rows is outside the tiling model's range, {}",
                g.m,
                crate::error::range_words(1, MAX_M)
            )));
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
    match (op.kind.facts().class, op.attention) {
        (OpClass::FusedAttention, Some(shape)) if shape.pooled || !matches!(shape.reach, Reach::All | Reach::Window(_)) => {
            TileLevel::None(NoTiles::NotModelled(format!(
                "the tile model cuts full and sliding-window attention; this layer reads {}{}",
                shape.reach.words(),
                if shape.pooled { " and pooled entries of the rest" } else { "" }
            )))
        }
        (OpClass::FusedAttention, Some(shape)) => TileLevel::Attention {
            tiling: tile_attention(&shape, &op.cost, op.math, &sc.workload, &sc.gpu, sc.efficiency),
            fused,
            unfused: unfused.unwrap_or(fused),
        },
        (OpClass::UnfusedAttention, _) => TileLevel::None(NoTiles::Unfused),
        (OpClass::Recurrence, _) => TileLevel::None(NoTiles::Recurrence),
        (OpClass::Scoring, _) => TileLevel::None(NoTiles::NotModelled(
            "the indexer's scores are a batched dot product over every cached key; the tile model cuts GEMMs and attention".into(),
        )),
        (OpClass::Gather, _) => TileLevel::None(NoTiles::Gather),
        (OpClass::Collective(..) | OpClass::PipelineSend | OpClass::PipelineWait, _) => {
            TileLevel::None(NoTiles::Communication)
        }
        // A GEMM without its shape, fused attention without its geometry, and the host's time
        // have no tiles to show, as elementwise work has none.
        (OpClass::FusedAttention | OpClass::Gemm | OpClass::Elementwise | OpClass::Host, _) => {
            TileLevel::None(NoTiles::Elementwise)
        }
    }
}

/// The attention-core cost (core + softmax) of one layer under `sc`.
fn core_cost(sc: &Scenario, layer: &LayerSpec) -> Cost {
    let mut c = Cost::ZERO;
    OpBuilder::new(sc).layer(layer, &mut |op| {
        if is_attention_core(op.kind) || op.kind == OpKind::Softmax {
            c += op.cost;
        }
    });
    c
}

/// An operator being summed over its runs.
struct Pending {
    op: Op,
    runs: u64,
    totals: Totals,
}

impl Pending {
    fn merge(&mut self, runs: u64, totals: Totals) {
        self.runs += runs;
        self.totals.add(totals);
    }

    /// The node, its tiles those of the first run under `sc` (the step or its micro-batch).
    fn node(self, sc: &Scenario, unfused: Option<Cost>, fused: Cost) -> OpNode {
        OpNode {
            tiles: tile_level(sc, &self.op, unfused, fused),
            op: self.op,
            runs: self.runs,
            cost: self.totals.cost,
            timing: self.totals.timing,
        }
    }
}

/// The scenario of a visit when it is not the step's own (a micro-batch), kept for the tiles.
fn own_scenario(g: &crate::parallel::GpuOp<'_>, step: &Scenario) -> Option<Scenario> {
    (!std::ptr::eq(g.scenario, step)).then(|| g.scenario.clone())
}

/// One layer shape being collected.
struct PendingLayer<'a> {
    spec: &'a LayerSpec,
    count: u64,
    ops: Vec<Pending>,
    /// The next operator's index in `ops` while the shape is being visited.
    cursor: usize,
    /// The micro-batch of its first visit, with pipeline stages.
    scenario: Option<Scenario>,
}

impl PendingLayer<'_> {
    fn detail(self, step: &Scenario) -> LayerDetail {
        let sc = self.scenario.as_ref().unwrap_or(step);
        let fused: Cost = self
            .ops
            .iter()
            .filter(|p| is_attention_core(p.op.kind) || p.op.kind == OpKind::Softmax)
            .map(|p| p.op.cost)
            .sum();
        let unfused = sc.workload.flash_attention.then(|| {
            let mut w = sc.workload.clone();
            w.flash_attention = false;
            core_cost(&sc.with_workload(w), self.spec)
        });
        let ops: Vec<OpNode> = self.ops.into_iter().map(|p| p.node(sc, unfused, fused)).collect();
        let (mut attn, mut mlp, mut total) = (Totals::default(), Totals::default(), Totals::default());
        for n in &ops {
            match n.op.kind.block() {
                Block::Mlp => mlp.add(n.totals()),
                _ => attn.add(n.totals()),
            }
            total.add(n.totals());
        }
        LayerDetail { ops, attn, mlp, total, count: self.count, kind: self.spec.kind_words() }
    }
}

impl ZoomTree {
    /// Build the tree of one step on one GPU (module docs): the operators of
    /// [`for_each_gpu_site`], placed where they sit.
    pub fn build(sc: &Scenario) -> ZoomTree {
        let mut layers: Vec<PendingLayer<'_>> = Vec::new();
        let mut rest: Vec<(Pending, Option<Scenario>)> = Vec::new();
        let mut last: Option<usize> = None;
        let model = &sc.model;
        let pipeline = for_each_gpu_site(sc, |g| {
            let totals = Totals { cost: g.op.cost * g.runs as f64, timing: g.one.times(g.runs as f64) };
            let pending = || Pending { op: *g.op, runs: g.runs, totals };
            let Site::Layer(spec) = g.site else {
                last = None;
                match rest.iter_mut().find(|(p, _)| p.op.kind == g.op.kind) {
                    Some((p, _)) => p.merge(g.runs, totals),
                    None => rest.push((pending(), own_scenario(&g, sc))),
                }
                return;
            };
            let i = match layers.iter().position(|l| std::ptr::eq(l.spec, spec) || l.spec == spec) {
                Some(i) => i,
                None => {
                    // The same shape in the step's model (a micro-batch shares its `Arc`).
                    let spec = model.layers().iter().find(|l| *l == spec).unwrap_or(&model.layers()[0]);
                    let scenario = own_scenario(&g, sc);
                    layers.push(PendingLayer { spec, count: g.layers, ops: Vec::new(), cursor: 0, scenario });
                    layers.len() - 1
                }
            };
            if last != Some(i) {
                layers[i].cursor = 0;
            }
            last = Some(i);
            let l = &mut layers[i];
            match l.ops.get_mut(l.cursor) {
                Some(p) if p.op.kind == g.op.kind => p.merge(g.runs, totals),
                _ => l.ops.insert(l.cursor, pending()),
            }
            l.cursor += 1;
        });
        let (first_layer, num_layers) = match (&pipeline, sc.parallel.stages.get(pipeline.map_or(0, |p| p.stage))) {
            (Some(_), Some(stage)) => (stage.first_layer as usize, stage.layers as usize),
            _ => (0, model.layers().len()),
        };
        let layer_group: Vec<usize> = model.layers()[first_layer..first_layer + num_layers]
            .iter()
            .map(|l| layers.iter().position(|p| p.spec == l).unwrap_or(0))
            .collect();
        let groups: Vec<LayerDetail> = layers.into_iter().map(|l| l.detail(sc)).collect();
        let mut stack = Totals::default();
        for g in &layer_group {
            stack.add(groups[*g].total);
        }
        let rest: Vec<OpNode> =
            rest.into_iter().map(|(p, own)| p.node(own.as_ref().unwrap_or(sc), None, Cost::ZERO)).collect();
        let mut rest_total = Totals::default();
        for n in &rest {
            rest_total.add(n.totals());
        }
        let mut step = stack;
        step.add(rest_total);
        let s = summarise(sc);
        let ledger = Totals { cost: s.cost, timing: s.timing };
        let check = StepCheck { model: stack, rest: rest_total, step, ledger, exact: same_totals(&step, &ledger) };
        ZoomTree {
            model: model.name.clone(),
            num_layers,
            first_layer,
            model_layers: model.layers().len(),
            gap: flops_gap(sc),
            groups,
            layer_group,
            stack,
            rest,
            step: check,
            pipeline,
        }
    }

    /// The detail of layer `i` (its index in the model), if the GPU shown runs it.
    pub fn layer(&self, i: usize) -> Option<&LayerDetail> {
        let j = i.checked_sub(self.first_layer)?;
        self.layer_group.get(j).map(|g| &self.groups[*g])
    }

    /// The layers on the GPU shown: (index in the model, its detail).
    pub fn layers(&self) -> impl Iterator<Item = (usize, &LayerDetail)> {
        self.layer_group.iter().enumerate().map(|(j, g)| (self.first_layer + j, &self.groups[*g]))
    }

    /// The part of the rest of the step of this kind (`OpKind::LmHead` …).
    pub fn rest_op(&self, kind: OpKind) -> Option<&OpNode> {
        self.rest.iter().find(|n| n.op.kind == kind)
    }

    /// The rest of the step as child rows: path = the operator's ledger name.
    pub fn rest_views(&self) -> Vec<ChildView> {
        self.rest.iter().map(|n| ChildView::of_op(n.op.kind.name(), n)).collect()
    }

    /// The layers on the GPU shown, in words: `layer.0 … layer.31` (or each of up to three).
    pub fn layers_phrase(&self) -> String {
        let (a, b) = (self.first_layer, self.first_layer + self.num_layers.saturating_sub(1));
        if self.num_layers > 3 {
            format!("layer.{a} … layer.{b}")
        } else {
            (a..=b).map(|i| format!("layer.{i}")).collect::<Vec<_>>().join(", ")
        }
    }

    /// The paths one can zoom into from the model, in execution order (the layers as a range).
    fn model_paths(&self) -> Vec<String> {
        let before = self.rest.iter().filter(|n| n.op.kind.block() == Block::Embedding);
        let after = self.rest.iter().filter(|n| n.op.kind.block() != Block::Embedding);
        let name = |n: &OpNode| n.op.kind.name().to_string();
        before.map(name).chain(std::iter::once(self.layers_phrase())).chain(after.map(name)).collect()
    }

    /// The node at `path` (`model`, `layer.0`, `layer.0.mlp` (the layer, its MLP marked),
    /// `layer.0.mlp.up`, `layer.0.mlp.up.tiles`, `lm_head`, `lm_head.tiles` …). An unknown path is
    /// an error listing the valid paths at the deepest level it reached.
    pub fn node(&self, path: &str) -> Result<NodeView<'_>> {
        let asked = path.trim();
        let fail = |accepted: Vec<String>| Error::unknown("zoom path", asked, accepted).about("path");
        let steps = path_steps(path);
        if steps.len() > MAX_PATH_STEPS {
            return Err(Error::invalid(
                "zoom path",
                crate::error::echo(asked),
                format!("at most {MAX_PATH_STEPS} steps below the model: layer.N.block.operator.tiles"),
            )
            .about("path"));
        }
        let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
        let Some((first, below)) = steps.split_first() else { return Ok(self.model_view()) };
        if let Some(i) = first.strip_prefix("layer.") {
            let idx: usize = i.parse().map_err(|_| fail(self.model_paths()))?;
            let detail = self.layer(idx).ok_or_else(|| fail(self.model_paths()))?;
            let layer = format!("layer.{idx}");
            let Some((block, below)) = below.split_first() else { return Ok(self.layer_view(idx, detail, None)) };
            let Some(b) = block_of(block) else {
                let mut accepted = vec![format!("{layer}.attn"), format!("{layer}.mlp")];
                accepted.extend(detail.ops.iter().map(|n| op_path(idx, n)));
                return Err(fail(accepted));
            };
            let Some((op, below)) = below.split_first() else { return Ok(self.layer_view(idx, detail, Some(b))) };
            let in_block = || detail.ops.iter().filter(|n| n.op.kind.block() == b);
            let n = in_block()
                .find(|n| n.name() == *op)
                .ok_or_else(|| fail(in_block().map(|n| op_path(idx, n)).collect()))?;
            return self.below_op(&op_path(idx, n), n, below, &fail);
        }
        let n = self.rest.iter().find(|n| n.op.kind.name() == *first).ok_or_else(|| fail(self.model_paths()))?;
        self.below_op(first, n, below, &fail)
    }

    /// The operator `n` at `path`, or its tiles (`below` = `["tiles"]`).
    fn below_op<'t>(
        &'t self,
        path: &str,
        n: &'t OpNode,
        below: &[&str],
        fail: &dyn Fn(Vec<String>) -> Error,
    ) -> Result<NodeView<'t>> {
        let op = self.op_view(path, n);
        match below {
            [] => Ok(op),
            ["tiles"] if !op.children.is_empty() => Ok(self.tiles_view(&format!("{path}.tiles"), n)),
            ["tiles"] => Err(fail(vec![format!("nothing below `{path}` ({})", op.leaf_reason())])),
            _ if op.children.is_empty() => Err(fail(vec![format!("nothing below `{path}` ({})", op.leaf_reason())])),
            _ => Err(fail(vec![format!("{path}.tiles")])),
        }
    }

    fn model_view(&self) -> NodeView<'_> {
        let children = self
            .layers()
            .map(|(i, d)| ChildView {
                kind: Some(d.kind.clone()),
                ..ChildView::exact(format!("layer.{i}"), Some(format!("layer.{i}")), &d.total)
            })
            .collect();
        NodeView::new("model".into(), Level::Model, self.stack, children, NodeDetail::Model(&self.gap))
    }

    fn layer_view<'t>(&'t self, index: usize, detail: &'t LayerDetail, focus: Option<Block>) -> NodeView<'t> {
        let children = detail.ops.iter().map(|n| ChildView::of_op(&op_path(index, n), n)).collect();
        NodeView::new(
            format!("layer.{index}"),
            Level::Layer,
            detail.total,
            children,
            NodeDetail::Layer { index, detail, focus },
        )
    }

    fn op_view<'t>(&'t self, path: &str, n: &'t OpNode) -> NodeView<'t> {
        let children = match n.tiles.totals() {
            Some(t) => vec![ChildView {
                name: "tiles".into(),
                path: Some(format!("{path}.tiles")),
                block: None,
                kind: None,
                count: tile_count(&n.tiles),
                flops: t.flops,
                executed_flops: t.executed_flops,
                bytes: t.bytes,
                cost: None,
                time_s: t.time_s,
                roofline_s: t.time_s,
            }],
            None => Vec::new(),
        };
        let mut v = NodeView::new(path.into(), Level::Op, n.totals(), children, NodeDetail::Op(n));
        if n.runs > 1 {
            // The tiles are one run's (one micro-batch): compare them with that run.
            v.addup = AddUp::of(&Totals { cost: n.op.cost, timing: n.timing }, &v.children);
        }
        v
    }

    fn tiles_view<'t>(&'t self, path: &str, n: &'t OpNode) -> NodeView<'t> {
        let mut children = Vec::new();
        let part = |name: &str, count: f64, flops: f64, executed: f64, bytes: f64| ChildView {
            name: name.into(),
            path: None,
            block: None,
            kind: None,
            count,
            flops,
            executed_flops: executed,
            bytes,
            cost: None,
            time_s: 0.0,
            roofline_s: 0.0,
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

/// Most steps a zoom path has below the model: `layer.N`, a block, an operator, `tiles`.
pub const MAX_PATH_STEPS: usize = 4;

/// The zoom path of a layer's operator: `layer.{index}.{block}.{short name}`.
pub fn op_path(index: usize, n: &OpNode) -> String {
    format!("layer.{index}.{}.{}", block_name(n.op.kind.block()), n.name())
}

/// The steps of a zoom path, lower-cased, without a leading `model` (`layer.N` is one step):
/// `Model.Layer.3.MLP.up` → `layer.3`, `mlp`, `up`.
pub fn path_steps(path: &str) -> Vec<String> {
    let norm = path.trim().to_ascii_lowercase();
    let rest = norm.strip_prefix("model").map(|r| r.trim_start_matches('.')).unwrap_or(&norm);
    let segs: Vec<&str> = rest.split('.').filter(|s| !s.is_empty()).collect();
    let mut out = Vec::with_capacity(segs.len());
    let mut i = 0;
    while i < segs.len() {
        if segs[i] == "layer" && i + 1 < segs.len() {
            out.push(format!("layer.{}", segs[i + 1]));
            i += 2;
        } else {
            out.push(segs[i].to_string());
            i += 1;
        }
    }
    out
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

    /// The tree's step against the ledger's rows (an independent sum: [`Ledger::build`]).
    fn assert_step_is_the_ledger(sc: &Scenario, tree: &ZoomTree) {
        let ledger = Ledger::build(sc);
        let rows: Cost = ledger.rows.iter().map(|r| r.cost).sum();
        let time: f64 = ledger.rows.iter().map(|r| r.timing.time_s).sum();
        let roofline: f64 = ledger.rows.iter().map(|r| r.timing.roofline_s).sum();
        let from_rows =
            Totals { cost: rows, timing: Timing { time_s: time, roofline_s: roofline, ..ledger.summary.timing } };
        let what = format!("{} {:?} {}", sc.model.name, sc.workload.phase, sc.parallel.describe());
        assert!(
            same_totals(&tree.step.step, &from_rows),
            "{what}: step {:?} vs ledger rows {:?}",
            tree.step.step,
            from_rows
        );
        assert!(tree.step.exact, "{what}: {:?}", tree.step);
        // Every operator the ledger has is in the tree, with its instances.
        let count = |kind: OpKind| -> u64 {
            let layers: u64 = tree
                .layers()
                .map(|(_, d)| d.ops.iter().filter(|n| n.op.kind == kind).map(|n| n.runs).sum::<u64>())
                .sum();
            layers + tree.rest.iter().filter(|n| n.op.kind == kind).map(|n| n.runs).sum::<u64>()
        };
        for r in &ledger.rows {
            assert_eq!(count(r.op), r.instances, "{what}: {}", r.op.name());
        }
    }

    /// Every exact level of the tree adds up exactly, and the step is the ledger's total.
    fn check_tree(sc: &Scenario) {
        let tree = ZoomTree::build(sc);
        let model = tree.node("model").unwrap();
        assert_exact(&model);
        assert_eq!(model.totals, tree.stack);
        assert_step_is_the_ledger(sc, &tree);
        let g = &tree.gap;
        let sum = g.two_params_flops + g.items.iter().map(|i| i.flops_per_token).sum::<f64>();
        assert!(
            (sum - g.flops_per_token).abs() <= 1e-9 * g.two_params_flops,
            "{} gap {sum} vs {}",
            sc.model.name,
            g.flops_per_token
        );
        let step = g.step_two_params_flops + g.items.iter().chain(&g.outside).map(|i| i.flops_per_token).sum::<f64>();
        assert!((step - g.step_flops_per_token).abs() <= 1e-9 * g.step_two_params_flops, "{} step gap", sc.model.name);
        for (i, _) in tree.layers() {
            let layer = tree.node(&format!("layer.{i}")).unwrap();
            assert_exact(&layer);
            for b in ["attn", "mlp"] {
                let focused = tree.node(&format!("layer.{i}.{b}")).unwrap();
                assert_eq!((focused.path.as_str(), focused.level), (layer.path.as_str(), Level::Layer));
            }
            for c in &layer.children {
                let op = tree.node(c.path.as_deref().unwrap()).unwrap();
                assert_eq!(op.level, Level::Op, "{}", op.path);
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
        for n in &tree.rest {
            assert_eq!(tree.node(n.op.kind.name()).unwrap().level, Level::Op);
        }
    }

    #[test]
    fn llama_3_8b_decode_walks_from_the_model_to_a_tile() {
        let sc = Scenario::default_decode();
        let tree = ZoomTree::build(&sc);
        let v = tree.node("layer.0.mlp.up.tiles").unwrap();
        assert_eq!(v.level, Level::Tiles);
        // Four magnifications: model, layer, operation, tile (the block is part of the name).
        assert_eq!(v.breadcrumb, ["model", "layer.0", "layer.0.mlp.up", "layer.0.mlp.up.tiles"]);
        let g = v.op().unwrap().tiles.gemm().unwrap();
        // Decode: M = 1 row in a tile of 16 or more.
        assert_eq!((g.shape.m, g.shape.n, g.shape.k), (1, 14336, 4096));
        assert_eq!(g.tiles_m, 1);
        assert!(g.padded_flops >= 16.0 * g.flops);
        // Every layer is its own node; the 32 identical layers share one detail.
        assert_eq!(tree.num_layers, 32);
        assert_eq!(tree.groups.len(), 1);
        check_tree(&sc);
    }

    #[test]
    fn the_model_level_is_the_layer_stack_and_the_rest_of_the_step_sits_beside_it() {
        // The Powers of Ten walk-through: the model level sums the layer stack; the embedding and the vocabulary
        // projection sit outside it. Llama 3 8B decode: 32 layers of 470 MFLOP each; the step
        // adds the embedding (a gather, 0 FLOP), the final norm and the LM head (2 · 4,096 ·
        // 128,256 = 1.05 GFLOP).
        let tree = ZoomTree::build(&Scenario::default_decode());
        let model = tree.node("model").unwrap();
        assert_eq!(model.children.len(), 32);
        assert!(model.children.iter().all(|c| c.name.starts_with("layer.")));
        let layer = tree.layer(0).unwrap().total.cost.flops;
        assert_eq!(model.totals.cost.flops, 32.0 * layer);
        let rest: Vec<&str> = tree.rest.iter().map(|n| n.op.kind.name()).collect();
        assert_eq!(rest, ["embedding", "final_norm", "lm_head"]);
        assert_eq!(tree.rest_op(OpKind::LmHead).unwrap().cost.flops, 2.0 * 4096.0 * 128_256.0);
        let c = &tree.step;
        assert_eq!(c.step.cost.flops, c.model.cost.flops + c.rest.cost.flops);
        assert!(c.exact);
        assert!(c.model.cost.flops < c.step.cost.flops);
        // The rest of the step's parts are operators beside the model.
        let lm = tree.node("lm_head").unwrap();
        assert_eq!(
            (lm.level, lm.breadcrumb.as_slice()),
            (Level::Op, &["model".to_string(), "lm_head".to_string()][..])
        );
    }

    #[test]
    fn under_tensor_parallelism_the_tree_holds_every_operator_of_the_ledger() {
        // TP 2: the embedding and the LM head are vocab-parallel and followed by their
        // collectives; before, the tree kept only the last operator of each (the collective),
        // 7.52 GFLOP where the ledger has 8.05.
        let sc = crate::testing::scenario(&[("tp", "2")]);
        let tree = ZoomTree::build(&sc);
        let rest: Vec<&str> = tree.rest.iter().map(|n| n.op.kind.name()).collect();
        assert_eq!(rest, ["embedding", "all_reduce_embedding", "final_norm", "lm_head", "all_gather_logits"]);
        let ledger = Ledger::build(&sc).summary;
        assert_eq!(tree.step.step.cost.flops, ledger.cost.flops);
        assert!(tree.node("layer.0.attn.all_reduce").is_ok());
        assert!(tree.node("all_gather_logits").unwrap().op().is_some());
        assert_step_is_the_ledger(&sc, &tree);
    }

    #[test]
    fn with_pipeline_stages_the_tree_is_one_gpu_of_the_busiest_stage() {
        // PP 2, batch 5: two micro-batches (3 + 2 sequences); the last stage (layers 16–31 and
        // the head) is the busiest. Each operator is summed over the two micro-batches.
        let sc = crate::testing::scenario(&[("pp", "2"), ("batch", "5")]);
        let tree = ZoomTree::build(&sc);
        let p = tree.pipeline.unwrap();
        assert_eq!((p.stage, tree.first_layer, tree.num_layers), (1, 16, 16));
        assert!(tree.layer(0).is_none() && tree.layer(16).is_some());
        let e = tree.node("layer.0").unwrap_err().to_string();
        assert_eq!(e, "unknown zoom path `layer.0`; accepted: layer.16 … layer.31, final_norm, lm_head, pipeline_wait");
        let up = tree.node("layer.16.mlp.up").unwrap();
        let n = up.op().unwrap();
        assert_eq!(n.runs, 2);
        // The two runs: 3 rows and 2 rows of 14,336 × 4,096.
        assert_eq!(n.cost.flops, 2.0 * 5.0 * 14_336.0 * 4096.0);
        assert_eq!(n.op.cost.flops, 2.0 * 3.0 * 14_336.0 * 4096.0);
        // The tiles are one run's, and the operator's add-up compares them with that run.
        assert_eq!(n.tiles.gemm().unwrap().shape.m, 3);
        assert_eq!(up.addup.parent_flops, n.op.cost.flops);
        assert_eq!(tree.rest.last().unwrap().op.kind, OpKind::PipelineWait);
        assert_step_is_the_ledger(&sc, &tree);
        // The first stage holds the embedding and sends its activations.
        let sc =
            crate::testing::scenario(&[("pp", "2"), ("phase", "prefill"), ("ctx", "512"), ("model", "gemma-2-9b")]);
        let tree = ZoomTree::build(&sc);
        assert_step_is_the_ledger(&sc, &tree);
    }

    /// Every preset × the layouts that resolve (TP 1/2/4/8 × PP 1/2 × EP 1/2 for MoE) × phase:
    /// the step is the ledger's total and holds its every operator.
    #[test]
    fn the_step_is_the_ledger_at_every_tp_pp_ep_layout() {
        let mut checked = 0;
        for p in builtin_presets() {
            let moe = p.spec().is_moe();
            for tp in ["1", "2", "4", "8"] {
                for pp in ["1", "2"] {
                    for ep in if moe { &["1", "2"][..] } else { &["1"][..] } {
                        for phase in ["decode", "prefill"] {
                            let req = ScenarioRequest {
                                model: Some(p.name.clone()),
                                phase: Some(phase.into()),
                                batch: Some("4".into()),
                                ctx: Some("300".into()),
                                tp: Some(tp.into()),
                                pp: Some(pp.into()),
                                ep: Some(ep.to_string()),
                                ..Default::default()
                            };
                            let Ok(sc) = req.resolve(&Catalog::builtin()) else { continue };
                            let tree = ZoomTree::build(&sc);
                            assert_step_is_the_ledger(&sc, &tree);
                            checked += 1;
                        }
                    }
                }
            }
        }
        // Not a vacuous sweep: most layouts of most presets resolve.
        assert!(checked > 300, "{checked} layouts checked");
    }

    #[test]
    fn the_gap_to_two_times_params_is_explained() {
        // Llama 3 8B decode at 2048: attention over 2,049 positions: 32 layers · 2·32 heads ·
        // (128 + 128) · 2,049 = 1.074 GFLOP per token. Outside the model, the embedding table
        // (128,256 × 4,096 = 525,336,576 parameters) does no multiply-adds: −1.05 GFLOP per
        // token; the untied LM head runs for every decode token: 2·525,336,576 FLOPs, exactly its
        // 2 × params (net 0).
        let tree = ZoomTree::build(&Scenario::default_decode());
        let g = &tree.gap;
        let item = |k: GapKind| g.items.iter().chain(&g.outside).find(|i| i.kind == k).unwrap().flops_per_token;
        assert_eq!(item(GapKind::EmbeddingGather), -2.0 * 525_336_576.0);
        assert_eq!(item(GapKind::LmHead), 0.0);
        assert_eq!(item(GapKind::InactiveExperts), 0.0);
        assert_eq!(item(GapKind::AttentionScores), 32.0 * 2.0 * 32.0 * 256.0 * 2049.0);
        // The model's FLOPs per token are the stack's: the model node's FLOPs ÷ tokens.
        assert_eq!(g.flops_per_token, tree.stack.cost.flops / g.tokens);
        assert_eq!(g.two_params_flops, 2.0 * g.stack_params as f64);
        assert_eq!(g.step_flops_per_token, tree.step.step.cost.flops / g.tokens);
        // Prefill of 4,096 tokens: the LM head runs for the last token only.
        let tree = ZoomTree::build(&scenario("llama-3-8b", "prefill", 1, 4096));
        let lm = tree.gap.outside[2].flops_per_token;
        assert_eq!(lm, 2.0 * 525_336_576.0 / 4096.0 - 2.0 * 525_336_576.0);
        // MoE: Mixtral routes each token to 2 of 8 experts; the other 6 are the gap.
        let tree = ZoomTree::build(&scenario("mixtral-8x7b", "decode", 1, 2048));
        let inactive = tree.gap.items[0].flops_per_token;
        // 32 layers · 6 experts · 3 · 4096 · 14336 parameters.
        assert_eq!(inactive, -2.0 * 32.0 * 6.0 * 3.0 * 4096.0 * 14336.0);
        // Under TP the gap is the whole model's, as on one GPU.
        let tp = ZoomTree::build(&crate::testing::scenario(&[("tp", "2")]));
        assert_eq!(tp.gap, ZoomTree::build(&Scenario::default_decode()).gap);
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
    fn unknown_paths_list_the_valid_paths() {
        let tree = ZoomTree::build(&Scenario::default_decode());
        let e = tree.node("layer.0.mlp.upp").unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown zoom path `layer.0.mlp.upp`; did you mean `layer.0.mlp.up`? accepted: layer.0.mlp.norm, layer.0.mlp.gate, layer.0.mlp.up, layer.0.mlp.act, layer.0.mlp.down, layer.0.mlp.residual"
        );
        let e = tree.node("layer.32").unwrap_err().to_string();
        assert_eq!(e, "unknown zoom path `layer.32`; accepted: embedding, layer.0 … layer.31, final_norm, lm_head");
        let e = tree.node("layer.0.ffn").unwrap_err().to_string();
        assert!(
            e.starts_with("unknown zoom path `layer.0.ffn`; accepted: layer.0.attn, layer.0.mlp, layer.0.attn.norm"),
            "{e}"
        );
        let e = tree.node("layer.0.attn.norm.tiles").unwrap_err().to_string();
        assert!(e.contains("nothing below `layer.0.attn.norm` (an elementwise operator has no tiles)"), "{e}");
        assert!(tree.node("embedding.tiles").is_err());
        assert!(tree.node("layer.x").is_err());
        // A block's path is the layer level with the block marked.
        let v = tree.node("Model.Layer.3.MLP").unwrap();
        assert_eq!((v.path.as_str(), v.level), ("layer.3", Level::Layer));
        assert!(matches!(v.detail, NodeDetail::Layer { index: 3, focus: Some(Block::Mlp), .. }));
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
