//! Why the model's FLOPs per token are not 2 × its parameters, part by part.

use super::is_attention_core;
use crate::kinds::OpClass;
use crate::layout::Parallelism;
use crate::ops::OpBuilder;
use crate::scenario::Scenario;
use serde::Serialize;
use std::sync::Arc;

/// What makes FLOPs per token differ from 2 × parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GapKind {
    /// MoE experts a token is not routed to.
    InactiveExperts,
    /// QKᵀ and P·V over the context: FLOPs without parameters.
    AttentionScores,
    /// The layers' norms, RoPE, activations, residual adds, softmax: FLOPs without 2 per
    /// parameter.
    Elementwise,
    /// The remaining weights' GEMM FLOPs against 2 × their parameters (norm scales and biases are
    /// parameters without 2 FLOPs each; MLA's absorbed projections; routing expectations).
    LayerWeights,
    /// Outside the model: the embedding is a gather, its parameters do no multiply-adds.
    EmbeddingGather,
    /// Outside the model: the final norm's FLOPs against 2 × its scale parameters.
    FinalNorm,
    /// Outside the model: the LM head runs for the tokens that get logits only (and, when tied,
    /// reuses the table).
    LmHead,
}

/// One line of the gap: FLOPs per token it adds (negative: removes) relative to 2 × parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GapItem {
    /// Which part.
    pub kind: GapKind,
    /// FLOPs per token, signed.
    pub flops_per_token: f64,
}

/// FLOPs per token of the layer stack (the model level) against 2 × its parameters, and of the
/// step against 2 × all parameters, decomposed so that (up to rounding)
///
/// ```text
/// flops_per_token      = 2·stack params + Σ items
/// step_flops_per_token = 2·params + Σ items + Σ outside
///
/// items:   inactive experts = −2·(stack params − active stack params)
///          attention scores = attention-core FLOPs/T
///          elementwise      = the layers' elementwise FLOPs/T
///          layer weights    = layer GEMM FLOPs/T − 2·active stack params
/// outside: embedding gather = embedding FLOPs/T − 2·embedding params
///          final norm       = final-norm FLOPs/T − 2·final-norm params
///          lm_head          = lm_head FLOPs/T − 2·untied lm_head params
/// ```
///
/// with `T` the tokens through the stack in this step. The FLOPs are the whole model's, as on
/// one GPU: in a parallel deployment each GPU computes a share, the parameters are the model's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FlopsGap {
    /// Tokens through the layer stack.
    pub tokens: f64,
    /// Total parameters.
    pub params: u64,
    /// Parameters touched by one token (MoE: k experts).
    pub active_params: u64,
    /// Parameters of the layer stack.
    pub stack_params: u64,
    /// Parameters of the layer stack touched by one token.
    pub stack_active_params: u64,
    /// The layer stack's FLOPs ÷ tokens.
    pub flops_per_token: f64,
    /// 2 × the layer stack's parameters.
    pub two_params_flops: f64,
    /// The parts of the stack's difference.
    pub items: [GapItem; 4],
    /// The step's FLOPs ÷ tokens: the stack's and the rest's.
    pub step_flops_per_token: f64,
    /// 2 × all parameters.
    pub step_two_params_flops: f64,
    /// What the rest of the step adds against 2 × its parameters.
    pub outside: [GapItem; 3],
}

impl FlopsGap {
    /// The stack's FLOPs per token − 2 × its parameters.
    pub fn gap_flops_per_token(&self) -> f64 {
        self.flops_per_token - self.two_params_flops
    }
}

/// The gap of the whole model under `sc`'s workload (module docs of [`FlopsGap`]).
pub(super) fn flops_gap(sc: &Scenario) -> FlopsGap {
    let m = &sc.model;
    let one_gpu = Scenario { parallel: Arc::new(Parallelism::single(m)), ..sc.clone() };
    let b = OpBuilder::new(&one_gpu);
    let t = sc.workload.step_tokens();
    let (mut gemm, mut attn, mut elementwise) = (0.0, 0.0, 0.0);
    for (layer, n) in m.layer_groups() {
        let n = n as f64;
        b.layer(layer, &mut |o| {
            let f = o.cost.flops * n;
            if o.gemm.is_some() {
                gemm += f;
            } else if is_attention_core(o.kind) {
                attn += f;
            } else {
                elementwise += f;
            }
        });
    }
    let (mut embedding, mut final_norm, mut lm_head) = (0.0, 0.0, 0.0);
    b.embedding(&mut |o| embedding += o.cost.flops);
    // The head's elementwise work is its final norm; the rest of its FLOPs are the LM head's
    // (its communication and the host add none).
    b.head(&mut |o| match o.kind.facts().class {
        OpClass::Elementwise => final_norm += o.cost.flops,
        OpClass::Gather
        | OpClass::Gemm
        | OpClass::FusedAttention
        | OpClass::UnfusedAttention
        | OpClass::Recurrence
        | OpClass::Scoring
        | OpClass::Collective(..)
        | OpClass::PipelineSend
        | OpClass::PipelineWait
        | OpClass::Host => lm_head += o.cost.flops,
    });
    let h = m.hidden_size;
    let (mut stack, mut stack_active) = (0u64, 0u64);
    for (l, n) in m.layer_groups() {
        let p = l.params(h);
        stack += n * p.total;
        stack_active += n * p.active;
    }
    let two = |p: u64| 2.0 * p as f64;
    let item = |kind, flops_per_token| GapItem { kind, flops_per_token };
    let stack_flops = gemm + attn + elementwise;
    FlopsGap {
        tokens: t,
        params: m.total_params(),
        active_params: m.active_params(),
        stack_params: stack,
        stack_active_params: stack_active,
        flops_per_token: stack_flops / t,
        two_params_flops: two(stack),
        items: [
            item(GapKind::InactiveExperts, -two(stack - stack_active)),
            item(GapKind::AttentionScores, attn / t),
            item(GapKind::Elementwise, elementwise / t),
            item(GapKind::LayerWeights, gemm / t - two(stack_active)),
        ],
        step_flops_per_token: (stack_flops + embedding + final_norm + lm_head) / t,
        step_two_params_flops: two(m.total_params()),
        outside: [
            item(GapKind::EmbeddingGather, embedding / t - two(m.embedding_params())),
            item(GapKind::FinalNorm, final_norm / t - two(m.final_norm_params())),
            item(GapKind::LmHead, lm_head / t - two(m.lm_head_params())),
        ],
    }
}
