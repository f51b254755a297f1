//! Planning a deployment under load: the cheapest layout, max sequences, prefill chunk and
//! number of replicas that hold p99 TTFT and p99 TPOT bounds at an arrival rate, found by
//! simulation ([`crate::simulate`]).
//!
//! * **Candidates**: every layout [`crate::plan::layouts`] enumerates within `max_gpus` GPUs per
//!   replica that the simulator takes (one pipeline stage), × max sequences `8, 16, … ≤ 1024`
//!   (no more than the KV capacity holds whole requests of the longest lengths, rounded up to a
//!   power of two, nor more than the chunk) × prefill chunks [`CHUNK_CANDIDATES`] (the step's
//!   token budget is the chunk). Candidates are assessed in parallel (rayon) and gathered in
//!   order, so the plan is deterministic for a seed.
//! * **Replicas**: `r` replicas split the Poisson arrivals, so one replica is simulated at
//!   `R ÷ r`. The search starts at `r₀ = ⌈R ÷ μ⌉`, `μ` = one replica's request rate when every
//!   step decodes `max_seqs` sequences at the mean prompt length (an upper bound on what it
//!   sustains), doubles `r` until both p99s hold, then bisects down to the fewest replicas that
//!   hold them.
//! * **Early stop**: a layout whose single decode step (batch 1, an empty cache) already exceeds
//!   the TPOT bound is not simulated; doubling stops when the worse of the two p99 ÷ bound ratios
//!   improves by less than 5 % (more replicas do not help), or past [`MAX_SERVING_GPUS`] GPUs.
//! * **Cost**: `$/M output tokens = r · GPUs per replica · price/3600 ÷ (r · output tokens/s of
//!   one replica) × 10⁶`; ranked cheapest first (then fewer GPUs). The Pareto front is over every
//!   simulated deployment holding both SLAs: the points nothing beats on both cost and p99
//!   end-to-end latency.

use crate::error::integer_in;
use crate::error::{Error, Result};
use crate::plan::layouts;
use crate::plan_refusal::{Layout, ServingClosest, ServingRefused};
use crate::scenario::Scenario;
use crate::serving::Price;
use crate::simulate::workload::{check_rate, Arrivals};
use crate::simulate::{kv_capacity_blocks, simulate_within, Budget, Deployment, SimConfig, StepClock};
use crate::workload::Chunk;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Prefill chunks tried (tokens; each is also the step's token budget).
pub const CHUNK_CANDIDATES: [u64; 3] = [512, 2048, 8192];
/// Smallest and largest max sequences tried.
pub const MAX_SEQS_RANGE: (u64, u64) = (8, 1024);
/// Most GPUs over all replicas of one deployment.
pub const MAX_SERVING_GPUS: u64 = crate::plan::MAX_PLAN_GPUS;
/// Requests simulated per candidate by default.
pub const DEFAULT_SEARCH_REQUESTS: u64 = 2000;

/// What to plan for.
#[derive(Debug, Clone)]
pub struct ServingPlanRequest {
    /// Arrival rate (Poisson), requests per second.
    pub rate_per_s: f64,
    /// Bound on p99 time to first token, seconds.
    pub ttft_bound_s: f64,
    /// Bound on p99 time per output token, seconds.
    pub tpot_bound_s: f64,
    /// Most GPUs per replica.
    pub max_gpus: u64,
    /// GPU-hour price.
    pub price: Price,
    /// Requests, seed, lengths, schedule, block and reserve of every simulation (its arrivals,
    /// max sequences, token budget, chunk and SLAs are set by the search).
    pub sim: SimConfig,
}

/// One deployment: a layout per replica, its scheduler limits, the replicas, and what the
/// simulation of one replica at `R ÷ replicas` gave.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ServingPoint {
    /// Tensor-parallel GPUs.
    pub tp: u64,
    /// Pipeline stages (1).
    pub pp: u64,
    /// Expert-parallel groups.
    pub ep: u64,
    /// GPUs per replica.
    pub gpus_per_replica: u64,
    /// Replicas.
    pub replicas: u64,
    /// GPUs in all.
    pub gpus: u64,
    /// Most sequences per step.
    pub max_seqs: u64,
    /// Prefill chunk and step token budget, tokens.
    pub chunk_tokens: u64,
    /// Arrivals at each replica, requests per second.
    pub rate_per_replica_per_s: f64,
    /// p99 time to first token, seconds.
    pub ttft_p99_s: f64,
    /// p99 time per output token, seconds.
    pub tpot_p99_s: f64,
    /// p99 end-to-end latency, seconds.
    pub e2e_p99_s: f64,
    /// Output tokens per second of all replicas.
    pub output_tokens_per_s: f64,
    /// USD per million output tokens.
    pub usd_per_million_tokens: f64,
    /// Both p99s within their bounds (and every request finished).
    pub meets_sla: bool,
}

