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
        self.add_parts(sc, &op.cost, op.math, n, one)
    }

    /// [`StepSummary::add`] from an operator's cost and math format.
    #[inline(always)]
    fn add_parts(&mut self, sc: &Scenario, op_cost: &Cost, math: MathFormat, n: u64, one: Timing) -> (Cost, Timing) {
        let nf = n as f64;
        let cost = *op_cost * nf;
        let timing = one.times(nf);
        let peak = sc.gpu.peak(math).unwrap_or(sc.gpu.peak_flops_per_s.vector);
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
    summarise_each_op(sc, |op, _, _, cost, timing| f(op.kind, cost, timing))
}

/// One operator of a step as the ledger sums it ([`StepParts`]).
#[derive(Debug, Clone, Copy)]
struct Part {
    kind: OpKind,
    math: MathFormat,
    instances: u64,
    /// One instance's cost and timing.
    cost: Cost,
    one: Timing,
    /// It reads the cached context ([`crate::ops::reads_context`]).
    context: bool,
}

/// A single-stage step's operators as [`summarise_each`] sums them, kept so that a step of the
/// same scenario, sequences and new tokens but other contexts (a decode at longer contexts, a
/// serving step with other chunks) is summed again with only the operators that read the
/// cached context ([`crate::ops::reads_context`]) built and timed afresh
/// ([`crate::parallel::pipeline::for_each_context_op`]): every other operator's cost and time
/// is a function of the scenario and the step's sequences and new tokens alone
/// ([`crate::workload::Workload::with_chunks`]: only the attention geometry reads the
/// contexts). The sums run in the ledger's order, so the summary is [`summarise_each`]'s to the
/// last bit (tests check it across models, engines, layouts and clocks).
#[derive(Debug, Clone, Default)]
pub struct StepParts {
    parts: Vec<Part>,
    /// The context-reading operators of the step being summed: (cost, timing) of one instance.
    fresh: Vec<(Cost, Timing)>,
}

impl StepParts {
    /// The parts of `sc`'s step and its summary, each operator handed to `f` as
    /// [`summarise_each`] does; `None` with pipeline stages (use [`summarise_each`]).
    pub fn new(sc: &Scenario, mut f: impl FnMut(OpKind, &Cost, &Timing)) -> Option<(StepParts, StepSummary)> {
        if sc.parallel.pp != 1 {
            return None;
        }
        let mut parts = Vec::with_capacity(24);
        let s = summarise_each_op(sc, |op, n, one, cost, timing| {
            let context = crate::ops::reads_context(op.kind);
            parts.push(Part { kind: op.kind, math: op.math, instances: n, cost: op.cost, one, context });
            f(op.kind, cost, timing);
        });
        Some((StepParts { parts, fresh: Vec::new() }, s))
    }

    /// The summary of `sc`, a step of the same scenario, sequences and new tokens as the one
    /// these parts were made from, with its context-reading operators built and timed for its
    /// own contexts; each operator handed to `f` as [`summarise_each`] does. `None` if `sc`'s
    /// step does not match the parts (another count of context-reading operators).
    pub fn summarise_each(&mut self, sc: &Scenario, mut f: impl FnMut(OpKind, &Cost, &Timing)) -> Option<StepSummary> {
        let fresh = &mut self.fresh;
        fresh.clear();
        crate::parallel::pipeline::for_each_context_op(sc, |op, _, one| fresh.push((op.cost, one)))?;
        if fresh.len() != self.parts.iter().filter(|p| p.context).count() {
            return None;
        }
        let mut s = StepSummary::empty(sc);
        let mut next = fresh.iter();
        for p in &self.parts {
            let (cost, one) = if p.context { next.next().copied()? } else { (p.cost, p.one) };
            let (cost, timing) = s.add_parts(sc, &cost, p.math, p.instances, one);
            f(p.kind, &cost, &timing);
        }
        Some(s)
    }
}

/// [`summarise_each`], handing each operator itself (one instance and its timing) beside the
/// sums.
fn summarise_each_op(sc: &Scenario, mut f: impl FnMut(&Op, u64, Timing, &Cost, &Timing)) -> StepSummary {
    let mut s = StepSummary::empty(sc);
    s.pipeline = for_each_gpu_op(sc, |op, n, one| {
        let (cost, timing) = s.add(sc, op, n, one);
        f(op, n, one, &cost, &timing);
    });
    s
}

/// Rows in the order their kinds run inside a layer ([`OpKind`]'s order), each communication
/// row kept right after the row it followed: a model whose layers differ (a hybrid's recurrent
/// and attention layers, dense and MoE layers) lists each kind once, where it runs, whichever
/// layer shape came first; a uniform model's rows are already in this order.
fn in_kind_order(rows: &mut Vec<Row>) {
    let mut groups: Vec<Vec<Row>> = Vec::with_capacity(rows.len());
    for r in rows.drain(..) {
        match groups.last_mut() {
            Some(g) if r.op.is_comm() => g.push(r),
            _ => groups.push(vec![r]),
        }
    }
    groups.sort_by_key(|g| g[0].op);
    rows.extend(groups.into_iter().flatten());
}

impl Ledger {
    /// Build the ledger of one step.
    pub fn build(sc: &Scenario) -> Ledger {
        let mut rows: Vec<Row> = Vec::with_capacity(24);
        // Each kind's row, by the kind's discriminant (`u8::MAX`: none yet).
        let mut row_of = [u8::MAX; OpKind::ALL.len()];
        let mut summary = StepSummary::empty(sc);
        summary.pipeline = for_each_gpu_op(sc, |op, n, one| {
            let (cost, timing) = summary.add(sc, op, n, one);
            let at = &mut row_of[op.kind as usize];
            match rows.get_mut(usize::from(*at)) {
                Some(r) => {
                    r.instances += n;
                    r.cost += cost;
                    r.timing += timing;
                }
                None => {
                    *at = rows.len() as u8;
                    rows.push(Row { op: op.kind, instances: n, cost, math: op.math, timing, fused: timing.fused })
                }
            }
        });
        in_kind_order(&mut rows);
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
