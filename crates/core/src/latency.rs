//! Request latency: a batch of `B` identical requests, each with a prompt of `P` tokens and
//! `N` output tokens.
//!
//! * **TTFT** (time to first token) = one prefill step of `B × P` prompt tokens (its logits give
//!   the first output token).
//! * **Decode**: the other `N − 1` tokens come from decode steps whose cached context grows
//!   token by token: step `k = 1 … N−1` runs at `P + k − 1` cached tokens, so the decode time is
//!   `D = Σ_{c=P}^{P+N−2} t(c)` with `t(c)` the ledger's step time at `B × c`.
//! * **TPOT** (time per output token) = `D / (N − 1)`; none when `N = 1`.
//! * **End to end** = `TTFT + D`; output throughput `B·N / e2e`; decode throughput `B / TPOT`.
//! * **Memory**: whether the requests fit, and the largest batch of them that does, on the
//!   requests' peak ([`crate::memory::FitBasis::RequestPeak`]): the fuller of the prefill step
//!   and the last decode step (at `P + N − 2` cached tokens, `P + N − 1` held after it).
//!
//! The sum is exact (every step evaluated) up to [`EXACT_DECODE_STEPS`] steps. Longer outputs use
//! [`QUADRATURE_PANELS`] panels with the trapezoid rule for sums: over a panel of `n` integers
//! from `x` to `x + n − 1`, `Σ t(c) = n·t(x) + (t(x+n) − t(x))·(n − 1)/2`, which is exact when
//! `t` is linear across the panel. `t(c)` is piecewise linear in `c` (attention FLOPs and KV
//! bytes are linear in the context; a kink appears where an operator changes roof, which bends
//! `t` up, or where a sliding window fills, which bends it down), so the error is confined to the
//! few panels that hold a kink: at most `n²/8` times the change of slope there, for a panel of `n`
//! steps. The tests check it against the exact sum across a window kink.

use crate::error::Result;
use crate::ledger::summarise;
use crate::memory::{Fit, FitBasis, Requests};
use crate::scenario::Scenario;
use crate::workload::{Contexts, Phase};
use rayon::prelude::*;
use serde::Serialize;

/// Decode steps summed exactly; longer outputs use the quadrature.
pub const EXACT_DECODE_STEPS: u64 = 4096;

/// Panels of the quadrature.
pub const QUADRATURE_PANELS: u64 = 1024;

/// How the decode sum was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecodeSum {
    /// Every step evaluated.
    Exact,
    /// Trapezoid rule for sums over [`QUADRATURE_PANELS`] panels.
    Quadrature,
}

/// Latency of a batch of identical requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    /// Requests in the batch.
    pub batch: u64,
    /// Prompt tokens per request.
    pub prompt_tokens: u64,
    /// Output tokens per request.
    pub output_tokens: u64,
    /// Time to first token (the prefill step), seconds.
    pub ttft_s: f64,
    /// Mean time per output token after the first, seconds (`None` when only one token).
    pub tpot_s: Option<f64>,
    /// Time of all decode steps, seconds.
    pub decode_s: f64,
    /// End-to-end latency, seconds.
    pub e2e_s: f64,
    /// Output tokens per second over the whole request (B·N ÷ e2e).
    pub output_tokens_per_s: f64,
    /// Output tokens per second while decoding (B ÷ TPOT).
    pub decode_tokens_per_s: Option<f64>,
    /// Largest memory along the way (prefill, or the last decode step), bytes.
    pub peak_memory_bytes: f64,
    /// The step of the peak: `prefill` or `decode` (the last decode step).
    pub peak_phase: Phase,
    /// Whether the peak fits the GPU after the reserve.
    pub fits: bool,
    /// Largest batch of these requests that fits at the peak.
    pub max_batch: u64,
    /// The basis of `fits` and `max_batch`: always the requests' peak.
    pub fit_basis: FitBasis,
    /// How the decode sum was computed.
    pub decode_sum: DecodeSum,
}

/// Step times of decode steps at `batch` × each context of `ctxs`, in their order, on the thread
/// pool. Each task times its steps on a copy of `base` of its own (the contexts overwritten per
/// step), so the threads never share the scenario's reference counts (a clone per step had them
/// contend on the model's, GPU's and layout's).
fn decode_steps_s(base: &Scenario, batch: u64, ctxs: impl ParallelIterator<Item = u64>) -> Vec<f64> {
    ctxs.map_init(
        || base.clone(),
        |s, ctx| {
            s.workload.contexts = Contexts::Uniform { batch, tokens: ctx };
            summarise(s).step_time_s()
        },
    )
    .collect()
}

/// `Σ_{c=first}^{last} t(c)` evaluating every step (in parallel, summed in order).
pub fn decode_sum_exact(decode: &Scenario, batch: u64, first: u64, last: u64) -> f64 {
    decode_steps_s(decode, batch, (first..=last).into_par_iter()).iter().sum()
}

/// `Σ_{c=first}^{last} t(c)` by the trapezoid rule for sums over `panels` panels (module docs).
pub fn decode_sum_quadrature(decode: &Scenario, batch: u64, first: u64, last: u64, panels: u64) -> f64 {
    let span = last - first;
    let panels = panels.clamp(1, span.max(1));
    let nodes: Vec<u64> = (0..=panels).map(|j| first + ((span as u128 * j as u128) / panels as u128) as u64).collect();
    let t = decode_steps_s(decode, batch, nodes.par_iter().copied());
    let mut sum = 0.0;
    for j in 0..nodes.len() - 1 {
        let n = (nodes[j + 1] - nodes[j]) as f64;
        sum += n * t[j] + (t[j + 1] - t[j]) * (n - 1.0) / 2.0;
    }
    sum + t[t.len() - 1]
}

