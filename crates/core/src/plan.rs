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
//!
//! Two questions use the same search without a bound: [`frontier`] lists every deployment
//! (layout × batch up to the memory wall) with its tokens per second per user (`1 ÷ TPOT`) and
//! per GPU, and their Pareto front; [`fewest_gpus`] answers "how many of this GPU for this batch
//! and context".
//!
//! **Size.** A search's work is its step evaluations: one per layout and candidate batch (with
//! the default batches, the powers of two and about `log₂(most)` bisection probes). Before it
//! starts, each search counts them from each layout's memory wall (cheap: no step is costed) and
//! refuses more than [`MAX_PLAN_EVALUATIONS`], naming `batch` (or `max_gpus`) and the most that
//! would fit; while it runs it checks its [`Stop`] flag before every evaluation.

use crate::error::integer_in;
use crate::error::{Error, Result};
use crate::ledger::summarise;
use crate::memory::{at_uniform, Fit, FitBasis, Footprint};
use crate::parallel::{ParallelSpec, Parallelism, MAX_GPUS_PER_REPLICA};
pub use crate::plan_refusal::{Layout, PlanRefusal, PlanRefused, TimedLayout};
use crate::scenario::Scenario;
use crate::serving::Price;
use crate::stop::Stop;
use crate::sweep::Axis;
use crate::workload::Phase;
use rayon::prelude::*;
use serde::Serialize;

/// Most GPUs a plan may use.
pub const MAX_PLAN_GPUS: u64 = 1024;

