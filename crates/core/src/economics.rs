//! Money: a GPU-hour price turned into dollars per token, and the cheapest batch under a latency
//! bound.
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
use serde::Serialize;

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
