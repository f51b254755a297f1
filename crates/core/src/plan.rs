//! Planning a deployment: which tensor × pipeline (× expert) parallel layout, and which batch,
//! serve a model at a time-per-output-token bound for the least money.
//!
//! For every layout of at most `max_gpus` GPUs (TP and EP powers of two, any number of stages up
//! to the layers; layouts the model cannot take, such as a TP that does not divide the heads, are
//! skipped) the decode step at `ctx` cached tokens per sequence is costed per GPU
//! ([`crate::parallel`]):
//!
//! * **memory**: the largest batch whose fullest GPU fits this decode step
//!   ([`crate::memory::Fit::step`], [`FitBasis::Step`]: `ctx + 1` tokens held per sequence);
//! * **latency**: TPOT = the step time (the pipeline's cycle with stages); the batches that meet
//!   `TPOT ≤ X` are `1 … B*` (TPOT never falls as the batch grows), found by bisection;
//! * **money**: `$/M output tokens = GPUs × price/3600 × TPOT ÷ batch × 10⁶`; the largest batch
//!   that fits and meets the bound is the cheapest ([`crate::economics`]).
//!
//! Layouts are ranked by that cost (then by fewer GPUs). The Pareto front is over every layout
//! and candidate batch that fits: the points no other point beats on both TPOT (lower) and
//! tokens per second per GPU (higher). Expert-parallel batches are multiples of `ep`, so the
//! groups split the batch evenly.

use crate::error::integer_in;
use crate::error::{Error, Result};
use crate::ledger::summarise;
use crate::memory::{at_uniform, Fit, FitBasis, Footprint};
use crate::parallel::{ParallelSpec, Parallelism, MAX_GPUS_PER_REPLICA};
pub use crate::plan_refusal::{Layout, PlanRefusal, PlanRefused, TimedLayout};
use crate::scenario::Scenario;
use crate::serving::Price;
use crate::sweep::Axis;
use crate::workload::Phase;
use rayon::prelude::*;
use serde::Serialize;

/// Most GPUs a plan may use.
pub const MAX_PLAN_GPUS: u64 = 1024;

/// What to plan for.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    /// Cached tokens per sequence at the decode step.
    pub ctx: u64,
    /// Upper bound on the time per output token, seconds.
    pub tpot_bound_s: f64,
    /// Most GPUs per replica.
    pub max_gpus: u64,
    /// GPU-hour price.
    pub price: Price,
    /// Runtime reserve per GPU, bytes.
    pub reserve_bytes: f64,
    /// Candidate batches (default: every batch, by bisection, and powers of two for the front).
    pub batches: Option<Axis>,
}

/// A layout at a batch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PlanPoint {
    /// Tensor-parallel GPUs.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Expert-parallel groups.
    pub ep: u64,
    /// GPUs per replica.
    pub gpus: u64,
    /// Sequences per step.
    pub batch: u64,
    /// Time per output token (the decode step), seconds.
    pub tpot_s: f64,
    /// Output tokens per second of one replica.
    pub tokens_per_s: f64,
    /// Output tokens per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// USD per million output tokens.
    pub usd_per_million_tokens: f64,
    /// Memory of the fullest GPU, bytes.
    pub memory_bytes: f64,
    /// Weights on the fullest GPU, bytes.
    pub weight_bytes: f64,
    /// Largest batch that fits at this context.
    pub max_batch: u64,
    /// Share of the step spent on links.
    pub link_share: f64,
    /// Whether TPOT ≤ the bound.
    pub meets_bound: bool,
    /// Replicas that fit in `max_gpus`.
    pub replicas: u64,
}

/// Why a layout was not ranked.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Refusal {
    /// Not even one sequence fits on its fullest GPU.
    DoesNotFit {
        /// Memory of the fullest GPU at batch 1, bytes.
        memory_bytes: f64,
        /// Memory available per GPU, bytes.
        available_bytes: f64,
    },
    /// Batch 1 already misses the bound.
    TooSlow {
        /// TPOT at batch 1, seconds.
        tpot_s: f64,
    },
}

