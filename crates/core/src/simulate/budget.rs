//! Stopping long simulations: a budget of engine steps shared by every run of one command, an
//! estimate of the steps runs need (checked before they start), and a cancellation flag that
//! another thread sets (Ctrl-C in the CLI, KeyboardInterrupt in Python, a request's deadline in
//! the explorer).
//!
//! A run checks the flag and charges its steps to the budget every [`CHECK_STEPS`] steps and when
//! it ends: one relaxed atomic load and one add per 1,024 steps, nothing per step. Each run is
//! deterministic, so whether a command's runs together pass the budget does not depend on how the
//! parallel runs interleave: the runs' steps sum to the same total, and the budget is passed when
//! that total is.
//!
//! **The estimate** ([`min_steps`]) is a lower bound on a run's engine steps from its requests,
//! lengths and batch limits. A request of `P` prompt tokens (`h·P` of them found in the prefix
//! cache) and `O` output tokens is in `⌈(1 − h)·P / c⌉` prefill steps (chunks of
//! `c = min(chunk, max_batched_tokens)`) and `D = O − 1` decode steps, one after another (with
//! speculation of depth `k`, which yields at most `k + 1` tokens a step, `D = ⌈(O − 1)/(k + 1)⌉`);
//! a step holds at most `max_seqs` sequences and `max_batched_tokens` new tokens. So over `N`
//! requests
//!
//! `steps ≥ max( N·(⌈(1−h)P/c⌉ + D) / max_seqs,  N·((1−h)P + O − 1) / max_batched_tokens,
//! ⌈(1−h)P/c⌉ + D )`,
//!
//! with the lengths' means (a trace: its own rows, summed). Preemptions only add steps, and a
//! lightly loaded instance runs smaller steps than the bound assumes, so the true count is higher
//! — runs refused by the estimate could never fit, and runs it admits are still stopped by the
//! budget as they go.

use super::workload::Arrivals;
use super::SimConfig;
use crate::error::{compact_f64, Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Engine steps between two checks of a [`Budget`].
pub const CHECK_STEPS: u64 = 1024;

/// The front ends' default step budget over every run of one command: 10⁸ engine steps, a few
/// minutes of one core at worst (a decode step of a memoised batch is well under a microsecond,
/// a step with prefill chunks some microseconds).
pub const DEFAULT_MAX_STEPS: u64 = 100_000_000;

/// The largest step budget a command may ask for: 10¹⁰ engine steps, hours of one core — past
/// that a run is a mistake, not a search.
pub const MAX_STEPS_LIMIT: u64 = 10_000_000_000;

/// The input that sets a command's step budget, as errors name it.
pub const MAX_STEPS_FIELD: &str = "max_steps";

/// A step budget shared by the runs of one command, and the flag that cancels them (module docs).
#[derive(Debug)]
pub struct Budget<'a> {
    max_steps: u64,
    used: AtomicU64,
    cancel: Option<&'a AtomicBool>,
}

impl<'a> Budget<'a> {
    /// A budget of `max_steps` engine steps over all runs, cancelled when `cancel` becomes true.
    pub fn new(max_steps: u64, cancel: Option<&'a AtomicBool>) -> Budget<'a> {
        Budget { max_steps, used: AtomicU64::new(0), cancel }
    }

    /// No limit and no cancellation (the core's own callers and tests).
    pub fn unlimited() -> Budget<'static> {
        Budget::new(u64::MAX, None)
    }

    /// The budget, engine steps.
    pub fn max_steps(&self) -> u64 {
        self.max_steps
    }

