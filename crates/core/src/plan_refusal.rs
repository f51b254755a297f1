//! Why a plan ranked no layout, as quantities: a leaf module, so that [`crate::error::Error`]
//! can carry a refusal without importing the planner ([`crate::plan`] fills it in).

use serde::Serialize;

/// A layout by its degrees (`tp × pp × ep` GPUs per replica).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// Tensor-parallel GPUs.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Expert-parallel groups.
    pub ep: u64,
}

impl Layout {
    /// GPUs per replica, `tp · pp · ep`.
    pub fn gpus(&self) -> u64 {
        self.tp * self.pp * self.ep
    }
}

/// A layout with its TPOT at batch 1, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimedLayout {
    /// The layout.
    pub layout: Layout,
    /// Time per output token at batch 1, seconds.
    pub tpot_s: f64,
}

/// Why a plan ranked nothing, in quantities; the front ends put it in words
/// (`llm_ledger_report::plan::refusal_message`). Carried by [`crate::Error::NoPlan`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum PlanRefusal {
    /// Layouts fit, but even the fastest misses the TPOT bound at its smallest batch.
    TooSlow {
        /// The fastest layout and its TPOT.
        fastest: TimedLayout,
        /// Its smallest batch (one sequence per expert group).
        batch: u64,
    },
    /// Layouts fit, but none holds any of the request's batches (each is past every layout's
    /// memory wall, or not a multiple of an expert-parallel layout's groups).
    NoGivenBatch {
        /// The smallest batch asked for.
        given: u64,
        /// The layout that holds the largest batch.
        largest: Layout,
        /// That batch.
        max_batch: u64,
    },
    /// The model cannot be split into any layout within the budget.
    NoLayout,
    /// Layouts exist but none fits the memory.
    DoesNotFit {
        /// The layout whose fullest GPU comes closest, with that GPU's need and the memory
        /// available, bytes (none when no layout was assessed).
        closest: Option<(Layout, f64, f64)>,
        /// The smallest layout beyond the budget that fits one sequence.
        smallest_fitting: Option<TimedLayout>,
        /// The smallest layout beyond the budget that fits and meets the bound.
        smallest_meeting: Option<TimedLayout>,
    },
}

/// The request a refusal answers: the model, GPU and bounds it was planned for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanRefused {
    /// Model name.
    pub model: String,
    /// GPU name.
    pub gpu: String,
    /// Cached tokens per sequence.
    pub ctx: u64,
    /// The TPOT bound, seconds.
    pub tpot_bound_s: f64,
    /// Most GPUs per replica.
    pub max_gpus: u64,
    /// Most GPUs the search beyond the budget looked at ([`crate::plan::MAX_PLAN_GPUS`]).
    pub search_limit_gpus: u64,
    /// Why.
    pub refusal: PlanRefusal,
}

impl PlanRefused {
    /// The input the refusal is about: `tpot_ms` when layouts fit but are too slow, `batch`
    /// when none holds a batch asked for, else `max_gpus`.
    pub fn field(&self) -> &'static str {
        match self.refusal {
            PlanRefusal::TooSlow { .. } => "tpot_ms",
            PlanRefusal::NoGivenBatch { .. } => "batch",
            _ => "max_gpus",
        }
    }
}

/// The deployment under load that came closest to the SLAs, with the p99s it reached.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ServingClosest {
    /// The layout of each replica.
    pub layout: Layout,
    /// Replicas.
    pub replicas: u64,
    /// Most sequences per step.
    pub max_seqs: u64,
    /// Prefill chunk, tokens.
    pub chunk_tokens: u64,
    /// p99 time to first token, seconds.
    pub ttft_p99_s: f64,
    /// p99 time per output token, seconds.
    pub tpot_p99_s: f64,
}

/// Why a plan under load (`plan` with a rate) found no deployment holding both p99 SLAs, in
/// quantities; `llm_ledger_report::plan_serving::refusal_message` words it. Carried by
/// [`crate::error::Error::NoServingPlan`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServingRefused {
    /// Model name.
    pub model: String,
    /// GPU name.
    pub gpu: String,
    /// Arrival rate, requests per second.
    pub rate_per_s: f64,
    /// p99 TTFT bound, seconds.
    pub ttft_bound_s: f64,
    /// p99 TPOT bound, seconds.
    pub tpot_bound_s: f64,
    /// Most GPUs per replica.
    pub max_gpus: u64,
    /// The closest deployment (none when no layout could serve a request at all).
    pub closest: Option<ServingClosest>,
}

impl ServingRefused {
    /// The input the refusal is about: the SLA the closest deployment misses by more
    /// (`ttft_ms` or `tpot_ms`), or `max_gpus` when nothing could serve.
    pub fn field(&self) -> &'static str {
        match &self.closest {
            Some(c) if c.ttft_p99_s / self.ttft_bound_s >= c.tpot_p99_s / self.tpot_bound_s => "ttft_ms",
            Some(_) => "tpot_ms",
            None => "max_gpus",
        }
    }
}