/// The plan under load.
#[derive(Debug, Clone, Serialize)]
pub struct ServingPlan {
    /// The fewest replicas of each candidate that hold both SLAs, cheapest first.
    pub ranked: Vec<ServingPoint>,
    /// Cost against p99 end-to-end latency over every simulated deployment holding the SLAs.
    pub pareto: Vec<ServingPoint>,
    /// Layouts within the budget the simulator takes.
    pub layouts: usize,
    /// Candidates (layout × max sequences × chunk).
    pub candidates: usize,
    /// Simulations run.
    pub simulations: u64,
}

/// The worse of the two p99 ÷ bound ratios (≤ 1: both SLAs hold).
fn badness(req: &ServingPlanRequest, ttft_s: f64, tpot_s: f64) -> f64 {
    (ttft_s / req.ttft_bound_s).max(tpot_s / req.tpot_bound_s)
}

/// What one candidate gave ([`ServingSearch::assess`]): its cheapest point holding the SLAs,
/// every simulated point, and the closest miss. It serialises (JSON), so a candidate can be
/// assessed in another process or on another machine and gathered here
/// ([`ServingSearch::gather`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assessed {
    best: Option<ServingPoint>,
    points: Vec<ServingPoint>,
    closest: Option<ServingPoint>,
    simulations: u64,
    /// The replicas of the first simulation that could not run (a request past this layout's
    /// KV capacity); its error, where it was assessed in this process.
    failed_at: Option<u64>,
    #[serde(skip)]
    error: Option<Error>,
}

/// Simulations of one search that no sequence limit held back, by (layout, chunk, replicas):
/// the most sequences that ran at once and the point. A candidate of the same layout, chunk and
/// replicas with a larger limit than that peak runs the same simulation (its limit never binds
/// either), so its point is this one with its own limit. Shared by the candidates a process
/// assesses; the points are the same whichever candidate ran first.
#[derive(Debug, Clone, Default)]
struct Unbound(Arc<Mutex<HashMap<RunKey, (u64, ServingPoint)>>>);

/// A simulation of a search apart from its sequence limit: layout (index), chunk, replicas.
type RunKey = (usize, u64, u64);

impl Unbound {
    fn get(&self, layout: usize, cfg: &SimConfig, replicas: u64) -> Option<ServingPoint> {
        let runs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (peak, p) = runs.get(&(layout, cfg.chunk_tokens, replicas))?;
        (*peak < cfg.max_seqs).then_some(ServingPoint { max_seqs: cfg.max_seqs, ..*p })
    }

    fn put(&self, layout: usize, cfg: &SimConfig, replicas: u64, peak: u64, p: ServingPoint) {
        if peak < cfg.max_seqs {
            let mut runs = self.0.lock().unwrap_or_else(|e| e.into_inner());
            runs.entry((layout, cfg.chunk_tokens, replicas)).or_insert((peak, p));
        }
    }
}

/// The layout a simulation runs on: the scenario, and its index in the search where the
/// search keeps its [`Unbound`] runs.
#[derive(Clone, Copy)]
struct OnLayout<'a> {
    sc: &'a Scenario,
    kept: Option<(usize, &'a Unbound)>,
}

