//! Where other weights flip an operator from memory- to compute-bound: the Powers of Ten walk-through's third
//! experiment ("Drop the weights to INT4. Bytes fall, intensity rises, and an operation can flip
//! from memory-bound to compute-bound without its FLOPs changing at all"), as a search over the
//! decode batch.
//!
//! The operator is the zoom tree's node at `layer.{layer}.…` ([`OpNode`](super::OpNode)'s cost
//! and timing: [`for_each_gpu_site`]'s operators of that layer, summed over the micro-batches),
//! timed by the scenario's clock, so the bound found is the one the zoom and the explorer show
//! for that node at that batch.

use crate::cost::Cost;
use crate::memory::at_uniform;
use crate::ops::OpKind;
use crate::parallel::{for_each_gpu_site, Site};
use crate::precision::MathFormat;
use crate::roofline::{Bound, Timing};
use crate::scenario::Scenario;
use crate::workload::{Contexts, Phase, Workload};
use serde::Serialize;

/// Largest decode batch the search tries (powers of two from 1).
pub(super) const MAX_FLIP_BATCH: u64 = 16_384;

/// Context of each sequence when the scenario holds a mix (no single context to keep).
pub(super) const MIX_FLIP_TOKENS: u64 = 2048;

/// One operator at one batch with one weight storage.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FlipSide {
    /// FLOPs and bytes of the operator in the layer.
    pub cost: Cost,
    /// Its time by the scenario's clock: the compute and memory parts decide the bound.
    pub timing: Timing,
    /// `memory` or `compute` (of [`Timing::bound`]).
    pub bound: Bound,
    /// FLOPs per HBM byte (`None` when nothing moves).
    pub intensity: Option<f64>,
    /// The math format it runs at.
    pub math: MathFormat,
}

/// The smallest power-of-two decode batch at which the operator is compute-bound with the other
/// weights, and its two sides there.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Flip {
    /// The operator.
    pub kind: OpKind,
    /// The layer it is read in.
    pub layer: usize,
    /// The decode batch.
    pub batch: u64,
    /// Cached tokens per sequence.
    pub tokens: u64,
    /// With the scenario's weights: memory-bound.
    pub from: FlipSide,
    /// With the other weights: compute-bound.
    pub to: FlipSide,
}

/// The operator `kind` in layer `layer` of `sc`: its cost and time summed as the zoom tree's node
/// sums them (all its runs), and its math format; `None` when the GPU shown does not run it.
pub(super) fn layer_op(sc: &Scenario, layer: usize, kind: OpKind) -> Option<(Cost, Timing, MathFormat)> {
    let spec = sc.model.layers().get(layer)?;
    let mut found: Option<(Cost, Timing, MathFormat)> = None;
    let pipeline = for_each_gpu_site(sc, |g| {
        let Site::Layer(s) = g.site else { return };
        if g.op.kind != kind || s != spec {
            return;
        }
        let (cost, timing) = (g.op.cost * g.runs as f64, g.one.times(g.runs as f64));
        match &mut found {
            Some((c, t, _)) => {
                *c += cost;
                *t += timing;
            }
            None => found = Some((cost, timing, g.op.math)),
        }
    });
    // With pipeline stages the GPU shown is one of the busiest stage's: it runs its layers only.
    let stage = sc.parallel.stages.get(pipeline.map_or(0, |p| p.stage))?;
    let first = stage.first_layer as usize;
    found.filter(|_| (first..first + stage.layers as usize).contains(&layer))
}

/// `sc` in decode at `batch` sequences of `tokens` cached tokens.
fn decode_at(sc: &Scenario, batch: u64, tokens: u64) -> Scenario {
    let s = sc.with_workload(Workload { phase: Phase::Decode, ..sc.workload.clone() });
    at_uniform(&s, batch, tokens)
}

fn side(sc: &Scenario, layer: usize, kind: OpKind) -> Option<FlipSide> {
    let (cost, timing, math) = layer_op(sc, layer, kind)?;
    Some(FlipSide { cost, timing, bound: timing.bound(), intensity: cost.intensity(), math })
}

/// Search the decode batch (1, 2, 4, … `MAX_FLIP_BATCH`) for the first at which operator `kind`
/// of layer `layer` is compute-bound under `to` (the same scenario with other weights), and
/// return it when the operator is memory-bound there under `from`; `None` when no batch flips it
/// (it is compute-bound in both first, or never compute-bound) or the GPU shown does not run it.
/// Contexts: the scenario's own with one context, `MIX_FLIP_TOKENS` for a mix. Both scenarios
/// keep their clock: the bound is the one that clock gives.
pub fn weight_flip(from: &Scenario, to: &Scenario, layer: usize, kind: OpKind) -> Option<Flip> {
    let tokens = match from.workload.contexts {
        Contexts::Uniform { tokens, .. } => tokens,
        _ => MIX_FLIP_TOKENS,
    };
    let mut batch = 1u64;
    while batch <= MAX_FLIP_BATCH {
        let t = side(&decode_at(to, batch, tokens), layer, kind)?;
        if t.bound == Bound::Compute {
            let f = side(&decode_at(from, batch, tokens), layer, kind)?;
            return (f.bound == Bound::Memory).then_some(Flip { kind, layer, batch, tokens, from: f, to: t });
        }
        batch *= 2;
    }
    None
}
