//! The routed experts' share of one step of a MoE model, read from its ledger: above the routing
//! math of [`crate::moe`] (a leaf) and the ledger it summarises.

use crate::cost::Cost;
use crate::kinds::Shard;
use crate::ledger::Ledger;
use crate::moe::{expected_experts_touched, moe_shape};
use crate::scenario::Scenario;

/// The routed experts' share of one step of a MoE model.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ExpertStep {
    /// Routed-expert weight bytes read in the step (the union), all MoE layers.
    pub expert_weight_bytes: f64,
    /// The same if every expert were read: expert_weight_bytes × E ÷ experts touched.
    pub all_experts_weight_bytes: f64,
    /// FLOPs ÷ bytes of the routed-expert operators.
    pub expert_gemm_intensity: Option<f64>,
    /// Step time of the whole model, seconds.
    pub step_time_s: f64,
    /// Tokens per second of the step.
    pub tokens_per_s: f64,
}

/// Expert numbers of one step, from its ledger. `None` for a dense model.
pub fn expert_step(sc: &Scenario) -> Option<ExpertStep> {
    let (experts, top_k) = moe_shape(&sc.model)?;
    let l = Ledger::build(sc);
    let cost: Cost = l.rows.iter().filter(|r| matches!(r.op.facts().shard, Shard::Experts(_))).map(|r| r.cost).sum();
    let touched = expected_experts_touched(experts, top_k, sc.workload.step_tokens(), &sc.routing).ok()?;
    Some(ExpertStep {
        expert_weight_bytes: cost.weight_bytes,
        all_experts_weight_bytes: cost.weight_bytes * experts as f64 / touched,
        expert_gemm_intensity: cost.intensity(),
        step_time_s: l.summary.step_time_s(),
        tokens_per_s: l.summary.tokens_per_s(),
    })
}
