//! The minor operators: norms, residual adds, the embedding gather and the head, elementwise on
//! the vector units with the per-element FLOP conventions of [`crate::conventions`].

use super::{Op, OpBuilder, OpKind};
use crate::conventions::{LAYERNORM_FLOPS_PER_ELEMENT, RESIDUAL_FLOPS_PER_ELEMENT, RMSNORM_FLOPS_PER_ELEMENT};
use crate::cost::Cost;
use crate::model::NormKind;
use crate::precision::MathFormat;

/// FLOPs per element of a norm ([`RMSNORM_FLOPS_PER_ELEMENT`], [`LAYERNORM_FLOPS_PER_ELEMENT`]).
pub(super) fn norm_flops(kind: NormKind) -> f64 {
    match kind {
        NormKind::Rms => RMSNORM_FLOPS_PER_ELEMENT,
        NormKind::Layer => LAYERNORM_FLOPS_PER_ELEMENT,
    }
}

impl OpBuilder<'_> {
    /// Elementwise over `elems` elements: `flops_per` FLOPs each, `tensors` element-sized reads and
    /// writes (the last one the output written), plus `param_bytes` of weights.
    pub(super) fn elementwise(&self, kind: OpKind, elems: f64, flops_per: f64, tensors: f64, param_bytes: f64) -> Op {
        let cost = Cost {
            flops: elems * flops_per,
            weight_bytes: param_bytes,
            activation_bytes: elems * tensors * self.a,
            activation_written_bytes: elems * self.a,
            ..Cost::ZERO
        };
        Op::plain(kind, cost, MathFormat::Vector)
    }

    pub(super) fn norm(&self, kind: OpKind, norm: NormKind, dim: u64, copies: u32) -> Op {
        let param_bytes = norm.params(dim) as f64 * self.sc.weights.attention.unquantised().bytes();
        let mut op = self.elementwise(kind, self.tokens * dim as f64, norm_flops(norm), 2.0, param_bytes);
        op.cost = op.cost * f64::from(copies);
        op
    }

    /// The embedding gather (plus learned positions and OPT's project_in).
    #[inline]
    pub fn embedding(&self, f: &mut impl FnMut(Op)) {
        // PARALLEL: this GPU's share (vocab-parallel table) and the all-reduce after it.
        if !self.sc.parallel.is_single() {
            let shard = super::shard::OpShard::outside_layers(self.sc, self.tokens);
            return self.embedding_ops(&mut |op| shard.emit(op, f));
        }
        self.embedding_ops(f)
    }

    fn embedding_ops(&self, f: &mut impl FnMut(Op)) {
        if self.seed {
            return;
        }
        let m = &self.sc.model;
        let e = &m.embedding;
        let t = self.tokens;
        let eb = self.sc.weights.embedding.bytes();
        let h = self.hidden as f64;
        let mut cost = Cost {
            flops: if e.positions > 0 { t * h * RESIDUAL_FLOPS_PER_ELEMENT } else { 0.0 },
            weight_bytes: t * e.dim as f64 * eb + if e.positions > 0 { t * h * eb } else { 0.0 },
            activation_bytes: t * h * self.a,
            activation_written_bytes: t * h * self.a,
            ..Cost::ZERO
        };
        if e.dim != self.hidden {
            cost += self.gemm(OpKind::Embedding, self.dense(t, self.hidden, e.dim, self.sc.weights.embedding)).cost;
        }
        f(Op::plain(OpKind::Embedding, cost, MathFormat::Vector));
    }

    /// The final norm and the LM head.
    #[inline]
    pub fn head(&self, f: &mut impl FnMut(Op)) {
        // PARALLEL: this GPU's share (vocab-parallel LM head) and the gather of the logits.
        if !self.sc.parallel.is_single() {
            let shard = super::shard::OpShard::outside_layers(self.sc, self.tokens);
            return self.head_ops(&mut |op| shard.emit(op, f));
        }
        self.head_ops(f)
    }

    fn head_ops(&self, f: &mut impl FnMut(Op)) {
        let m = &self.sc.model;
        let streams = m.layers().first().map_or(1, |l| l.residual_streams);
        if streams > 1 && !self.seed {
            f(self.hyper_head(streams));
        }
        if let (Some(norm), false) = (m.final_norm, self.seed) {
            f(self.norm(OpKind::FinalNorm, norm, self.hidden, 1));
        }
        let rows = self.sc.workload.logit_tokens();
        let mut op =
            self.gemm(OpKind::LmHead, self.dense(rows, m.embedding.vocab, m.lm_head_in(), self.sc.weights.lm_head));
        if m.lm_head_in() != self.hidden {
            op.cost +=
                self.gemm(OpKind::LmHead, self.dense(rows, m.lm_head_in(), self.hidden, self.sc.weights.lm_head)).cost;
        }
        f(op);
    }
}