/// A layout that was not ranked, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refused {
    /// Tensor-parallel GPUs.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Expert-parallel groups.
    pub ep: u64,
    /// Why.
    #[serde(flatten)]
    pub refusal: Refusal,
}

/// The plan.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The cheapest batch of every layout that fits and meets the bound, cheapest first.
    pub ranked: Vec<PlanPoint>,
    /// Throughput per GPU against TPOT: the points nothing beats on both, by TPOT.
    pub pareto: Vec<PlanPoint>,
    /// Layouts that fit nothing or miss the bound at batch 1.
    pub refused: Vec<Refused>,
    /// Layouts the model can take within the GPU budget.
    pub layouts: usize,
    /// The basis of every fit: the decode step at `ctx`.
    pub fit_basis: FitBasis,
}

/// Layouts of at most `max_gpus` GPUs that `base`'s model and GPU can take: TP and EP powers of
/// two, any number of stages.
pub fn layouts(base: &Scenario, max_gpus: u64) -> Vec<Scenario> {
    let powers = |limit: u64| std::iter::successors(Some(1u64), |x| x.checked_mul(2)).take_while(move |x| *x <= limit);
    let max_ep = if base.model.is_moe() { max_gpus } else { 1 };
    let mut out = Vec::new();
    for tp in powers(max_gpus) {
        for ep in powers(max_ep.min(max_gpus / tp)) {
            for pp in 1..=(max_gpus / (tp * ep)).min(base.model.num_layers()) {
                let spec = ParallelSpec { tp, pp, ep, ..base_spec(base) };
                if let Ok(sc) = base.with_parallel(&spec) {
                    out.push(sc);
                }
            }
        }
    }
    out
}

/// The base scenario's link choice and efficiency, one replica.
fn base_spec(base: &Scenario) -> ParallelSpec {
    let p = &base.parallel;
    ParallelSpec {
        interconnect: Some(p.interconnect).filter(|_| !p.is_single()),
        link_efficiency: p.link_efficiency,
        ..ParallelSpec::default()
    }
}

fn evaluate(sc: &Scenario, req: &PlanRequest, batch: u64, max_batch: u64) -> PlanPoint {
    let s = at_uniform(sc, batch, req.ctx);
    let sum = summarise(&s);
    let fp = Footprint::of(&s, req.reserve_bytes);
    let p = &sc.parallel;
    let gpus = p.gpus_per_replica();
    let tpot = sum.step_time_s();
    let per_s = sum.tokens_per_s();
    PlanPoint {
        tp: p.tp,
        pp: p.pp,
        ep: p.ep,
        gpus,
        batch,
        tpot_s: tpot,
        tokens_per_s: per_s,
        tokens_per_s_per_gpu: per_s / gpus as f64,
        usd_per_million_tokens: gpus as f64 * req.price.usd_per_s() * tpot / batch as f64 * 1e6,
        memory_bytes: fp.memory_bytes,
        weight_bytes: fp.weight_bytes,
        max_batch,
        link_share: sum.timing.link_s / tpot,
        meets_bound: tpot <= req.tpot_bound_s,
        replicas: req.max_gpus / gpus,
    }
}

