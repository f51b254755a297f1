//! Advice: the reference calculator's "What to do next", made computable for one model, GPU and production mix.
//!
//! 1. Where the workload sits relative to the KV crossover ([`crate::crossover`]): below it,
//!    weight-side levers pay (quantised weights, bigger batches, speculative decoding); above it,
//!    cache-side levers pay (an FP8 KV cache, prefix sharing, shorter retained context, admission
//!    limits on total cached tokens).
//! 2. The memory footprint against the GPU, and the largest batch that fits at this context.
//! 3. Every lever ([`crate::levers`]) ranked by the cost per token it saves, with its step time
//!    and, when a price is known, dollars per million tokens (`price/3600 · step ÷ tokens · 10⁶`
//!    for the step as given; `llm-ledger cost` integrates whole requests).
//! 4. For MoE models: the expected experts a step touches at this batch.
//! 5. A reminder to measure: MBU below about 60 % points at overhead the ledger does not count.
//!
//! The core returns the quantities; the sentences are the report's (`llm_ledger_report::advise`).

use crate::crossover::Crossover;
use crate::levers::{LeverOutcome, LeverSet};
use crate::memory::{Fit, FitBasis, Footprint};
use crate::model::Mlp;
use crate::moe::expected_experts_touched;
use crate::scenario::Scenario;
use crate::serving::{Price, Serving};
use crate::workload::Phase;
use serde::Serialize;

/// Expected experts touched per MoE layer in one step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ExpertsTouched {
    /// Routed experts per layer.
    pub experts: u64,
    /// Experts per token.
    pub top_k: u64,
    /// Tokens routed in the step.
    pub tokens: f64,
    /// Expected distinct experts touched (the scenario's routing).
    pub touched: f64,
}

/// One ranked lever with its price.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankedLever {
    /// The lever outcome.
    #[serde(flatten)]
    pub lever: LeverOutcome,
    /// USD per million tokens with the lever, when a price is known.
    pub usd_per_million_tokens: Option<f64>,
}

/// The advice for one scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Advice {
    /// Crossover and where the workload sits.
    pub crossover: Crossover,
    /// Memory against the GPU.
    pub footprint: Footprint,
    /// Largest batch that fits at this context (uniform batches only).
    pub max_batch: Option<u64>,
    /// The basis of `footprint.fits` and `max_batch`: this step ([`FitBasis::Step`]).
    pub fit_basis: FitBasis,
    /// The price used, if any.
    pub price: Option<Price>,
    /// USD per million tokens of the step as given, when a price is known.
    pub usd_per_million_tokens: Option<f64>,
    /// The workload as given.
    pub baseline: crate::levers::Outcome,
    /// Levers ranked by cost per token saved, best first.
    pub levers: Vec<RankedLever>,
    /// Levers that do not apply, with the reason.
    pub skipped: Vec<crate::levers::Skipped>,
    /// MoE: experts touched per layer (the first MoE layer shape).
    pub experts_touched: Option<ExpertsTouched>,
    /// The step's phase (the advice's crossover and levers are decode notions).
    #[serde(skip)]
    pub phase: Phase,
    /// The scenario's routing over experts (for [`ExpertsTouched`]).
    #[serde(skip)]
    pub routing: crate::moe::Routing,
}

impl Advice {
    /// Advise on the scenario.
    pub fn of(sc: &Scenario, serving: &Serving) -> Advice {
        let reserve = serving.reserve_bytes;
        let crossover = Crossover::of(sc);
        let fit = Fit::step(sc, reserve);
        let set = LeverSet::of(sc, reserve);
        let price = serving.price;
        let usd = |time_per_token_s: f64| price.map(|p| p.usd_per_s() * time_per_token_s * 1e6);
        let levers: Vec<RankedLever> = set
            .ranked()
            .into_iter()
            .map(|l| RankedLever { usd_per_million_tokens: usd(l.outcome.time_per_token_s), lever: l.clone() })
            .collect();
        let experts_touched = sc.model.layer_groups().find_map(|(l, _)| match &l.mlp {
            Mlp::Moe(m) => {
                let tokens = sc.workload.step_tokens();
                let touched = expected_experts_touched(m.experts, m.top_k, tokens, &sc.routing).ok()?;
                Some(ExpertsTouched { experts: m.experts, top_k: m.top_k, tokens, touched })
            }
            Mlp::Dense(_) | Mlp::Linear { .. } | Mlp::None => None,
        });
        Advice {
            crossover,
            footprint: fit.footprint,
            max_batch: fit.max_batch,
            fit_basis: fit.basis,
            price,
            usd_per_million_tokens: usd(set.baseline.time_per_token_s),
            baseline: set.baseline,
            levers,
            skipped: set.skipped,
            experts_touched,
            phase: sc.workload.phase,
            routing: sc.routing.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crossover::Side;
    use crate::levers::Lever;
    use crate::serving::ServingRequest;

    fn serving(s: &Scenario) -> Serving {
        ServingRequest::default().resolve(s).unwrap()
    }

    fn sc(model: &str, batch: &str, ctx: &str) -> Scenario {
        crate::testing::scenario(&[("model", model), ("counting", "seed"), ("batch", batch), ("ctx", ctx)])
    }

    #[test]
    fn below_the_crossover_weight_levers_lead() {
        let a = {
            let s = sc("llama-3-8b", "1", "2048");
            Advice::of(&s, &serving(&s))
        };
        assert_eq!(a.crossover.side, Side::Below);
        // Batch 1 is 5.7 ms; the biggest batch that fits saves the most per token, then W4A16.
        assert_eq!(a.levers[0].lever.lever, Lever::Batch);
        assert_eq!(a.levers[1].lever.lever, Lever::W4a16);
    }

    #[test]
    fn above_the_crossover_cache_levers_lead() {
        let a = {
            let s = sc("llama-3-8b", "8", "32768");
            Advice::of(&s, &serving(&s))
        };
        assert_eq!(a.crossover.side, Side::Above);
        let first_precision = a.levers.iter().find(|l| l.lever.lever != Lever::Batch).unwrap();
        assert_eq!(first_precision.lever.side, Side::Above);
        // "batch 8 at 32k drops from 18.4 ms to 12.0 ms per step".
        let kv = a.levers.iter().find(|l| l.lever.lever == Lever::KvFp8).unwrap();
        assert_eq!(format!("{:.1}", kv.lever.outcome.step_time_s * 1e3), "12.0");
    }

    #[test]
    fn prices_turn_into_dollars_per_token() {
        let a = {
            let s = sc("llama-3-8b", "1", "2048");
            Advice::of(&s, &serving(&s))
        };
        let p = a.price.unwrap();
        let expect = p.usd_per_hour / 3600.0 * a.baseline.step_time_s * 1e6;
        assert!((a.usd_per_million_tokens.unwrap() - expect).abs() < 1e-9);
    }

    #[test]
    fn moe_models_get_the_experts_touched() {
        // Mixtral (8 experts, top-2), batch 8: 8 · (1 − (6/8)^8) = 7.2 (the reference calculator).
        let a = {
            let s = sc("mixtral-8x7b", "8", "2048");
            Advice::of(&s, &serving(&s))
        };
        let e = a.experts_touched.unwrap();
        assert_eq!(format!("{:.1}", e.touched), "7.2");
    }
}
