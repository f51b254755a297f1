//! Why the model's FLOPs per token are not 2 × its parameters, part by part.

use super::{is_attention_core, LayerDetail, OpNode};
use crate::scenario::Scenario;
use serde::Serialize;

/// What makes FLOPs per token differ from 2 × parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GapKind {
    /// The embedding is a gather: its parameters do no multiply-adds.
    EmbeddingGather,
    /// The LM head runs for the tokens that get logits only (and, when tied, reuses the table).
    LmHead,
    /// MoE experts a token is not routed to.
    InactiveExperts,
    /// QKᵀ and P·V over the context: FLOPs without parameters.
    AttentionScores,
    /// Norms, RoPE, activations, residual adds, softmax: FLOPs without 2 per parameter.
    Elementwise,
    /// The remaining weights' GEMM FLOPs against 2 × their parameters (norm scales and biases are
    /// parameters without 2 FLOPs each; MLA's absorbed projections; routing expectations).
    LayerWeights,
}

/// One line of the gap: FLOPs per token it adds (negative: removes) relative to 2 × parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GapItem {
    /// Which part.
    pub kind: GapKind,
    /// FLOPs per token, signed.
    pub flops_per_token: f64,
}

/// FLOPs per token against the 2 × parameters shortcut, decomposed so that
/// `2·params + Σ items = flops_per_token` exactly (up to rounding):
///
/// ```text
/// embedding gather   = embedding FLOPs/T − 2·embedding params
/// lm_head            = lm_head FLOPs/T − 2·untied lm_head params
/// inactive experts   = −2·(layer params − active layer params)
/// attention scores   = attention-core FLOPs/T
/// elementwise        = elementwise FLOPs/T (layers and final norm)
/// layer weights      = layer GEMM FLOPs/T − 2·(active layer params + final-norm params)
/// ```
///
/// with `T` the tokens through the stack in this step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FlopsGap {
    /// Tokens through the layer stack.
    pub tokens: f64,
    /// Total parameters.
    pub params: u64,
    /// Parameters touched by one token (MoE: k experts).
    pub active_params: u64,
    /// Parameters of the layer stack alone.
    pub stack_params: u64,
    /// Model FLOPs ÷ tokens.
    pub flops_per_token: f64,
    /// 2 × parameters.
    pub two_params_flops: f64,
    /// The parts of the difference.
    pub items: [GapItem; 6],
}

impl FlopsGap {
    /// FLOPs per token − 2 × parameters.
    pub fn gap_flops_per_token(&self) -> f64 {
        self.flops_per_token - self.two_params_flops
    }
}

pub(super) fn flops_gap(
    sc: &Scenario,
    groups: &[LayerDetail],
    embedding: &OpNode,
    final_norm: Option<&OpNode>,
    lm_head: &OpNode,
    total_flops: f64,
) -> FlopsGap {
    let m = &sc.model;
    let t = sc.workload.step_tokens();
    let (mut gemm, mut attn, mut elementwise) = (0.0, 0.0, 0.0);
    for g in groups {
        let n = g.count as f64;
        for o in &g.ops {
            let f = o.op.cost.flops * n;
            if o.op.gemm.is_some() {
                gemm += f;
            } else if is_attention_core(o.op.kind) {
                attn += f;
            } else {
                elementwise += f;
            }
        }
    }
    elementwise += final_norm.map_or(0.0, |n| n.op.cost.flops);
    let h = m.hidden_size;
    let (mut stack, mut stack_active) = (0u64, 0u64);
    for (l, n) in m.layer_groups() {
        let p = l.params(h);
        stack += n * p.total;
        stack_active += n * p.active;
    }
    let two = |p: u64| 2.0 * p as f64;
    let item = |kind, flops_per_token| GapItem { kind, flops_per_token };
    let items = [
        item(GapKind::EmbeddingGather, embedding.op.cost.flops / t - two(m.embedding_params())),
        item(GapKind::LmHead, lm_head.op.cost.flops / t - two(m.lm_head_params())),
        item(GapKind::InactiveExperts, -two(stack - stack_active)),
        item(GapKind::AttentionScores, attn / t),
        item(GapKind::Elementwise, elementwise / t),
        item(GapKind::LayerWeights, gemm / t - two(stack_active + m.final_norm_params())),
    ];
    FlopsGap {
        tokens: t,
        params: m.total_params(),
        active_params: m.active_params(),
        stack_params: stack,
        flops_per_token: total_flops / t,
        two_params_flops: two(m.total_params()),
        items,
    }
}