/// The largest batch (a multiple of `step`) in `1..=most` meeting the bound, given that `step`
/// meets it.
fn largest_meeting(sc: &Scenario, req: &PlanRequest, step: u64, most: u64) -> PlanPoint {
    let (mut lo, mut hi) = (1, most / step);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if evaluate(sc, req, mid * step, most).meets_bound {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    evaluate(sc, req, lo * step, most)
}

/// What one layout gives: its best point under the bound, or why it is refused, and every batch
/// it evaluated (for the Pareto front).
struct Assessed {
    best: Option<PlanPoint>,
    refused: Option<Refused>,
    evaluated: Vec<PlanPoint>,
}

fn assess(sc: &Scenario, req: &PlanRequest) -> Assessed {
    let p = &sc.parallel;
    let step = p.ep;
    let most = Fit::step(&at_uniform(sc, step, req.ctx), req.reserve_bytes).max_batch.unwrap_or(0);
    let most = most - most % step;
    if most == 0 {
        let fp = Footprint::of(&at_uniform(sc, step, req.ctx), req.reserve_bytes);
        let refusal = Refusal::DoesNotFit { memory_bytes: fp.memory_bytes, available_bytes: fp.available_bytes };
        return Assessed {
            best: None,
            refused: Some(Refused { tp: p.tp, pp: p.pp, ep: p.ep, refusal }),
            evaluated: Vec::new(),
        };
    }
    let batches: Vec<u64> = match &req.batches {
        Some(axis) => axis.iter().filter(|b| *b <= most && b % step == 0).collect(),
        None => {
            std::iter::successors(Some(step), |b| b.checked_mul(2)).take_while(|b| *b <= most).chain([most]).collect()
        }
    };
    let evaluated: Vec<PlanPoint> = batches.iter().map(|b| evaluate(sc, req, *b, most)).collect();
    let first = evaluate(sc, req, step, most);
    let best = match &req.batches {
        Some(_) => evaluated.iter().filter(|x| x.meets_bound).max_by_key(|x| x.batch).copied(),
        None if first.meets_bound => Some(largest_meeting(sc, req, step, most)),
        None => None,
    };
    let refused = best.is_none().then(|| Refused {
        tp: p.tp,
        pp: p.pp,
        ep: p.ep,
        refusal: Refusal::TooSlow { tpot_s: first.tpot_s },
    });
    Assessed { best, refused, evaluated }
}

/// Plan the deployment of `base`'s model on `base`'s GPU (module docs). Errors when no layout
/// fits or none meets the bound, saying what would.
pub fn plan(base: &Scenario, req: &PlanRequest) -> Result<Plan> {
    if base.workload.phase != Phase::Decode {
        return Err(Error::invalid("phase", base.workload.phase, "decode: a plan sizes the time per output token"));
    }
    if !(1..=MAX_PLAN_GPUS).contains(&req.max_gpus) {
        return Err(Error::invalid("max_gpus", req.max_gpus, integer_in(1, MAX_PLAN_GPUS)));
    }
    let candidates = layouts(base, req.max_gpus);
    // Layouts are independent: assess them in parallel (rayon), then gather in layout order.
    let outcomes: Vec<Assessed> = candidates.par_iter().map(|sc| assess(sc, req)).collect();
    let (mut ranked, mut points, mut refused) = (Vec::new(), Vec::new(), Vec::new());
    for a in outcomes {
        if let Some(b) = a.best {
            ranked.push(b);
            points.push(b);
        }
        refused.extend(a.refused);
        points.extend(a.evaluated);
    }
    if ranked.is_empty() {
        return Err(explain(base, req, &candidates, &refused));
    }
    ranked.sort_by(|a, b| a.usd_per_million_tokens.total_cmp(&b.usd_per_million_tokens).then(a.gpus.cmp(&b.gpus)));
    Ok(Plan { ranked, pareto: pareto(points), refused, layouts: candidates.len(), fit_basis: FitBasis::Step })
}

/// The points no other beats on both lower TPOT and higher tokens/s per GPU, by TPOT.
pub fn pareto(mut points: Vec<PlanPoint>) -> Vec<PlanPoint> {
    points
        .sort_by(|a, b| a.tpot_s.total_cmp(&b.tpot_s).then(b.tokens_per_s_per_gpu.total_cmp(&a.tokens_per_s_per_gpu)));
    let mut front: Vec<PlanPoint> = Vec::new();
    for p in points {
        if front.last().is_none_or(|f| p.tokens_per_s_per_gpu > f.tokens_per_s_per_gpu) {
            front.push(p);
        }
    }
    front
}

/// Why nothing was ranked and what would be, as quantities ([`PlanRefusal`]).
fn explain(base: &Scenario, req: &PlanRequest, candidates: &[Scenario], refused: &[Refused]) -> Error {
    let layout = |r: &Refused| Layout { tp: r.tp, pp: r.pp, ep: r.ep };
    let slow = refused.iter().filter_map(|r| match r.refusal {
        Refusal::TooSlow { tpot_s } => Some((r, tpot_s)),
        Refusal::DoesNotFit { .. } => None,
    });
    let refusal = if let Some((r, t)) = slow.min_by(|a, b| a.1.total_cmp(&b.1)) {
        PlanRefusal::TooSlow { fastest: TimedLayout { layout: layout(r), tpot_s: t }, batch: r.ep }
    } else if candidates.is_empty() {
        PlanRefusal::NoLayout
    } else {
        let closest = refused
            .iter()
            .filter_map(|r| match r.refusal {
                Refusal::DoesNotFit { memory_bytes, available_bytes } => {
                    Some((layout(r), memory_bytes, available_bytes))
                }
                Refusal::TooSlow { .. } => None,
            })
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let found =
            if closest.is_some() { smallest_fitting(base, req) } else { Smallest { fitting: None, meeting: None } };
        let timed = |x: Option<(Parallelism, f64)>| {
            x.map(|(p, t)| TimedLayout { layout: Layout { tp: p.tp, pp: p.pp, ep: p.ep }, tpot_s: t })
        };
        PlanRefusal::DoesNotFit {
            closest,
            smallest_fitting: timed(found.fitting),
            smallest_meeting: timed(found.meeting),
        }
    };
    Error::NoPlan(Box::new(PlanRefused {
        model: base.model.name.clone(),
        gpu: base.gpu.name.clone(),
        ctx: req.ctx,
        tpot_bound_s: req.tpot_bound_s,
        max_gpus: req.max_gpus,
        search_limit_gpus: MAX_PLAN_GPUS,
        refusal,
    }))
}

/// The smallest layouts beyond the budget: one that fits one sequence and one that also meets
/// the bound, each with its TPOT at batch 1.
struct Smallest {
    fitting: Option<(Parallelism, f64)>,
    meeting: Option<(Parallelism, f64)>,
}

/// The layouts with the fewest GPUs (then the least memory) that fit one sequence, and that also
/// meet the bound, searching budgets up to [`MAX_PLAN_GPUS`].
fn smallest_fitting(base: &Scenario, req: &PlanRequest) -> Smallest {
    let mut found = Smallest { fitting: None, meeting: None };
    let mut budget = req.max_gpus.max(1);
    while budget < MAX_PLAN_GPUS.min(MAX_GPUS_PER_REPLICA) && found.meeting.is_none() {
        budget = (budget * 2).min(MAX_PLAN_GPUS);
        let mut fits: Vec<(Scenario, f64, f64)> = layouts(base, budget)
            .into_iter()
            .filter_map(|sc| {
                let one = at_uniform(&sc, sc.parallel.ep, req.ctx);
                let fp = Footprint::of(&one, req.reserve_bytes);
                fp.fits.then(|| {
                    let t = summarise(&one).step_time_s();
                    (sc, fp.memory_bytes, t)
                })
            })
            .collect();
        fits.sort_by(|a, b| {
            a.0.parallel.gpus_per_replica().cmp(&b.0.parallel.gpus_per_replica()).then(a.1.total_cmp(&b.1))
        });
        let pick = |x: &(Scenario, f64, f64)| ((*x.0.parallel).clone(), x.2);
        if found.fitting.is_none() {
            found.fitting = fits.first().map(pick);
        }
        found.meeting = fits.iter().find(|x| x.2 <= req.tpot_bound_s).map(pick);
    }
    found
}
