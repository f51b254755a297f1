//! Advice: seed 004's "What to do next", made computable for one model, GPU and production mix.
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

use crate::crossover::{Crossover, Side};
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
    /// The advice, one sentence per line.
    pub lines: Vec<String>,
}

fn gb(b: f64) -> String {
    if b < 1e9 {
        format!("{:.0} MB", b / 1e6)
    } else {
        format!("{:.1} GB", b / 1e9)
    }
}

fn ms(s: f64) -> String {
    format!("{:.2} ms", s * 1e3)
}

fn thousands(v: f64) -> String {
    let s = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
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
            Mlp::Dense(_) => None,
        });
        let mut a = Advice {
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
            lines: Vec::new(),
        };
        a.lines = a.sentences(sc);
        a
    }

    fn sentences(&self, sc: &Scenario) -> Vec<String> {
        let c = &self.crossover;
        let mut out = Vec::new();
        if sc.workload.phase == Phase::Prefill {
            out.push(
                "This is a prefill step; the crossover and the levers below are decode notions, read them with care."
                    .into(),
            );
        }
        let side = match c.side {
            Side::Below => format!(
                "Below the crossover: {} cached tokens per step against {} ({} of weights ÷ {} B of KV per token); KV reads are {:.2}× the weight reads, so weight-side levers pay: quantised weights, bigger batches, speculative decoding.",
                thousands(c.cached_tokens),
                thousands(c.crossover_tokens),
                gb(c.weight_bytes),
                thousands(c.kv_bytes_per_token),
                c.kv_to_weight_ratio
            ),
            Side::Above => format!(
                "Above the crossover: {} cached tokens per step against {} ({} of weights ÷ {} B of KV per token); KV reads are {:.2}× the weight reads, so cache-side levers pay: an FP8 KV cache, prefix sharing, shorter retained context, admission limits on total cached tokens.",
                thousands(c.cached_tokens),
                thousands(c.crossover_tokens),
                gb(c.weight_bytes),
                thousands(c.kv_bytes_per_token),
                c.kv_to_weight_ratio
            ),
        };
        out.push(side);
        let f = &self.footprint;
        let fit = if f.fits { "fits" } else { "does NOT fit" };
        let mut mem = format!(
            "Memory: {} (weights {}, KV cache {}, workspace {}) of {} available after a {} reserve: it {fit}.",
            gb(f.memory_bytes),
            gb(f.weight_bytes),
            gb(f.kv_cache_bytes),
            gb(f.workspace_bytes),
            gb(f.available_bytes),
            gb(f.reserve_bytes)
        );
        if let Some(b) = self.max_batch {
            mem.push_str(&format!(" The largest batch that fits at this context is {b}."));
        }
        out.push(mem);
        let base = &self.baseline;
        let price_note = |usd: Option<f64>| usd.map(|u| format!(", ${u:.3} per M tokens")).unwrap_or_default();
        out.push(format!(
            "Now: {} per step, {} tokens/s{}.",
            ms(base.step_time_s),
            thousands(base.tokens_per_s),
            price_note(self.usd_per_million_tokens)
        ));
        for (i, r) in self.levers.iter().filter(|r| r.lever.cost_saving > 0.0).enumerate() {
            let l = &r.lever;
            let fits = if l.outcome.fits { "" } else { " (does NOT fit)" };
            out.push(format!(
                "{}. {} — {}: {} → {} per step at batch {}, {} tokens/s, {:.0} % less per token{}{fits}.",
                i + 1,
                l.name,
                l.description,
                ms(base.step_time_s),
                ms(l.outcome.step_time_s),
                l.outcome.batch,
                thousands(l.outcome.tokens_per_s),
                l.cost_saving * 100.0,
                price_note(r.usd_per_million_tokens)
            ));
        }
        if let Some(e) = &self.experts_touched {
            out.push(format!(
                "MoE: a step of {} tokens touches {:.1} of {} experts per layer on average (top-{}, {} routing); weight bytes follow the experts touched, not the active parameter count.",
                thousands(e.tokens),
                e.touched,
                e.experts,
                e.top_k,
                sc.routing.describe()
            ));
        }
        out.push("Measure one step and run `llm-ledger measure --step-ms T`: below ~60 % MBU, look for launches, unfused kernels and communication before buying hardware.".into());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert!(
            a.lines[0].starts_with("Below the crossover: 2,048 cached tokens per step against 114,512"),
            "{}",
            a.lines[0]
        );
        // Batch 1 is 5.7 ms; the biggest batch that fits saves the most per token, then W4A16.
        assert_eq!(a.levers[0].lever.lever, Lever::Batch);
        assert_eq!(a.levers[1].lever.lever, Lever::W4a16);
        assert!(
            a.lines.iter().any(|l| l.starts_with("2. w4a16 — 4-bit weights, 16-bit math (W4A16): 5.70 ms → 1.5")),
            "{:#?}",
            a.lines
        );
    }

    #[test]
    fn above_the_crossover_cache_levers_lead() {
        let a = {
            let s = sc("llama-3-8b", "8", "32768");
            Advice::of(&s, &serving(&s))
        };
        assert_eq!(a.crossover.side, Side::Above);
        assert!(a.lines[0].contains("cache-side levers pay"));
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
        // Mixtral (8 experts, top-2), batch 8: 8 · (1 − (6/8)^8) = 7.2 (seed 004).
        let a = {
            let s = sc("mixtral-8x7b", "8", "2048");
            Advice::of(&s, &serving(&s))
        };
        let e = a.experts_touched.unwrap();
        assert_eq!(format!("{:.1}", e.touched), "7.2");
        assert!(a.lines.iter().any(|l| l.starts_with("MoE: a step of 8 tokens touches 7.2 of 8 experts")));
    }
}