impl Latency {
    /// Latency of `batch` requests of `prompt` + `output` tokens on the scenario's model, GPU and
    /// precisions (its own phase and contexts are replaced).
    pub fn of(sc: &Scenario, batch: u64, prompt: u64, output: u64, reserve_bytes: f64) -> Result<Latency> {
        let requests = Requests { batch, prompt_tokens: prompt, output_tokens: output };
        let prefill = requests.prefill(sc)?;
        let ttft_s = summarise(&prefill).step_time_s();
        let steps = output.saturating_sub(1);
        let decode = requests.decode(sc, prompt)?;
        let (decode_s, decode_sum) = if steps == 0 {
            (0.0, DecodeSum::Exact)
        } else if steps <= EXACT_DECODE_STEPS {
            (decode_sum_exact(&decode, batch, prompt, prompt + steps - 1), DecodeSum::Exact)
        } else {
            (
                decode_sum_quadrature(&decode, batch, prompt, prompt + steps - 1, QUADRATURE_PANELS),
                DecodeSum::Quadrature,
            )
        };
        let tpot_s = (steps > 0).then(|| decode_s / steps as f64);
        let e2e_s = ttft_s + decode_s;
        // Memory peaks at prefill (workspace) or at the last decode step (longest cache).
        let fit = Fit::requests(sc, &requests, reserve_bytes)?;
        Ok(Latency {
            batch,
            prompt_tokens: prompt,
            output_tokens: output,
            ttft_s,
            tpot_s,
            decode_s,
            e2e_s,
            output_tokens_per_s: (batch * output) as f64 / e2e_s,
            decode_tokens_per_s: tpot_s.map(|t| batch as f64 / t),
            peak_memory_bytes: fit.needed_bytes(),
            peak_phase: fit.deciding_phase,
            fits: fit.fits(),
            max_batch: fit.max_batch.unwrap_or(0),
            fit_basis: fit.basis,
            decode_sum,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(model: &str, counting: &str) -> Scenario {
        crate::testing::scenario(&[("model", model), ("counting", counting)])
    }

    /// Seed counting, Llama 3 8B on the H100 at batch 1: every operator is memory-bound, so a
    /// decode step is `t(c) = (W + c·K) / (0.8 · 3.35e12)` with W = 15,009,316,864 weight bytes
    /// and K = 131,072 KV bytes per cached token.
    fn closed_form_step(c: f64) -> f64 {
        (15_009_316_864.0 + c * 131_072.0) / (0.8 * 3.35e12)
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        ((a - b) / b).abs() < rel
    }

    #[test]
    fn tpot_integrates_the_growing_context_exactly() {
        // P = 100, N = 5: decode steps at 100, 101, 102, 103 cached tokens.
        let l = Latency::of(&sc("llama-3-8b", "seed"), 1, 100, 5, 0.0).unwrap();
        let d: f64 = (100..=103).map(|c| closed_form_step(c as f64)).sum();
        assert!(close(l.decode_s, d, 1e-12), "{} vs {d}", l.decode_s);
        // Σ c = 406, so D = (4W + 406K) / 2.68e12.
        assert!(close(d, (4.0 * 15_009_316_864.0 + 406.0 * 131_072.0) / 2.68e12, 1e-12));
        assert!(close(l.tpot_s.unwrap(), d / 4.0, 1e-12));
        assert_eq!(l.e2e_s, l.ttft_s + l.decode_s);
        assert_eq!(l.decode_sum, DecodeSum::Exact);
    }

    #[test]
    fn long_outputs_use_the_quadrature_which_is_exact_for_linear_steps() {
        // N − 1 = 99,999 steps from c = 2,048: D = 99,999·W/2.68e12 + K/2.68e12 · Σc, with
        // Σc = 99,999 · (2,048 + 102,046) / 2.
        let l = Latency::of(&sc("llama-3-8b", "seed"), 1, 2048, 100_000, 0.0).unwrap();
        assert_eq!(l.decode_sum, DecodeSum::Quadrature);
        let n = 99_999.0;
        let sum_c = n * (2048.0 + 102_046.0) / 2.0;
        let d = (n * 15_009_316_864.0 + 131_072.0 * sum_c) / 2.68e12;
        assert!(close(l.decode_s, d, 1e-9), "{} vs {d}", l.decode_s);
    }

    #[test]
    fn quadrature_matches_the_exact_sum_across_a_window_kink() {
        // Gemma 2 9B: half the layers stop growing at 4,096 tokens, a kink inside the range.
        let s = sc("gemma-2-9b", "full");
        let base = Requests { batch: 4, prompt_tokens: 1000, output_tokens: 2 }.decode(&s, 1000).unwrap();
        let exact = decode_sum_exact(&base, 4, 1000, 9000);
        let quad = decode_sum_quadrature(&base, 4, 1000, 9000, 64);
        assert!(close(quad, exact, 1e-4), "{quad} vs {exact}");
    }

    #[test]
    fn one_output_token_has_no_tpot() {
        let l = Latency::of(&sc("llama-3-8b", "full"), 2, 512, 1, 2e9).unwrap();
        assert_eq!(l.tpot_s, None);
        assert_eq!(l.e2e_s, l.ttft_s);
        assert_eq!(l.output_tokens_per_s, 2.0 / l.ttft_s);
    }

    #[test]
    fn memory_peaks_with_the_longest_cache() {
        let l = Latency::of(&sc("llama-3-8b", "seed"), 8, 2048, 1025, 0.0).unwrap();
        // Seed counting: 15,009,849,344 + 8 × (2,048 + 1,023) × 131,072.
        assert_eq!(l.peak_memory_bytes, 15_009_849_344.0 + 8.0 * 3071.0 * 131_072.0);
        assert!(l.fits);
    }
}