fn simulate_at(
    on: OnLayout<'_>,
    req: &ServingPlanRequest,
    cfg: &SimConfig,
    replicas: u64,
    budget: &Budget,
) -> Result<ServingPoint> {
    if let Some(p) = on.kept.and_then(|(layout, runs)| runs.get(layout, cfg, replicas)) {
        return Ok(p);
    }
    let sc = on.sc;
    let rate = req.rate_per_s / replicas as f64;
    let cfg = SimConfig { arrivals: Arrivals::Poisson { rate_per_s: rate }, ..cfg.clone() };
    let run = simulate_within(sc, &cfg, &Deployment::SINGLE, budget, |_| {})?;
    let s = run.summary;
    let p = &sc.parallel;
    let per_replica = p.gpus_per_replica();
    let gpus = per_replica * replicas;
    let tokens_per_s = s.output_tokens_per_s * replicas as f64;
    let point = ServingPoint {
        tp: p.tp,
        pp: p.pp,
        ep: p.ep,
        gpus_per_replica: per_replica,
        replicas,
        gpus,
        max_seqs: cfg.max_seqs,
        chunk_tokens: cfg.chunk_tokens,
        rate_per_replica_per_s: rate,
        ttft_p99_s: s.ttft_s.p99,
        tpot_p99_s: s.tpot_s.p99,
        e2e_p99_s: s.e2e_s.p99,
        output_tokens_per_s: tokens_per_s,
        usd_per_million_tokens: gpus as f64 * req.price.usd_per_s() / tokens_per_s * 1e6,
        meets_sla: s.drained && s.ttft_s.p99 <= req.ttft_bound_s && s.tpot_s.p99 <= req.tpot_bound_s,
    };
    if let Some((layout, runs)) = on.kept {
        runs.put(layout, &cfg, replicas, run.peak_running, point);
    }
    Ok(point)
}

/// Assess one candidate; `Err` only when the search must stop (cancelled, or past the budget).
fn assess(on: OnLayout<'_>, req: &ServingPlanRequest, cfg: &SimConfig, budget: &Budget) -> Result<Assessed> {
    let sc = on.sc;
    let mut out =
        Assessed { best: None, points: Vec::new(), closest: None, simulations: 0, failed_at: None, error: None };
    let max_replicas = MAX_SERVING_GPUS / sc.parallel.gpus_per_replica();
    // μ: requests/s of one replica decoding `max_seqs` sequences every step (an upper bound).
    let mut clock = StepClock::new(sc);
    let cached = cfg.prompt.mean_tokens().round() as u64;
    let step_s = clock.step_s(&vec![Chunk { new_tokens: 1, cached_tokens: cached }; cfg.max_seqs as usize]);
    let mu = cfg.max_seqs as f64 / step_s / cfg.output.mean_tokens().max(1.0);
    let mut r = ((req.rate_per_s / mu).ceil() as u64).clamp(1, max_replicas.max(1));
    let run = |r: u64, out: &mut Assessed| -> Result<Option<ServingPoint>> {
        out.simulations += 1;
        let p = match simulate_at(on, req, cfg, r, budget) {
            Ok(p) => p,
            Err(e @ (Error::Cancelled | Error::OverBudget { .. })) => return Err(e),
            Err(e) => {
                if out.failed_at.is_none() {
                    (out.failed_at, out.error) = (Some(r), Some(e));
                }
                return Ok(None);
            }
        };
        out.points.push(p);
        let worse = |c: &ServingPoint| badness(req, c.ttft_p99_s, c.tpot_p99_s);
        if out.closest.is_none_or(|c| worse(&p) < worse(&c)) {
            out.closest = Some(p);
        }
        Ok(Some(p))
    };
    let mut failing = 0; // the most replicas known to miss
    let mut previous = f64::INFINITY;
    let first_meeting = loop {
        let Some(p) = run(r, &mut out)? else { return Ok(out) };
        if p.meets_sla {
            break p;
        }
        let b = badness(req, p.ttft_p99_s, p.tpot_p99_s);
        if b > 0.95 * previous || r >= max_replicas {
            return Ok(out); // more replicas do not help enough: it clearly fails
        }
        previous = b;
        failing = r;
        r = (r * 2).min(max_replicas);
    };
    // Bisect in (failing, r] for the fewest replicas that hold.
    let (mut lo, mut hi, mut best) = (failing, first_meeting.replicas, first_meeting);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match run(mid, &mut out)? {
            Some(p) if p.meets_sla => {
                hi = mid;
                best = p;
            }
            _ => lo = mid,
        }
    }
    out.best = Some(best);
    Ok(out)
}

