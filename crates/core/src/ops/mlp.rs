//! Feed-forward operators: the dense MLP (gated or not) and the MoE layer (router, routed
//! experts, their combine, shared experts).

use super::{MoeShape, Op, OpBuilder, OpKind};
use crate::conventions::{EXPERT_COMBINE_FLOPS_PER_ELEMENT, GATE_PRODUCT_FLOPS_PER_ELEMENT};
use crate::cost::Cost;
use crate::model::{DenseMlp, MoeMlp};
use crate::moe::expected_experts_touched;
use crate::precision::{MathFormat, Precision};

impl OpBuilder<'_> {
    pub(super) fn dense_mlp(&self, m: &DenseMlp, w: Precision, kinds: MlpKinds, f: &mut impl FnMut(Op)) {
        let (t, h, i) = (self.tokens, self.hidden, m.intermediate);
        if self.seed {
            let mats = if m.gated { 3 } else { 2 };
            f(self.gemm(kinds.seed, self.dense(t, mats * i, h, w)));
            return;
        }
        self.mlp_body(t, m, w, 1.0, kinds, self.hidden, f);
    }

    /// Gate/up, activation and down for `assignments` (token, MLP) pairs over `copies` weight
    /// sets, each reading and writing `width` values a token (the hidden size, or a latent MoE's
    /// latent width).
    #[allow(clippy::too_many_arguments)]
    fn mlp_body(
        &self,
        assignments: f64,
        m: &DenseMlp,
        w: Precision,
        copies: f64,
        kinds: MlpKinds,
        width: u64,
        f: &mut impl FnMut(Op),
    ) {
        let (h, i) = (width, m.intermediate);
        if m.gated {
            if m.fused_gate_up {
                f(self.gemm(kinds.gate_up, self.dense(assignments, 2 * i, h, w).with_bias(m.bias).split(copies)));
            } else {
                // One merged gate/up GEMM where the engine merges them (`merge_n`).
                let merged = |op: Op| Op { merge_n: Some(2 * i), ..op };
                f(merged(self.gemm(kinds.gate, self.dense(assignments, i, h, w).with_bias(m.bias).split(copies))));
                f(merged(self.gemm(kinds.up, self.dense(assignments, i, h, w).with_bias(m.bias).split(copies))));
            }
            let per = m.activation.flops_per_element() + GATE_PRODUCT_FLOPS_PER_ELEMENT;
            f(self.elementwise(kinds.act, assignments * i as f64, per, 3.0, 0.0));
        } else {
            f(self.gemm(kinds.up, self.dense(assignments, i, h, w).with_bias(m.bias).split(copies)));
            f(self.elementwise(kinds.act, assignments * i as f64, m.activation.flops_per_element(), 2.0, 0.0));
        }
        f(self.gemm(kinds.down, self.dense(assignments, h, i, w).with_bias(m.bias).split(copies)));
    }

    pub(super) fn moe(&self, m: &MoeMlp, f: &mut impl FnMut(Op)) {
        let (t, h) = (self.tokens, self.hidden);
        let wts = &self.sc.weights;
        let mut router = self.gemm(OpKind::Router, self.dense(t, m.experts, h, wts.router).with_bias(m.router_bias));
        if m.shared_gate {
            router.cost += self.gemm(OpKind::Router, self.dense(t, 1, h, wts.router)).cost;
        }
        f(router);
        // Expected distinct experts touched by the step's tokens (prefill counts tokens). The
        // routing was checked against every MoE layer by `Scenario::new`; NaN would surface loudly.
        let touched = expected_experts_touched(m.experts, m.top_k, t, &self.sc.routing).unwrap_or(f64::NAN);
        let assignments = t * m.top_k as f64;
        let we = wts.experts;
        // A latent MoE projects every token down before its experts and back up after them.
        let width = m.expert_width(h);
        if let Some(l) = m.latent {
            f(self.gemm(OpKind::LatentDown, self.dense(t, l.dim, h, wts.shared_experts)));
        }
        // The layer the routed experts' operators run in, as the measured MoE kernels are keyed.
        let shape = MoeShape {
            hidden: width,
            intermediate: m.expert.intermediate,
            top_k: m.top_k,
            experts: m.experts,
            gated: m.expert.gated,
            tokens: t,
            tp: 1,
            ep: 1,
            balanced: matches!(self.sc.routing, crate::moe::Routing::Uniform),
            weights: we,
            math: self.math(crate::precision::gemm_math(we, self.sc.workload.gemm_activations)),
        };
        let experts = &mut |op: Op| f(Op { moe: Some(shape), ..op });
        if self.seed {
            let mats = if m.expert.gated { 3 } else { 2 };
            experts(self.gemm(
                OpKind::ExpertUp,
                self.dense(assignments, mats * m.expert.intermediate, width, we).split(touched),
            ));
        } else {
            self.mlp_body(assignments, &m.expert, we, touched, EXPERT_KINDS, width, experts);
            // Weighted sum of the k expert outputs per token.
            let cost = Cost {
                flops: EXPERT_COMBINE_FLOPS_PER_ELEMENT * assignments * width as f64,
                activation_bytes: (assignments + t) * width as f64 * self.a,
                activation_written_bytes: t * width as f64 * self.a,
                ..Cost::ZERO
            };
            experts(Op::plain(OpKind::ExpertCombine, cost, MathFormat::Vector));
        }
        if let Some(l) = m.latent {
            f(self.gemm(OpKind::LatentUp, self.dense(t, h, l.dim, wts.shared_experts)));
        }
        if let Some(shared) = &m.shared {
            self.dense_mlp(shared, wts.shared_experts, SHARED_KINDS, f);
        }
    }
}

/// Operator kinds used by one MLP flavour.
#[derive(Clone, Copy)]
pub(super) struct MlpKinds {
    gate: OpKind,
    up: OpKind,
    gate_up: OpKind,
    act: OpKind,
    down: OpKind,
    seed: OpKind,
}

pub(super) const DENSE_KINDS: MlpKinds = MlpKinds {
    gate: OpKind::GateProj,
    up: OpKind::UpProj,
    gate_up: OpKind::GateUpProj,
    act: OpKind::Act,
    down: OpKind::DownProj,
    seed: OpKind::Mlp,
};
const EXPERT_KINDS: MlpKinds = MlpKinds {
    gate: OpKind::ExpertGate,
    up: OpKind::ExpertUp,
    gate_up: OpKind::ExpertGate,
    act: OpKind::ExpertAct,
    down: OpKind::ExpertDown,
    seed: OpKind::ExpertUp,
};
const SHARED_KINDS: MlpKinds = MlpKinds {
    gate: OpKind::SharedGate,
    up: OpKind::SharedUp,
    gate_up: OpKind::SharedGate,
    act: OpKind::SharedAct,
    down: OpKind::SharedDown,
    seed: OpKind::SharedUp,
};