/// Most step evaluations one search may make (module docs): 2¹⁶ = 65,536, a search a person
/// waits for (56,000 evaluations of Llama 3 8B across its 94 layouts within 64 GPUs took 1.4 s on
/// two cores in a release build; a larger model costs more per evaluation).
pub const MAX_PLAN_EVALUATIONS: u64 = 1 << 16;

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
    /// Its smallest batch already misses the bound (`ep` sequences, or the fastest of the
    /// request's batches that fit).
    TooSlow {
        /// TPOT at that batch, seconds.
        tpot_s: f64,
        /// That batch.
        batch: u64,
    },
    /// It fits one sequence, but none of the request's batches: each is past its memory wall,
    /// or (expert parallel) not a multiple of its groups.
    NoGivenBatch {
        /// The largest batch it holds (a multiple of `ep`).
        max_batch: u64,
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
    /// Layouts that fit nothing, miss the bound at their smallest batch, or hold none of the
    /// request's batches.
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
        usd_per_million_tokens: crate::economics::decode_step_usd_per_million_output(req.price, gpus, batch, tpot),
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
fn largest_meeting(sc: &Scenario, req: &PlanRequest, step: u64, most: u64, stop: Stop<'_>) -> Result<PlanPoint> {
    // `step` sequences (m = 1) meet the bound (the caller checked); past `most / step` nothing fits.
    // A stopped search answers "no" to every probe, so the bisection ends at once.
    let m = crate::bisect::last_true_in(1, most / step + 1, |m| {
        !stop.stopped() && evaluate(sc, req, m * step, most).meets_bound
    });
    stop.check()?;
    Ok(evaluate(sc, req, m * step, most))
}

/// What one layout gives: its best point under the bound, or why it is refused, and every batch
/// it evaluated (for the Pareto front).
struct Assessed {
    best: Option<PlanPoint>,
    refused: Option<Refused>,
    evaluated: Vec<PlanPoint>,
}

/// The largest batch (a multiple of `ep`) of a layout that fits at the request's context, or why
/// not even `ep` sequences do.
fn most_that_fits(sc: &Scenario, req: &PlanRequest) -> std::result::Result<u64, Refused> {
    let p = &sc.parallel;
    let step = p.ep;
    let most = Fit::step(&at_uniform(sc, step, req.ctx), req.reserve_bytes).max_batch.unwrap_or(0);
    let most = most - most % step;
    if most == 0 {
        let fp = Footprint::of(&at_uniform(sc, step, req.ctx), req.reserve_bytes);
        let refusal = Refusal::DoesNotFit { memory_bytes: fp.memory_bytes, available_bytes: fp.available_bytes };
        return Err(Refused { tp: p.tp, pp: p.pp, ep: p.ep, refusal });
    }
    Ok(most)
}

/// A layout's candidate batches up to `most`: the request's (multiples of `ep`), or `ep`, `2·ep`,
/// `4·ep` … and `most` itself.
fn candidate_batches(sc: &Scenario, req: &PlanRequest, most: u64) -> Vec<u64> {
    let step = sc.parallel.ep;
    match &req.batches {
        Some(axis) => axis.iter_at_most(most).filter(|b| b % step == 0).collect(),
        None => {
            let mut v: Vec<u64> =
                std::iter::successors(Some(step), |b| b.checked_mul(2)).take_while(|b| *b <= most).collect();
            if v.last() != Some(&most) {
                v.push(most);
            }
            v
        }
    }
}

/// An upper bound on the step evaluations a layout whose memory wall is `most` costs: its
/// candidate batches (the request's up to `most`, or the powers of two and `most`), and with the
/// default batches the bisection's probes.
fn evaluations(req: &PlanRequest, most: u64, bisection: bool) -> u64 {
    let log2 = u64::from(u64::BITS - most.leading_zeros());
    match &req.batches {
        Some(axis) => axis.count_at_most(most),
        None => log2 + 1 + if bisection { log2 + 2 } else { 0 },
    }
}

/// Each layout's memory wall, and the search's size checked against [`MAX_PLAN_EVALUATIONS`]
/// before any step is costed (module docs).
fn sized(
    candidates: &[Scenario],
    req: &PlanRequest,
    bisection: bool,
    stop: Stop<'_>,
) -> Result<Vec<std::result::Result<u64, Refused>>> {
    let mosts: Vec<std::result::Result<u64, Refused>> =
        candidates.par_iter().map(|sc| if stop.stopped() { Ok(0) } else { most_that_fits(sc, req) }).collect();
    stop.check()?;
    let per_layout: Vec<u64> = mosts.iter().flatten().map(|m| evaluations(req, *m, bisection)).collect();
    let total: u64 = per_layout.iter().fold(0u64, |a, n| a.saturating_add(*n));
    if total <= MAX_PLAN_EVALUATIONS {
        return Ok(mosts);
    }
    let layouts = per_layout.len() as u64;
    Err(match &req.batches {
        Some(axis) => Error::invalid(
            "batch",
            format!("{} candidate batches", crate::error::grouped(axis.len())),
            format!(
                "at most {} step evaluations in one search: these batches take {} across the {} layouts that fit in {} GPUs; ask for at most {} batches (a list or a range), or fewer GPUs",
                crate::error::grouped(MAX_PLAN_EVALUATIONS),
                crate::error::grouped(total),
                crate::error::grouped(layouts),
                req.max_gpus,
                crate::error::grouped((MAX_PLAN_EVALUATIONS / layouts.max(1)).max(1)),
            ),
        ),
        None => Error::invalid(
            "max_gpus",
            req.max_gpus,
            format!(
                "at most {} step evaluations in one search: {} layouts fit in {} GPUs and take {}; ask for fewer GPUs, or give `batch` a short list",
                crate::error::grouped(MAX_PLAN_EVALUATIONS),
                crate::error::grouped(layouts),
                req.max_gpus,
                crate::error::grouped(total),
            ),
        ),
    })
}

fn assess(
    sc: &Scenario,
    req: &PlanRequest,
    most: std::result::Result<u64, Refused>,
    stop: Stop<'_>,
) -> Result<Assessed> {
    let p = &sc.parallel;
    let step = p.ep;
    let most = match most {
        Ok(most) => most,
        Err(refused) => return Ok(Assessed { best: None, refused: Some(refused), evaluated: Vec::new() }),
    };
    let batches = candidate_batches(sc, req, most);
    let evaluated = batches
        .iter()
        .map(|b| stop.check().map(|()| evaluate(sc, req, *b, most)))
        .collect::<Result<Vec<PlanPoint>>>()?;
    let refuse = |refusal| Some(Refused { tp: p.tp, pp: p.pp, ep: p.ep, refusal });
    let (best, refused) = match &req.batches {
        Some(_) => match evaluated.iter().filter(|x| x.meets_bound).max_by_key(|x| x.batch) {
            Some(b) => (Some(*b), None),
            None => match evaluated.iter().min_by(|a, b| a.tpot_s.total_cmp(&b.tpot_s)) {
                Some(f) => (None, refuse(Refusal::TooSlow { tpot_s: f.tpot_s, batch: f.batch })),
                None => (None, refuse(Refusal::NoGivenBatch { max_batch: most })),
            },
        },
        None => {
            stop.check()?;
            let first = evaluate(sc, req, step, most);
            if first.meets_bound {
                (Some(largest_meeting(sc, req, step, most, stop)?), None)
            } else {
                (None, refuse(Refusal::TooSlow { tpot_s: first.tpot_s, batch: step }))
            }
        }
    };
    Ok(Assessed { best, refused, evaluated })
}

/// Plan the deployment of `base`'s model on `base`'s GPU (module docs). Errors when no layout
/// fits or none meets the bound, saying what would, and when the search is too large (before it
/// starts).
pub fn plan(base: &Scenario, req: &PlanRequest) -> Result<Plan> {
    plan_within(base, req, Stop::NEVER)
}

/// [`plan`], stopped (with [`Error::Cancelled`]) when `stop` is set as it runs.
pub fn plan_within(base: &Scenario, req: &PlanRequest, stop: Stop<'_>) -> Result<Plan> {
    check(base, req)?;
    let candidates = layouts(base, req.max_gpus);
    let mosts = sized(&candidates, req, true, stop)?;
    // Layouts are independent: assess them in parallel (rayon), then gather in layout order.
    let outcomes = candidates
        .par_iter()
        .zip(mosts)
        .map(|(sc, most)| assess(sc, req, most, stop))
        .collect::<Result<Vec<Assessed>>>()?;
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

/// A deployment of the search: a layout at a batch, with the speed one sequence sees.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Deployment {
    /// The layout at its batch (`meets_bound` is against the request's bound, true without one).
    #[serde(flatten)]
    pub point: PlanPoint,
    /// Output tokens per second of one sequence: `1 ÷ TPOT`.
    pub tokens_per_s_per_user: f64,
    /// Whether it is on the Pareto front of tokens/s per GPU against tokens/s per user.
    pub front: bool,
}

impl Deployment {
    fn of(point: PlanPoint) -> Deployment {
        Deployment { point, tokens_per_s_per_user: 1.0 / point.tpot_s, front: false }
    }

    /// Whether two deployments are the same layout at the same batch.
    pub fn same(&self, other: &PlanPoint) -> bool {
        let p = &self.point;
        (p.tp, p.pp, p.ep, p.batch) == (other.tp, other.pp, other.ep, other.batch)
    }
}

/// Every deployment of a plan's search and the Pareto front among them ([`frontier`]).
#[derive(Debug, Clone, Serialize)]
pub struct Frontier {
    /// Every layout within the budget that fits, at each of its candidate batches: in layout
    /// order (TP, then EP, then PP), batches ascending.
    pub deployments: Vec<Deployment>,
    /// The deployments no other beats on both tokens/s per user and tokens/s per GPU, fastest
    /// per user first.
    pub front: Vec<Deployment>,
    /// Layouts that do not fit one sequence (`does_not_fit`), or none of the request's batches
    /// (`no_given_batch`).
    pub refused: Vec<Refused>,
    /// Layouts the model can take within the GPU budget.
    pub layouts: usize,
    /// The basis of every fit: the decode step at `ctx`.
    pub fit_basis: FitBasis,
}

/// Throughput per GPU against speed per user, over every deployment [`plan`] searches: each
/// layout of at most `max_gpus` GPUs that fits, at its candidate batches up to the memory wall
/// (`ep`, `2·ep`, `4·ep` … and the largest that fits, or the request's `batches`). A deployment's
/// tokens per second per user is `1 ÷ TPOT` at `ctx` cached tokens, its tokens per second per GPU
/// the replica's `batch ÷ TPOT` over its GPUs; the front is [`pareto`]'s. No TPOT bound is needed
/// (with one, each deployment says whether it meets it). Errors as [`plan`] does when no layout
/// fits one sequence.
pub fn frontier(base: &Scenario, req: &PlanRequest) -> Result<Frontier> {
    frontier_within(base, req, Stop::NEVER)
}

/// [`frontier`], stopped (with [`Error::Cancelled`]) when `stop` is set as it runs.
pub fn frontier_within(base: &Scenario, req: &PlanRequest, stop: Stop<'_>) -> Result<Frontier> {
    check(base, req)?;
    let candidates = layouts(base, req.max_gpus);
    let mosts = sized(&candidates, req, false, stop)?;
    let outcomes = candidates
        .par_iter()
        .zip(mosts)
        .map(|(sc, most)| -> Result<std::result::Result<Vec<PlanPoint>, Refused>> {
            let most = match most {
                Ok(most) => most,
                Err(refused) => return Ok(Err(refused)),
            };
            let batches = candidate_batches(sc, req, most);
            if batches.is_empty() {
                let p = &sc.parallel;
                return Ok(Err(Refused {
                    tp: p.tp,
                    pp: p.pp,
                    ep: p.ep,
                    refusal: Refusal::NoGivenBatch { max_batch: most },
                }));
            }
            let points = batches
                .into_iter()
                .map(|b| stop.check().map(|()| evaluate(sc, req, b, most)))
                .collect::<Result<_>>()?;
            Ok(Ok(points))
        })
        .collect::<Result<Vec<_>>>()?;
    let (mut deployments, mut refused) = (Vec::new(), Vec::new());
    for o in outcomes {
        match o {
            Ok(points) => deployments.extend(points.into_iter().map(Deployment::of)),
            Err(r) => refused.push(r),
        }
    }
    if deployments.is_empty() {
        return Err(explain(base, req, &candidates, &refused));
    }
    let front: Vec<Deployment> = pareto(deployments.iter().map(|d| d.point).collect())
        .into_iter()
        .map(|p| Deployment { front: true, ..Deployment::of(p) })
        .collect();
    for d in &mut deployments {
        d.front = front.iter().any(|f| f.same(&d.point));
    }
    Ok(Frontier { deployments, front, refused, layouts: candidates.len(), fit_basis: FitBasis::Step })
}

/// The fewest GPUs of `base`'s GPU that serve `batch` sequences of `ctx` cached tokens: among the
/// layouts within `max_gpus` whose fullest GPU fits that decode step (and that meet the TPOT
/// bound), those with the fewest GPUs, and of them the one with the shortest TPOT, at `batch`.
/// `None` when no layout within the budget does; an expert-parallel layout takes only batches
/// its groups split evenly.
pub fn fewest_gpus(base: &Scenario, req: &PlanRequest, batch: u64) -> Result<Option<PlanPoint>> {
    fewest_gpus_within(base, req, batch, Stop::NEVER)
}

/// [`fewest_gpus`], stopped (with [`Error::Cancelled`]) when `stop` is set as it runs.
pub fn fewest_gpus_within(base: &Scenario, req: &PlanRequest, batch: u64, stop: Stop<'_>) -> Result<Option<PlanPoint>> {
    check(base, req)?;
    let mut candidates = layouts(base, req.max_gpus);
    candidates.retain(|sc| batch % sc.parallel.ep == 0);
    candidates.sort_by_key(|sc| sc.parallel.gpus_per_replica());
    let mut start = 0;
    while start < candidates.len() {
        let gpus = candidates[start].parallel.gpus_per_replica();
        let end = start + candidates[start..].iter().take_while(|sc| sc.parallel.gpus_per_replica() == gpus).count();
        stop.check()?;
        let best = candidates[start..end]
            .par_iter()
            .filter_map(|sc| {
                let most = most_that_fits(sc, req).ok().filter(|m| *m >= batch && !stop.stopped())?;
                Some(evaluate(sc, req, batch, most))
            })
            .filter(|p| p.meets_bound)
            .min_by(|a, b| a.tpot_s.total_cmp(&b.tpot_s));
        stop.check()?;
        if best.is_some() {
            return Ok(best);
        }
        start = end;
    }
    Ok(None)
}

/// The checks every search makes before it starts: decode, and a GPU budget in range.
fn check(base: &Scenario, req: &PlanRequest) -> Result<()> {
    if base.workload.phase != Phase::Decode {
        return Err(Error::invalid("phase", base.workload.phase, "decode: a plan sizes the time per output token"));
    }
    if !(1..=MAX_PLAN_GPUS).contains(&req.max_gpus) {
        return Err(Error::invalid("max_gpus", req.max_gpus, integer_in(1, MAX_PLAN_GPUS)));
    }
    Ok(())
}

/// Why nothing was ranked and what would be, as quantities ([`PlanRefusal`]).
fn explain(base: &Scenario, req: &PlanRequest, candidates: &[Scenario], refused: &[Refused]) -> Error {
    let layout = |r: &Refused| Layout { tp: r.tp, pp: r.pp, ep: r.ep };
    let slow = refused.iter().filter_map(|r| match r.refusal {
        Refusal::TooSlow { tpot_s, batch } => Some((r, tpot_s, batch)),
        _ => None,
    });
    let holding = refused.iter().filter_map(|r| match r.refusal {
        Refusal::NoGivenBatch { max_batch } => Some((layout(r), max_batch)),
        _ => None,
    });
    let refusal = if let Some((r, t, batch)) = slow.min_by(|a, b| a.1.total_cmp(&b.1)) {
        PlanRefusal::TooSlow { fastest: TimedLayout { layout: layout(r), tpot_s: t }, batch }
    } else if let Some((layout, max_batch)) = holding.max_by_key(|h| h.1) {
        let given = req.batches.as_ref().map_or(max_batch + 1, Axis::min);
        PlanRefusal::NoGivenBatch { given, largest: layout, max_batch }
    } else if candidates.is_empty() {
        PlanRefusal::NoLayout
    } else {
        let closest = refused
            .iter()
            .filter_map(|r| match r.refusal {
                Refusal::DoesNotFit { memory_bytes, available_bytes } => {
                    Some((layout(r), memory_bytes, available_bytes))
                }
                _ => None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serving::PriceSource;
    use crate::testing::scenario;

    fn point(tp: u64, batch: u64, tpot_s: f64, per_gpu: f64) -> PlanPoint {
        PlanPoint {
            tp,
            pp: 1,
            ep: 1,
            gpus: tp,
            batch,
            tpot_s,
            tokens_per_s: per_gpu * tp as f64,
            tokens_per_s_per_gpu: per_gpu,
            usd_per_million_tokens: 1.0,
            memory_bytes: 1.0,
            weight_bytes: 1.0,
            max_batch: batch,
            link_share: 0.0,
            meets_bound: true,
            replicas: 1,
        }
    }

    fn request(max_gpus: u64, tpot_bound_s: f64) -> PlanRequest {
        PlanRequest {
            ctx: 2048,
            tpot_bound_s,
            max_gpus,
            price: Price { usd_per_hour: 3.6, source: PriceSource::User },
            reserve_bytes: 2e9,
            batches: None,
        }
    }

    /// A search is sized before it starts (layouts × candidate batches up to each memory wall),
    /// refused past the cap naming `batch` and the most that would fit, and stopped by its flag.
    #[test]
    fn a_search_is_sized_before_it_starts_and_stops_when_asked() {
        let base = crate::testing::scenario(&[]);
        let huge =
            PlanRequest { batches: Some(Axis::parse("batch", "1..100000", 1, 1 << 30).unwrap()), ..request(64, 1.0) };
        let e = plan(&base, &huge).unwrap_err().to_string();
        assert!(e.starts_with("invalid `batch`: 100,000 candidate batches (at most 65,536 step evaluations"), "{e}");
        // The count is each layout's batches up to its memory wall: a few that fit are allowed.
        let few = PlanRequest { batches: Some(Axis::parse("batch", "1..100000:20000", 1, 1 << 30).unwrap()), ..huge };
        assert!(plan(&base, &few).is_ok());
        let flag = std::sync::atomic::AtomicBool::new(true);
        for e in [
            plan_within(&base, &request(8, 1.0), Stop::on(&flag)).unwrap_err(),
            frontier_within(&base, &request(8, 1.0), Stop::on(&flag)).unwrap_err(),
            fewest_gpus_within(&base, &request(8, 1.0), 8, Stop::on(&flag)).unwrap_err(),
        ] {
            assert!(matches!(e, Error::Cancelled), "{e}");
        }
    }

    /// By hand: A (10 ms, 100 tok/s per GPU) and B (20 ms, 300) beat each other on one axis each;
    /// C (15 ms, 90) is slower than A per user and has less per GPU; D (40 ms, 250) loses to B on
    /// both. The front is A then B.
    #[test]
    fn the_front_keeps_the_points_nothing_beats_on_both() {
        let (a, b, c, d) =
            (point(1, 1, 0.010, 100.0), point(1, 8, 0.020, 300.0), point(2, 1, 0.015, 90.0), point(2, 8, 0.040, 250.0));
        let front = pareto(vec![d, c, b, a]);
        assert_eq!(front, [a, b]);
        // A tie on TPOT keeps the one with more per GPU.
        let a2 = point(2, 2, 0.010, 120.0);
        assert_eq!(pareto(vec![a, a2, b]), [a2, b]);
    }

    /// Llama 3 8B, decode at 2,048 cached tokens on H100 SXMs, at most 2 GPUs: every deployment's
    /// tokens/s per user is 1 ÷ TPOT and per GPU batch ÷ TPOT ÷ GPUs; TP 1 at batch 1 is the
    /// README's default ledger (6.62 ms, 151 tok/s); the front is the non-dominated set.
    #[test]
    fn a_frontier_is_every_deployment_and_its_front() {
        let f = frontier(&scenario(&[]), &request(2, f64::INFINITY)).unwrap();
        // TP 1 and TP 2, PP 1 and PP 2 (TP 2 × PP 1, TP 1 × PP 2, TP 1 × PP 1).
        assert_eq!(f.layouts, 3);
        assert!(f.refused.is_empty());
        for d in &f.deployments {
            let p = &d.point;
            assert!((d.tokens_per_s_per_user - 1.0 / p.tpot_s).abs() < 1e-9 * d.tokens_per_s_per_user);
            let by_hand = p.batch as f64 / p.tpot_s / p.gpus as f64;
            assert!((p.tokens_per_s_per_gpu - by_hand).abs() < 1e-9 * by_hand, "{p:?}");
            assert!(p.batch <= p.max_batch && p.meets_bound);
            // Nothing on the front is beaten on both axes by any deployment.
            if d.front {
                assert!(!f.deployments.iter().any(|o| o.tokens_per_s_per_user > d.tokens_per_s_per_user
                    && o.point.tokens_per_s_per_gpu > p.tokens_per_s_per_gpu));
            }
        }
        let one = f.deployments.iter().find(|d| (d.point.tp, d.point.pp, d.point.batch) == (1, 1, 1)).unwrap();
        assert!((one.point.tpot_s - 6.62e-3).abs() < 0.005e-3, "{}", one.point.tpot_s);
        assert_eq!(one.tokens_per_s_per_user.round(), 151.0);
        // Batches 1, 2, 4 … up to the largest that fits, and it.
        let tp1: Vec<u64> =
            f.deployments.iter().filter(|d| (d.point.tp, d.point.pp) == (1, 1)).map(|d| d.point.batch).collect();
        let most = *tp1.last().unwrap();
        assert_eq!(most, one.point.max_batch);
        assert!(tp1.windows(2).all(|w| w[1] == 2 * w[0] || w[1] == most));
        assert_eq!(f.front.iter().filter(|d| d.front).count(), f.front.len());
        assert_eq!(f.deployments.iter().filter(|d| d.front).count(), f.front.len());
        assert!(f.front.windows(2).all(|w| w[0].tokens_per_s_per_user > w[1].tokens_per_s_per_user
            && w[0].point.tokens_per_s_per_gpu < w[1].point.tokens_per_s_per_gpu));
        // A bound only marks the deployments.
        let bounded = frontier(&scenario(&[]), &request(2, 0.010)).unwrap();
        assert_eq!(bounded.deployments.len(), f.deployments.len());
        assert!(bounded.deployments.iter().any(|d| !d.point.meets_bound));
    }

    /// Batches asked for that no layout holds are the refusal's subject, with the largest any
    /// layout holds; batches that fit but miss the bound are timed at the smallest of them, not
    /// at batch 1 (which would meet it).
    #[test]
    fn a_refusal_names_the_batches_asked_for() {
        let base = scenario(&[]);
        let most = frontier(&base, &request(2, f64::INFINITY))
            .unwrap()
            .deployments
            .iter()
            .map(|d| d.point.max_batch)
            .max()
            .unwrap();
        let past = PlanRequest { batches: Some(Axis::single(most + 1)), ..request(2, 1.0) };
        for e in [plan(&base, &past).unwrap_err(), frontier(&base, &past).unwrap_err()] {
            let Error::NoPlan(r) = &e else { panic!("{e}") };
            assert_eq!(r.field(), "batch");
            let PlanRefusal::NoGivenBatch { given, max_batch, .. } = r.refusal else { panic!("{e}") };
            assert_eq!((given, max_batch), (most + 1, most));
        }
        // At batch 1 TP 1 takes 6.62 ms; at batch 256 every layout takes longer than 7 ms.
        let slow =
            PlanRequest { batches: Some(Axis::parse("batch", "256,512", 1, 1 << 20).unwrap()), ..request(2, 0.007) };
        let Error::NoPlan(r) = plan(&base, &slow).unwrap_err() else { panic!() };
        let PlanRefusal::TooSlow { fastest, batch } = r.refusal else { panic!("{:?}", r.refusal) };
        assert_eq!(batch, 256);
        assert!(fastest.tpot_s > 0.007, "{}", fastest.tpot_s);
        assert_eq!(r.field(), "tpot_ms");
    }

    /// 70.6 B parameters in bf16 (141 GB) need two H100s (78 GB each after the 2 GB reserve); the
    /// 8 B model one. The answer is the plan's own point for that layout and batch.
    #[test]
    fn the_fewest_gpus_hold_the_weights_and_the_cache() {
        let big = scenario(&[("model", "llama-3-70b")]);
        let p = fewest_gpus(&big, &request(8, f64::INFINITY), 4).unwrap().unwrap();
        assert_eq!(p.gpus, 2);
        let planned = plan(&big, &PlanRequest { batches: Some(Axis::single(4)), ..request(8, f64::INFINITY) }).unwrap();
        let same = planned.ranked.iter().find(|r| (r.tp, r.pp, r.ep) == (p.tp, p.pp, p.ep)).unwrap();
        assert_eq!(*same, p);
        let small = fewest_gpus(&scenario(&[]), &request(8, f64::INFINITY), 64).unwrap().unwrap();
        assert_eq!((small.gpus, small.batch), (1, 64));
        // Within one GPU nothing holds the 70 B model.
        assert_eq!(fewest_gpus(&big, &request(1, f64::INFINITY), 1).unwrap(), None);
        // A bound that one GPU misses moves the answer to more GPUs, or none.
        let fast = fewest_gpus(&scenario(&[]), &request(8, 0.004), 1).unwrap().unwrap();
        assert!(fast.gpus > 1 && fast.tpot_s <= 0.004, "{fast:?}");
    }
}