/// The candidate configurations of one layout: `(max_seqs, chunk)`.
fn candidates_of(sc: &Scenario, req: &ServingPlanRequest) -> Vec<SimConfig> {
    let mut out = Vec::new();
    for chunk in CHUNK_CANDIDATES {
        let base = SimConfig {
            max_batched_tokens: chunk,
            chunk_tokens: chunk,
            ttft_slo_s: Some(req.ttft_bound_s),
            tpot_slo_s: Some(req.tpot_bound_s),
            ..req.sim.clone()
        };
        let Ok(blocks) = kv_capacity_blocks(sc, &base) else { continue };
        let whole = match (base.prompt.max_tokens(), base.output.max_tokens()) {
            (Some(p), Some(o)) => (blocks * base.block_tokens / (p + o)).max(1),
            _ => MAX_SEQS_RANGE.1,
        };
        let limit = whole.next_power_of_two().clamp(MAX_SEQS_RANGE.0, MAX_SEQS_RANGE.1).min(chunk);
        let mut seqs = MAX_SEQS_RANGE.0;
        while seqs <= limit {
            out.push(SimConfig { max_seqs: seqs, ..base.clone() });
            seqs *= 2;
        }
    }
    out
}

/// Plan the cheapest deployment holding both p99 SLAs at the rate (module docs). Errors with
/// [`Error::NoServingPlan`] (the closest deployment's p99s) when none does.
pub fn plan_serving(base: &Scenario, req: &ServingPlanRequest) -> Result<ServingPlan> {
    plan_serving_within(base, req, &Budget::unlimited())
}

/// [`plan_serving`] under `budget`: every candidate's first simulation is estimated before any
/// runs ([`Budget::admit`]), and the simulations' steps are charged to the budget as they go.
/// The candidates are assessed in parallel on this machine's cores (rayon).
pub fn plan_serving_within(base: &Scenario, req: &ServingPlanRequest, budget: &Budget) -> Result<ServingPlan> {
    let search = ServingSearch::new(base, req)?;
    search.admit(budget)?;
    let assessed = (0..search.len()).into_par_iter().map(|j| search.assess(j, budget)).collect::<Result<_>>()?;
    search.gather(assessed)
}

/// A plan under load laid out before anything runs: the layouts, each one's fastest decode
/// step, and the candidates (layout × max sequences × chunk) to assess. The same base scenario
/// and request always give the same candidates in the same order, so candidate `j` can be
/// assessed anywhere that can build the search ([`ServingSearch::assess`]) and the results
/// gathered in order here ([`ServingSearch::gather`]): the plan is [`plan_serving_within`]'s.
#[derive(Debug, Clone)]
pub struct ServingSearch {
    base: Scenario,
    req: ServingPlanRequest,
    layouts: Vec<Scenario>,
    /// Per layout, its single decode step (batch 1, an empty cache), seconds.
    quick: Vec<(usize, f64)>,
    /// The candidates: (layout, configuration).
    work: Vec<(usize, SimConfig)>,
    /// Simulations whose sequence limit never bound, for the candidates that share them.
    unbound: Unbound,
}

