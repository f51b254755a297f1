//! Money: a GPU-hour price turned into dollars per token, and the cheapest batch under a latency
//! bound.
//!
//! **One cost model, three bases.** Every price the tool prints is a [`Bill`]: USD per million
//! prompt tokens, per million output tokens and per request, with the [`CostBasis`] it was
//! computed on — one decode step at a batch (the reference calculator's cost of a step:
//! output tokens only), a static batch run together from its prompt to its last token (no
//! arrivals, no queue), or a simulated run under load ([`Bill::under_load`]: the deployment's
//! GPU-hours over what it served, idle time included). Two figures on different bases are
//! never the same number; each answer states its basis.
//!
//! At a batch of `B` requests (prompt `P`, output `N`, see [`crate::latency`]) and a price of
//! `p` USD per GPU-hour:
//!
//! * input tokens pay for the prefill: `$/M input = p/3600 · TTFT / (B·P) · 10⁶`;
//! * output tokens pay for decode: `$/M output = p/3600 · TPOT / B · 10⁶`;
//! * a request pays its share of the whole: `$/request = p/3600 · e2e / B`.
//!
//! In a parallel deployment `p` is the price of one replica: the GPU price × `tp·pp·ep` (every
//! replica serves its own batch at the same cost per token, so data parallelism does not change
//! it).
//!
//! **Cheapest batch under a TPOT bound.** TPOT never falls as the batch grows (more batch never
//! means fewer FLOPs or bytes), so the batches that meet `TPOT ≤ X` are `1 … B*`, found by
//! bisection and capped by the largest batch that fits. Among them the largest is the cheapest:
//! every operator's time is `max` of affine functions of `B` with non-negative intercepts
//! (weights are read once, FLOPs and KV bytes grow with `B`; for MoE the experts touched grow
//! concavely), and for such functions `t(B)/B` never rises, so neither does `TPOT(B)/B`.

use crate::error::{Error, Result};
use crate::latency::Latency;
use crate::scenario::Scenario;
use crate::serving::{Price, Serving};
use crate::simulate::SimSummary;
use serde::Serialize;

/// What a price was computed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CostBasis {
    /// One decode step at a batch: `GPUs · price ÷ (batch ÷ TPOT)`, output tokens only, no
    /// prefill, no idle time (the reference calculator's cost of a step; `plan` without a rate).
    DecodeStep,
    /// A batch of requests run together from prompt to last token, no arrivals and no queue
    /// (`cost`, `latency`): the prefill's time prices the prompt, the decode's the output.
    StaticBatch,
    /// A simulated run under load ([`Bill::under_load`]; `simulate`, `plan --rate`, capacity).
    UnderLoad,
}

impl CostBasis {
    /// The basis in a few words, for a report's answer line.
    pub fn words(self) -> &'static str {
        match self {
            CostBasis::DecodeStep => "one decode step (output only, no prefill, no idle time)",
            CostBasis::StaticBatch => "a static batch (prompt to last token together, no arrivals or queue)",
            CostBasis::UnderLoad => "under load (simulated arrivals, idle time included)",
        }
    }
}

/// A price of serving: per million prompt tokens, per million output tokens and per request, on
/// a stated basis. `None` where the basis has no such figure (a decode step prices no prompt).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bill {
    /// What the figures were computed on.
    pub basis: CostBasis,
    /// The GPU-hour price.
    pub price: Price,
    /// GPUs paid for.
    pub gpus: u64,
    /// USD per million prompt tokens.
    pub usd_per_million_input_tokens: Option<f64>,
    /// USD per million output tokens.
    pub usd_per_million_output_tokens: Option<f64>,
    /// USD per request.
    pub usd_per_request: Option<f64>,
}