    /// Engine steps the runs have been charged so far.
    pub fn used_steps(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Whether the work has been cancelled.
    pub fn cancelled(&self) -> bool {
        self.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// Refuse runs whose estimated steps ([`min_steps`], summed) are more than the budget has
    /// left, before any of them starts: [`Error::OverBudget`] naming [`MAX_STEPS_FIELD`], the
    /// estimate and what it is for.
    pub fn admit<'c>(&self, runs: impl IntoIterator<Item = &'c SimConfig>) -> Result<()> {
        if self.cancelled() {
            return Err(Error::Cancelled);
        }
        let runs: Vec<&SimConfig> = runs.into_iter().collect();
        let estimate: f64 = runs.iter().map(|c| min_steps(c)).sum();
        let left = self.max_steps.saturating_sub(self.used_steps());
        if estimate <= left as f64 {
            return Ok(());
        }
        let verb = if runs.len() == 1 { "needs" } else { "need" };
        Err(self.over(format!("{} {verb} about {} engine steps", describe(&runs), two_figures(estimate))))
    }

    /// Charge `steps` steps that a run took: an error when the work is cancelled, or when the
    /// runs have now taken more steps than the budget.
    pub(crate) fn charge(&self, steps: u64) -> Result<()> {
        if self.cancelled() {
            return Err(Error::Cancelled);
        }
        let used = self.used.fetch_add(steps, Ordering::Relaxed).saturating_add(steps);
        if used > self.max_steps {
            return Err(self.over("the runs took more before they ended".into()));
        }
        Ok(())
    }

    fn over(&self, need: String) -> Error {
        Error::OverBudget { field: MAX_STEPS_FIELD.into(), max_steps: self.max_steps, need }
    }
}

/// `v` to two significant figures, compactly (`4.6e11`, `9.2e6`, `256`).
fn two_figures(v: f64) -> String {
    if v < 100.0 {
        return compact_f64(v.ceil());
    }
    let unit = 10f64.powi(v.log10().floor() as i32 - 1);
    compact_f64((v / unit).round() * unit)
}

/// The runs in words: `3 runs of 10000 requests of 1 + 460000 tokens at ≤ 1 sequence per step`.
fn describe(runs: &[&SimConfig]) -> String {
    let Some(first) = runs.first() else { return "no runs".into() };
    let n = if runs.len() == 1 { "1 run".to_string() } else { format!("{} runs", runs.len()) };
    let what = match &first.arrivals {
        Arrivals::Trace(t) => format!("a trace of {} requests", t.len()),
        Arrivals::Poisson { .. } | Arrivals::Gamma { .. } | Arrivals::Closed { .. } => format!(
            "{} requests of {} + {} tokens",
            first.requests,
            compact_f64(first.prompt.mean_tokens()),
            compact_f64(first.output.mean_tokens())
        ),
    };
    let seqs = if runs.iter().all(|c| c.max_seqs == first.max_seqs) {
        let s = if first.max_seqs == 1 { "sequence" } else { "sequences" };
        format!(" at ≤ {} {s} per step", first.max_seqs)
    } else {
        String::new()
    };
    format!("{n} of {what}{seqs}")
}

/// A lower bound on the engine steps of one run of `cfg` (module docs), summed over every
/// instance of a deployment (replicas and pools split the same steps).
pub fn min_steps(cfg: &SimConfig) -> f64 {
    let chunk = cfg.chunk_tokens.min(cfg.max_batched_tokens).max(1) as f64;
    let computed = |prompt: f64| (prompt * (1.0 - cfg.prefix_hit)).max(1.0);
    // Decode steps after the first token: one token each, or up to `depth + 1` with speculation.
    let per_step = cfg.speculation.as_ref().map_or(1.0, |s| (s.depth + 1) as f64);
    let decodes = |output: f64| ((output - 1.0) / per_step).ceil();
    // (Σ sequence slots, Σ new tokens, the longest request's own steps) over the requests.
    let (slots, tokens, longest) = match &cfg.arrivals {
        Arrivals::Trace(t) => t.iter().fold((0.0, 0.0, 0.0_f64), |(s, k, l), r| {
            let p = computed(r.prompt_tokens as f64);
            let own = (p / chunk).ceil() + decodes(r.output_tokens as f64);
            (s + own, k + p + r.output_tokens as f64 - 1.0, l.max(own))
        }),
        Arrivals::Poisson { .. } | Arrivals::Gamma { .. } | Arrivals::Closed { .. } => {
            let n = cfg.requests as f64;
            let (p, o) = (computed(cfg.prompt.mean_tokens()), cfg.output.mean_tokens());
            let own = (p / chunk).ceil() + decodes(o);
            (n * own, n * (p + o - 1.0), own)
        }
    };
    (slots / cfg.max_seqs.max(1) as f64).max(tokens / cfg.max_batched_tokens.max(1) as f64).max(longest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::workload::{Lengths, TraceRequest};

    #[test]
    fn the_estimate_is_the_bound_by_hand() {
        // 10 requests of 1 + 460,000 tokens, one sequence per step: 10 × 460,000 steps.
        let cfg = SimConfig {
            requests: 10,
            prompt: Lengths::Fixed(1),
            output: Lengths::Fixed(460_000),
            max_seqs: 1,
            ..SimConfig::poisson(1.0)
        };
        assert_eq!(min_steps(&cfg), 4_600_000.0);
        // 1000 requests of 2048 + 256 with the defaults (256 sequences, 8192 tokens per step):
        // slots 1000 × (1 + 255) / 256 = 1000; tokens 1000 × 2303 / 8192 = 281.1; own 256.
        assert_eq!(min_steps(&SimConfig::poisson(10.0)), 1000.0);
        // A trace: its rows summed. Two requests of 8192 + 1 and 10 + 3 at 2048-token chunks.
        let t = [
            TraceRequest { arrival_s: 0.0, prompt_tokens: 8192, output_tokens: 1, prefix: None },
            TraceRequest { arrival_s: 1.0, prompt_tokens: 10, output_tokens: 3, prefix: None },
        ];
        let cfg = SimConfig {
            arrivals: Arrivals::Trace(t.into()),
            chunk_tokens: 2048,
            max_seqs: 1,
            ..SimConfig::poisson(1.0)
        };
        // slots (4 + 0) + (1 + 2) = 7 at one sequence per step.
        assert_eq!(min_steps(&cfg), 7.0);
        // Speculation of depth 3 yields up to 4 tokens a step: 1 + ⌈255 / 4⌉ = 65 steps per
        // request, 1000 × 65 / 256 = 253.9 by slots; the tokens, 1000 × 2303 / 8192, bound it.
        let spec = crate::simulate::Speculation {
            depth: 3,
            acceptance: 1.0,
            draft: crate::simulate::Draft::Heads { fraction: 0.0 },
        };
        let cfg = SimConfig { speculation: Some(spec), ..SimConfig::poisson(10.0) };
        assert_eq!(min_steps(&cfg), 1000.0 * 2303.0 / 8192.0);
    }

    #[test]
    fn a_budget_refuses_before_and_stops_during() {
        let cfg = SimConfig { requests: 10, output: Lengths::Fixed(460_000), max_seqs: 1, ..SimConfig::poisson(1.0) };
        let b = Budget::new(1_000_000, None);
        let e = b.admit([&cfg, &cfg]).unwrap_err();
        assert_eq!(e.field(), Some(MAX_STEPS_FIELD));
        assert_eq!(
            e.to_string(),
            "invalid `max_steps`: 1e6 engine steps (2 runs of 10 requests of 2048 + 460000 tokens at ≤ 1 sequence per step need about 9.2e6 engine steps; raise it, or ask for fewer requests or shorter outputs)"
        );
        assert!(b.admit([&SimConfig::poisson(1.0)]).is_ok());
        assert!(b.charge(600_000).is_ok());
        assert!(b.charge(400_000).is_ok());
        assert!(matches!(b.charge(1), Err(Error::OverBudget { .. })));
        let flag = AtomicBool::new(false);
        let b = Budget::new(10, Some(&flag));
        assert!(b.charge(1).is_ok());
        flag.store(true, Ordering::Relaxed);
        assert_eq!(b.charge(1), Err(Error::Cancelled));
        assert_eq!(b.admit([&cfg]), Err(Error::Cancelled));
    }
}