impl ServingSearch {
    /// The search's candidates, after checking the request's ranges (errors name the field).
    pub fn new(base: &Scenario, req: &ServingPlanRequest) -> Result<ServingSearch> {
        check_rate("rate", req.rate_per_s)?;
        for (field, v) in [("ttft_ms", req.ttft_bound_s), ("tpot_ms", req.tpot_bound_s)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::invalid(field, v * 1e3, "a time in milliseconds above 0"));
            }
        }
        if !(1..=crate::plan::MAX_PLAN_GPUS).contains(&req.max_gpus) {
            return Err(Error::invalid("max_gpus", req.max_gpus, integer_in(1, crate::plan::MAX_PLAN_GPUS)));
        }
        SimConfig { ttft_slo_s: Some(req.ttft_bound_s), tpot_slo_s: Some(req.tpot_bound_s), ..req.sim.clone() }
            .validate()?;
        let layouts: Vec<Scenario> = layouts(base, req.max_gpus).into_iter().filter(|sc| sc.parallel.pp == 1).collect();
        // Early stop: a layout whose fastest decode step misses the TPOT bound is not simulated.
        let quick: Vec<(usize, f64)> = layouts
            .iter()
            .enumerate()
            .map(|(i, sc)| (i, StepClock::new(sc).step_s(&[Chunk { new_tokens: 1, cached_tokens: 0 }])))
            .collect();
        let work: Vec<(usize, SimConfig)> = quick
            .iter()
            .filter(|(_, t)| *t <= req.tpot_bound_s)
            .flat_map(|(i, _)| candidates_of(&layouts[*i], req).into_iter().map(move |c| (*i, c)))
            .collect();
        Ok(ServingSearch { base: base.clone(), req: req.clone(), layouts, quick, work, unbound: Unbound::default() })
    }

    /// Candidates to assess.
    pub fn len(&self) -> usize {
        self.work.len()
    }

    /// Whether there is no candidate (every layout's fastest decode step misses the TPOT bound).
    pub fn is_empty(&self) -> bool {
        self.work.is_empty()
    }

    /// Admit every candidate's first simulation to `budget` ([`Budget::admit`]).
    pub fn admit(&self, budget: &Budget) -> Result<()> {
        budget.admit(self.work.iter().map(|(_, c)| c))
    }

    /// Assess candidate `j` (< [`ServingSearch::len`]): the fewest replicas that hold both SLAs
    /// (module docs); `Err` only when the search must stop (cancelled, or past the budget).
    pub fn assess(&self, j: usize, budget: &Budget) -> Result<Assessed> {
        let Some((i, cfg)) = self.work.get(j) else {
            return Err(Error::invalid("candidate", j, format!("an index below {}", self.work.len())));
        };
        assess(OnLayout { sc: &self.layouts[*i], kept: Some((*i, &self.unbound)) }, &self.req, cfg, budget)
    }

    /// The error of candidate `j`'s simulation at `replicas`, run again here (an assessment
    /// made in another process carries where it failed, not the error: the run is
    /// deterministic, and one that cannot run fails before its first step).
    fn failure(&self, j: usize, replicas: u64) -> Error {
        let (i, cfg) = &self.work[j];
        match simulate_at(
            OnLayout { sc: &self.layouts[*i], kept: None },
            &self.req,
            cfg,
            replicas,
            &Budget::unlimited(),
        ) {
            Err(e) => e,
            Ok(_) => Error::invalid("candidates", j, "assessments made from this search's own candidates"),
        }
    }

    /// The plan from every candidate's assessment, in candidate order.
    pub fn gather(&self, assessed: Vec<Assessed>) -> Result<ServingPlan> {
        if assessed.len() != self.work.len() {
            return Err(Error::invalid(
                "candidates",
                assessed.len(),
                format!("{} assessments, one per candidate", self.work.len()),
            ));
        }
        let (base, req, layouts, quick, work) = (&self.base, &self.req, &self.layouts, &self.quick, &self.work);
        let (mut ranked, mut meeting, mut closest, mut simulations) = (Vec::new(), Vec::new(), None, 0);
        // The first candidate whose simulation could not run: (candidate, replicas, its error).
        let mut failed: Option<(usize, u64, Option<Error>)> = None;
        let worse = |c: &ServingPoint| badness(req, c.ttft_p99_s, c.tpot_p99_s);
        for (j, a) in assessed.into_iter().enumerate() {
            simulations += a.simulations;
            if let (None, Some(r)) = (&failed, a.failed_at) {
                failed = Some((j, r, a.error));
            }
            ranked.extend(a.best);
            meeting.extend(a.points.into_iter().filter(|p| p.meets_sla));
            if let Some(c) = a.closest {
                if closest.as_ref().is_none_or(|b: &ServingPoint| worse(&c) < worse(b)) {
                    closest = Some(c);
                }
            }
        }
        if ranked.is_empty() {
            // Every simulation failed to run: that reason (e.g. a prompt past every KV capacity).
            if let (None, Some((j, r, e))) = (&closest, failed) {
                return Err(e.unwrap_or_else(|| self.failure(j, r)));
            }
            // Nothing simulated because every layout's single decode step misses the TPOT bound:
            // the fastest stands for the closest.
            let fallback = || {
                quick.iter().min_by(|a, b| a.1.total_cmp(&b.1)).filter(|(_, t)| *t > req.tpot_bound_s).map(|(i, t)| {
                    let p = &layouts[*i].parallel;
                    ServingClosest {
                        layout: Layout { tp: p.tp, pp: p.pp, ep: p.ep },
                        replicas: 1,
                        max_seqs: 1,
                        chunk_tokens: req.sim.chunk_tokens,
                        ttft_p99_s: 0.0,
                        tpot_p99_s: *t,
                    }
                })
            };
            let closest = closest
                .map(|c| ServingClosest {
                    layout: Layout { tp: c.tp, pp: c.pp, ep: c.ep },
                    replicas: c.replicas,
                    max_seqs: c.max_seqs,
                    chunk_tokens: c.chunk_tokens,
                    ttft_p99_s: c.ttft_p99_s,
                    tpot_p99_s: c.tpot_p99_s,
                })
                .or_else(fallback);
            return Err(Error::NoServingPlan(Box::new(ServingRefused {
                model: base.model.name.clone(),
                gpu: base.gpu.name.clone(),
                rate_per_s: req.rate_per_s,
                ttft_bound_s: req.ttft_bound_s,
                tpot_bound_s: req.tpot_bound_s,
                max_gpus: req.max_gpus,
                closest,
            })));
        }
        let order = |a: &ServingPoint, b: &ServingPoint| {
            a.usd_per_million_tokens
                .total_cmp(&b.usd_per_million_tokens)
                .then(a.gpus.cmp(&b.gpus))
                .then(a.e2e_p99_s.total_cmp(&b.e2e_p99_s))
        };
        let (mut ranked, meeting) = (distinct(ranked), distinct(meeting));
        ranked.sort_by(order);
        Ok(ServingPlan { ranked, pareto: pareto(meeting), layouts: layouts.len(), candidates: work.len(), simulations })
    }
}