impl Bill {
    /// The price of a simulated run (`s`) on its deployment's GPUs (`s.gpus`) at `price`.
    ///
    /// The deployment costs `C = GPUs · price/3600 · duration` (idle time included: GPUs are
    /// paid for whether a step runs or not). Requests pay `C ÷ completed`. The cost is shared
    /// between prompt and output tokens as the GPUs' step time was: each step's time is shared
    /// equally among the new tokens it computes (prompt chunks and decodes alike), so a prompt
    /// share `f = prompt GPU-s ÷ (prompt GPU-s + output GPU-s)`
    /// ([`SimSummary::prompt_busy_gpu_s`]) gives `$/M input = C · f ÷ prompt tokens · 10⁶` and
    /// `$/M output = C · (1 − f) ÷ output tokens · 10⁶`. With the static batch's split (a
    /// prefill step prices the prompt, a decode step the output) this is the same rule step by
    /// step; a mixed step of a chunk and decodes is split by its tokens. The three figures add
    /// up: `prompt tokens · $/M input + output tokens · $/M output = completed · $/request = C`
    /// (per second: `input tok/s`, `output tok/s` and `requests/s` of the summary).
    pub fn under_load(s: &SimSummary, price: Price) -> Bill {
        let usd_per_s = price.usd_per_s() * s.gpus as f64;
        let busy = s.prompt_busy_gpu_s + s.output_busy_gpu_s;
        let prompt_share = if busy > 0.0 { s.prompt_busy_gpu_s / busy } else { 0.0 };
        let per = |rate: f64, share: f64| (rate > 0.0).then(|| usd_per_s * share / rate);
        Bill {
            basis: CostBasis::UnderLoad,
            price,
            gpus: s.gpus,
            usd_per_million_input_tokens: per(s.input_tokens_per_s, prompt_share).map(|u| u * 1e6),
            usd_per_million_output_tokens: per(s.output_tokens_per_s, 1.0 - prompt_share).map(|u| u * 1e6),
            usd_per_request: per(s.requests_per_s, 1.0),
        }
    }
}

/// USD per million output tokens of one decode step ([`CostBasis::DecodeStep`]):
/// `GPUs · price/3600 · TPOT ÷ batch · 10⁶`.
pub fn decode_step_usd_per_million_output(price: Price, gpus: u64, batch: u64, tpot_s: f64) -> f64 {
    gpus as f64 * price.usd_per_s() * tpot_s / batch as f64 * 1e6
}

/// Cost of serving at one batch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CostPoint {
    /// The price used.
    pub price: Price,
    /// Latency and throughput at this batch.
    pub latency: Latency,
    /// USD per million prompt tokens (prefill).
    pub usd_per_million_input_tokens: f64,
    /// USD per million output tokens (decode); `None` with one output token.
    pub usd_per_million_output_tokens: Option<f64>,
    /// USD per request.
    pub usd_per_request: f64,
}

impl CostPoint {
    /// The cost at `batch`.
    pub fn at(sc: &Scenario, serving: &Serving, price: Price, batch: u64) -> Result<CostPoint> {
        let l = Latency::of(sc, batch, serving.prompt_tokens, serving.output_tokens, serving.reserve_bytes)?;
        let per_s = price.usd_per_s() * sc.parallel.gpus_per_replica() as f64;
        let b = batch as f64;
        Ok(CostPoint {
            price,
            latency: l,
            usd_per_million_input_tokens: per_s * l.ttft_s / (b * serving.prompt_tokens as f64) * 1e6,
            usd_per_million_output_tokens: l.tpot_s.map(|t| per_s * t / b * 1e6),
            usd_per_request: per_s * l.e2e_s / b,
        })
    }
}

