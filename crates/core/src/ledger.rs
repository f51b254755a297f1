//! The ledger: one row per operator kind, summed over the layers it occurs in, with its roofline
//! time; the step time is the sum of the rows.
//!
//! Each operator instance (one layer's q_proj, say) gets its own roofline time, and a row's time is
//! the sum over its instances; the step is the sum of rows. The floors are the reference calculator's: all bytes at
//! full bandwidth, and each operator's FLOPs at its full peak.
//!
//! In a parallel deployment the rows are one GPU's (the busiest), with communication rows timed on
//! their link and, with pipeline stages, the time it waits for the others
//! ([`crate::parallel::for_each_gpu_op`]); the step is still the sum of the rows.

use crate::cost::Cost;
use crate::ops::{Op, OpKind};
use crate::parallel::{for_each_gpu_op, PipelineTiming};
use crate::precision::MathFormat;
use crate::roofline::Timing;
use crate::scenario::Scenario;
use crate::workload::{Counting, Phase};

/// One ledger row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Operator kind.
    pub op: OpKind,
    /// Instances summed into the row (layers it occurs in; 1 for embedding and head).
    pub instances: u64,
    /// FLOPs and bytes over all instances.
    pub cost: Cost,
    /// Math format (peak) it runs against.
    pub math: MathFormat,
    /// Roofline parts and time over all instances.
    pub timing: Timing,
    /// Runs inside another operator's kernel (FlashAttention's softmax, an engine's epilogue);
    /// `timing.time_s` is the time it adds there.
    pub fused: bool,
}

/// Totals of a step, without per-row detail (the sweep hot path; no allocation).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepSummary {
    /// FLOPs and bytes of the step.
    pub cost: Cost,
    /// Sum of per-operator roofline times.
    pub timing: Timing,
    /// Σ FLOPs ÷ peak of each operator's math format, at 100 % (seconds).
    pub compute_floor_s: f64,
    /// All HBM bytes ÷ peak bandwidth, at 100 % (seconds): the counted bytes less those the
    /// clock's fusions keep on chip ([`Timing::hbm_bytes`]; all of them under the roofline).
    pub memory_floor_s: f64,
    /// Tokens the step produces (decode: one per sequence) or processes (prefill: every prompt token).
    pub tokens: f64,
    /// How a pipeline spent the step (with pipeline stages only).
    pub pipeline: Option<PipelineTiming>,
}

impl StepSummary {
    /// Step time, seconds.
    pub fn step_time_s(&self) -> f64 {
        self.timing.time_s
    }

    /// Tokens per second: decode output tokens, or prefill input tokens.
    pub fn tokens_per_s(&self) -> f64 {
        self.tokens / self.timing.time_s
    }
}

/// A full ledger.
#[derive(Debug, Clone)]
pub struct Ledger {
    /// Rows in execution order.
    pub rows: Vec<Row>,
    /// Totals.
    pub summary: StepSummary,
}

fn step_tokens(sc: &Scenario) -> f64 {
    match sc.workload.phase {
        Phase::Decode => sc.workload.contexts.batch() as f64,
        Phase::Prefill => sc.workload.contexts.total_tokens(),
    }
}

impl StepSummary {
    fn empty(sc: &Scenario) -> StepSummary {
        StepSummary { tokens: step_tokens(sc), ..StepSummary::default() }
    }

    /// Add `n` instances of `op`, each taking `one`; returns their cost and timing.
    #[inline]
    fn add(&mut self, sc: &Scenario, op: &Op, n: u64, one: Timing) -> (Cost, Timing) {
        let nf = n as f64;
        let cost = op.cost * nf;
        let timing = one.times(nf);
        let peak = sc.gpu.peak(op.math).unwrap_or(sc.gpu.peak_flops_per_s.vector);
        self.cost += cost;
        self.timing += timing;
        self.compute_floor_s += cost.flops / peak;
        self.memory_floor_s += timing.hbm_bytes / sc.gpu.memory_bandwidth_bytes_per_s;
        (cost, timing)
    }
}

/// Totals of one step without building rows.
pub fn summarise(sc: &Scenario) -> StepSummary {
    summarise_each(sc, |_, _, _| {})
}

/// Totals of one step, handing each operator group's kind, cost and timing (summed over the
/// layers that share its shape) to `f` as it goes; no allocation (the sweep uses it to find the
/// largest row).
pub fn summarise_each(sc: &Scenario, mut f: impl FnMut(OpKind, &Cost, &Timing)) -> StepSummary {
    let mut s = StepSummary::empty(sc);
    s.pipeline = for_each_gpu_op(sc, |op, n, one| {
        let (cost, timing) = s.add(sc, op, n, one);
        f(op.kind, &cost, &timing);
    });
    s
}

impl Ledger {
    /// Build the ledger of one step.
    pub fn build(sc: &Scenario) -> Ledger {
        let mut rows: Vec<Row> = Vec::with_capacity(24);
        let mut summary = StepSummary::empty(sc);
        summary.pipeline = for_each_gpu_op(sc, |op, n, one| {
            let (cost, timing) = summary.add(sc, op, n, one);
            match rows.iter_mut().find(|r| r.op == op.kind) {
                Some(r) => {
                    r.instances += n;
                    r.cost += cost;
                    r.timing += timing;
                }
                None => rows.push(Row { op: op.kind, instances: n, cost, math: op.math, timing, fused: timing.fused }),
            }
        });
        if sc.workload.counting == Counting::Seed {
            // The seed lists the weight GEMMs first, then attention, then lm_head.
            const SEED_ORDER: [OpKind; 5] =
                [OpKind::QkvProj, OpKind::OProj, OpKind::Mlp, OpKind::Attention, OpKind::LmHead];
            rows.sort_by_key(|r| SEED_ORDER.iter().position(|k| *k == r.op).unwrap_or(SEED_ORDER.len()));
        }
        Ledger { rows, summary }
    }

    /// The row for an operator kind.
    pub fn row(&self, op: OpKind) -> Option<&Row> {
        self.rows.iter().find(|r| r.op == op)
    }

    /// The row with the largest time.
    pub fn largest_row(&self) -> Option<&Row> {
        self.rows.iter().max_by(|a, b| a.timing.time_s.total_cmp(&b.timing.time_s))
    }
}