/// The points less those that repeat another's deployment and outcome: the same layout,
/// replicas and chunk, and the same simulated p99s and tokens/s, with a larger `max_seqs` (a
/// limit the run never reached, so the simulation was the same). The smallest `max_seqs` stays.
pub fn distinct(mut points: Vec<ServingPoint>) -> Vec<ServingPoint> {
    let key = |p: &ServingPoint| {
        (
            (p.tp, p.pp, p.ep, p.replicas, p.chunk_tokens),
            [p.ttft_p99_s, p.tpot_p99_s, p.e2e_p99_s, p.output_tokens_per_s].map(f64::to_bits),
        )
    };
    points.sort_by(|a, b| key(a).cmp(&key(b)).then(a.max_seqs.cmp(&b.max_seqs)));
    points.dedup_by(|later, kept| key(later) == key(kept));
    points
}

/// The points no other beats on both lower cost and lower p99 end-to-end latency, by cost.
pub fn pareto(mut points: Vec<ServingPoint>) -> Vec<ServingPoint> {
    points.sort_by(|a, b| {
        a.usd_per_million_tokens.total_cmp(&b.usd_per_million_tokens).then(a.e2e_p99_s.total_cmp(&b.e2e_p99_s))
    });
    let mut front: Vec<ServingPoint> = Vec::new();
    for p in points {
        if front.last().is_none_or(|f| p.e2e_p99_s < f.e2e_p99_s) {
            front.push(p);
        }
    }
    front
}