/// The cheapest batch whose TPOT is at most `bound_s`, or why there is none.
pub fn cheapest_under_tpot(sc: &Scenario, serving: &Serving, price: Price, bound_s: f64) -> Result<CostPoint> {
    if serving.output_tokens < 2 {
        return Err(Error::invalid("output", serving.output_tokens, "at least 2 tokens for a TPOT bound"));
    }
    let first = CostPoint::at(sc, serving, price, 1)?;
    let tpot = |c: &CostPoint| c.latency.tpot_s.unwrap_or(f64::INFINITY);
    if first.latency.max_batch == 0 {
        return Err(Error::invalid(
            "batch",
            format!("1 needs {:.1} GB", first.latency.peak_memory_bytes / 1e9),
            format!("a model that fits {} after the {:.1} GB reserve", sc.gpu.name, serving.reserve_bytes / 1e9),
        ));
    }
    if tpot(&first) > bound_s {
        return Err(Error::invalid(
            "tpot_ms",
            format!("{} ms", fmt_ms(bound_s)),
            format!(
                "a bound that some batch meets: even batch 1 takes {} ms per output token for {} on {}",
                fmt_ms(tpot(&first)),
                sc.model.name,
                sc.gpu.name
            ),
        ));
    }
    let (mut lo, mut hi) = (1u64, first.latency.max_batch);
    let mut best = first;
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        let c = CostPoint::at(sc, serving, price, mid)?;
        if tpot(&c) <= bound_s {
            lo = mid;
            best = c;
        } else {
            hi = mid - 1;
        }
    }
    if best.latency.batch != lo {
        best = CostPoint::at(sc, serving, price, lo)?;
    }
    Ok(best)
}

/// Milliseconds with three decimals, for messages.
fn fmt_ms(s: f64) -> String {
    format!("{:.3}", s * 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serving::PriceSource;

    fn sc() -> Scenario {
        crate::testing::scenario(&[])
    }

    fn serving(prompt: u64, output: u64) -> Serving {
        Serving { prompt_tokens: prompt, output_tokens: output, ..Serving::default() }
    }

    const PRICE: Price = Price { usd_per_hour: 3.6, source: PriceSource::User };

    #[test]
    fn dollars_follow_seconds() {
        // $3.60 per hour is $0.001 per second.
        let c = CostPoint::at(&sc(), &serving(1000, 101), PRICE, 4).unwrap();
        let l = c.latency;
        assert!((c.usd_per_million_input_tokens - 0.001 * l.ttft_s / 4000.0 * 1e6).abs() < 1e-12);
        assert!((c.usd_per_million_output_tokens.unwrap() - 0.001 * l.tpot_s.unwrap() / 4.0 * 1e6).abs() < 1e-12);
        assert!((c.usd_per_request - 0.001 * l.e2e_s / 4.0).abs() < 1e-15);
    }

    #[test]
    fn cost_per_output_token_never_rises_with_the_batch() {
        let s = serving(512, 33);
        let mut last = f64::INFINITY;
        for b in [1, 2, 4, 8, 16, 32, 64, 128, 256] {
            let c = CostPoint::at(&sc(), &s, PRICE, b).unwrap().usd_per_million_output_tokens.unwrap();
            assert!(c <= last * (1.0 + 1e-12), "batch {b}: {c} > {last}");
            last = c;
        }
    }

    #[test]
    fn cheapest_batch_is_the_largest_that_meets_the_bound() {
        let s = serving(2048, 65);
        let best = cheapest_under_tpot(&sc(), &s, PRICE, 0.012).unwrap();
        let b = best.latency.batch;
        assert!(best.latency.tpot_s.unwrap() <= 0.012);
        let next = CostPoint::at(&sc(), &s, PRICE, b + 1).unwrap();
        assert!(next.latency.tpot_s.unwrap() > 0.012 || next.latency.batch > best.latency.max_batch);
        // A loose bound is capped by memory.
        let loose = cheapest_under_tpot(&sc(), &s, PRICE, 10.0).unwrap();
        assert_eq!(loose.latency.batch, loose.latency.max_batch);
    }

    #[test]
    fn a_bound_nothing_meets_says_so() {
        let e = cheapest_under_tpot(&sc(), &serving(2048, 65), PRICE, 0.001).unwrap_err().to_string();
        assert!(
            e.starts_with("invalid `tpot_ms`: 1.000 ms (a bound that some batch meets: even batch 1 takes 6."),
            "{e}"
        );
        assert!(e.ends_with("ms per output token for llama-3-8b on h100-sxm)"), "{e}");
        let e = cheapest_under_tpot(&sc(), &serving(2048, 1), PRICE, 0.1).unwrap_err().to_string();
        assert_eq!(e, "invalid `output`: 1 (at least 2 tokens for a TPOT bound)");
    }
}
