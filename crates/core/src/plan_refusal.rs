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
/// (`llm_ledger_report::plan::refusal_message`). Carried by [`Error::NoPlan`].
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
    /// The input the refusal is about: `tpot_ms` when layouts fit but are too slow, else
    /// `max_gpus`.
    pub fn field(&self) -> &'static str {
        match self.refusal {
            PlanRefusal::TooSlow { .. } => "tpot_ms",
            _ => "max_gpus",
        }
    }
}
