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
//!   improves by less than 5 % (more replicas do not help), or past `gpus_total` GPUs in all
//!   (at most [`MAX_SERVING_GPUS`]).
//! * **Disaggregated candidates** (prefill and decode pools, [`crate::simulate::disagg`]): per
//!   pool the [`POOL_LAYOUTS`] layouts of the fewest GPUs (then the fastest) that hold the
//!   lengths and meet that pool's bound alone (the mean prompt's prefill within the TTFT bound;
//!   one decode step within the TPOT bound), every prefill layout with every decode layout, each
//!   with the largest chunk and two sequence limits, `m*` (the largest power of two whose decode
//!   step at the mean context meets the TPOT bound on the decode layout) and `m* ÷ 2`: at most
//!   `2 × 2 × 2 = 8` candidates. Each is one deployment taking the whole
//!   rate, `X` prefill and `Y` decode instances, the KV cache over the GPU's `auto` link. The
//!   search starts at `X₀ = ⌈R ÷ μ_p⌉`, `Y₀ = ⌈R ÷ μ_d⌉` (upper bounds on one instance's
//!   requests/s; fewer instances cannot keep up and are not tried), doubles the
//!   pool that misses its SLA — the prefill pool for TTFT, the decode pool for TPOT, which the
//!   move's wait is in — until both hold (the same 5 % early stop, at most
//!   [`MAX_INSTANCES`] instances and `gpus_total` GPUs), then bisects the prefill pool
//!   down, then the decode pool.
//! * **Cost**: the one cost model under load ([`Bill::under_load`]): per request `GPUs ·
//!   price/3600 ÷ requests/s`, the cost shared between prompt and output tokens as the steps'
//!   time was; one replica's prices are the deployment's (each of `r` replicas serves `R ÷ r` at
//!   the same cost), `GPUs = X · prefill GPUs + Y · decode GPUs` for pools; ranked cheapest per
//!   request first (then fewer GPUs). The Pareto front is over every simulated
//!   deployment holding both SLAs: the points nothing beats on both cost and p99 end-to-end
//!   latency. The closest deployment a refusal names is the closest aggregated one.

use crate::economics::Bill;
use crate::error::integer_in;
use crate::error::{Error, Result};
use crate::plan::layouts;
use crate::plan_refusal::{Layout, ServingClosest, ServingRefused};
use crate::scenario::Scenario;
use crate::serving::Price;
use crate::simulate::disagg::MAX_INSTANCES;
use crate::simulate::workload::{check_rate, Arrivals};
use crate::simulate::{
    kv_capacity_blocks, simulate_within, Budget, Deployment, Disagg, KvLink, KvLinkChoice, PoolLayout, Pools,
    SimConfig, StepClock,
};
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
/// Layouts tried for each pool of a disaggregated deployment (the fewest GPUs first).
pub const POOL_LAYOUTS: usize = 2;

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
    /// Most GPUs of a deployment in all (every replica, or both pools), at most
    /// [`MAX_SERVING_GPUS`].
    pub gpus_total: u64,
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
    /// USD per million prompt tokens, under load ([`Bill::under_load`] of the simulated run).
    pub usd_per_million_input_tokens: f64,
    /// USD per million output tokens, under load.
    pub usd_per_million_output_tokens: f64,
    /// USD per request, under load: what the deployment costs per second ÷ requests per second.
    pub usd_per_request: f64,
    /// Both p99s within their bounds (and every request finished).
    pub meets_sla: bool,
    /// `aggregated` (`replicas` instances of the layout `tp × pp × ep`, each running prompts
    /// and decodes) or `disaggregated` (one deployment of prefill and decode pools, the fields
    /// below; `tp`, `pp`, `ep` are then the decode pool's layout, `replicas` 1 and
    /// `gpus_per_replica` the deployment's GPUs).
    #[serde(default)]
    pub serving: ServingKind,
    /// Disaggregated: prefill instances (absent when aggregated).
    pub prefill_instances: Option<u64>,
    /// Disaggregated: tensor-parallel GPUs of each prefill instance.
    pub prefill_tp: Option<u64>,
    /// Disaggregated: expert-parallel groups of each prefill instance.
    pub prefill_ep: Option<u64>,
    /// Disaggregated: decode instances.
    pub decode_instances: Option<u64>,
    /// Disaggregated: tensor-parallel GPUs of each decode instance.
    pub decode_tp: Option<u64>,
    /// Disaggregated: expert-parallel groups of each decode instance.
    pub decode_ep: Option<u64>,
}

/// How a planned deployment serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServingKind {
    /// Replicas of one layout, each running prompts and decodes in mixed steps.
    #[default]
    Aggregated,
    /// A pool of prefill instances and a pool of decode instances, each of its own layout.
    Disaggregated,
}

/// A disaggregated deployment as a plan states it: `X` prefill instances of one layout and `Y`
/// decode instances of another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitPoint {
    /// Prefill instances, `X`.
    pub prefill_instances: u64,
    /// Each prefill instance's layout.
    pub prefill: PoolLayout,
    /// Decode instances, `Y`.
    pub decode_instances: u64,
    /// Each decode instance's layout.
    pub decode: PoolLayout,
}

impl ServingPoint {
    /// The disaggregated deployment this point is (none when aggregated).
    pub fn split(&self) -> Option<SplitPoint> {
        Some(SplitPoint {
            prefill_instances: self.prefill_instances?,
            prefill: PoolLayout { tp: self.prefill_tp?, ep: self.prefill_ep? },
            decode_instances: self.decode_instances?,
            decode: PoolLayout { tp: self.decode_tp?, ep: self.decode_ep? },
        })
    }
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
    /// Candidates, one per task of a search spread over workers: the aggregated ones (layout ×
    /// max sequences × chunk) and the disaggregated ones.
    pub candidates: usize,
    /// Of the candidates, the disaggregated ones (prefill layout × decode layout × max sequences).
    pub disaggregated_candidates: usize,
    /// Simulations run.
    pub simulations: u64,
    /// Candidates not assessed: the search stopped at its budget or deadline first (they are
    /// the ones with the most GPUs, [`ServingSearch::fewest_gpus_first`]); 0 for a whole search.
    #[serde(default)]
    pub unassessed: usize,
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
    // One replica's price per token and per request is the deployment's: each replica serves
    // its share of the arrivals at the same cost.
    let bill = Bill::under_load(&s, req.price);
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
        usd_per_million_input_tokens: bill.usd_per_million_input_tokens.unwrap_or(f64::INFINITY),
        usd_per_million_output_tokens: bill.usd_per_million_output_tokens.unwrap_or(f64::INFINITY),
        usd_per_request: bill.usd_per_request.unwrap_or(f64::INFINITY),
        meets_sla: s.holds_p99(Some(req.ttft_bound_s), Some(req.tpot_bound_s)),
        serving: ServingKind::Aggregated,
        prefill_instances: None,
        prefill_tp: None,
        prefill_ep: None,
        decode_instances: None,
        decode_tp: None,
        decode_ep: None,
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
    let max_replicas = req.gpus_total / sc.parallel.gpus_per_replica();
    if max_replicas == 0 {
        return Ok(out);
    }
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
    let (_, best) = fewest_meeting(failing, (first_meeting.replicas, first_meeting), |mid| run(mid, &mut out))?;
    out.best = Some(best);
    Ok(out)
}

/// Bisection for the fewest of something (replicas, a pool's instances) that holds the SLAs:
/// `miss` is known to miss, `(hold, at_hold)` to hold; `run(n)` simulates `n` (`None`: it cannot
/// run, counted as a miss). Returns the fewest that hold and its point.
fn fewest_meeting(
    miss: u64,
    hold: (u64, ServingPoint),
    mut run: impl FnMut(u64) -> Result<Option<ServingPoint>>,
) -> Result<(u64, ServingPoint)> {
    let (mut lo, (mut hi, mut best)) = (miss, hold);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match run(mid)? {
            Some(p) if p.meets_sla => (hi, best) = (mid, p),
            _ => lo = mid,
        }
    }
    Ok((hi, best))
}

/// The most instances of a pool `other` instances leave, with `per` and `other_gpus` GPUs: at most
/// [`MAX_INSTANCES`] instances and `gpus_total` GPUs in all.
fn pool_room(per: u64, other: u64, other_gpus: u64, gpus_total: u64) -> u64 {
    MAX_INSTANCES.saturating_sub(other).min(gpus_total.saturating_sub(other_gpus) / per)
}

/// One simulation of `x` prefill instances of `prefill` and `y` decode instances of `decode`
/// (both on `prefill`'s GPU and precisions) at the whole rate, the KV link the GPU's `auto`.
fn simulate_split(
    prefill: &Scenario,
    decode: &Scenario,
    req: &ServingPlanRequest,
    cfg: &SimConfig,
    (x, y): (u64, u64),
    budget: &Budget,
) -> Result<ServingPoint> {
    let (lp, ld) = (PoolLayout::of(&prefill.parallel), PoolLayout::of(&decode.parallel));
    let gpus = x * lp.gpus() + y * ld.gpus();
    let link = KvLink::resolve_for_gpus(KvLinkChoice::Auto, &prefill.gpu, prefill.parallel.link_efficiency, gpus)?;
    let pools = Some(Pools { prefill: lp, decode: ld, aggregated: lp });
    let split = Deployment::Disaggregated(Disagg { prefill: x, decode: y, link, pools });
    let cfg = SimConfig { arrivals: Arrivals::Poisson { rate_per_s: req.rate_per_s }, ..cfg.clone() };
    let s = simulate_within(prefill, &cfg, &split, budget, |_| {})?.summary;
    let d = &decode.parallel;
    let bill = Bill::under_load(&s, req.price);
    Ok(ServingPoint {
        tp: d.tp,
        pp: d.pp,
        ep: d.ep,
        gpus_per_replica: gpus,
        replicas: 1,
        gpus,
        max_seqs: cfg.max_seqs,
        chunk_tokens: cfg.chunk_tokens,
        rate_per_replica_per_s: req.rate_per_s,
        ttft_p99_s: s.ttft_s.p99,
        tpot_p99_s: s.tpot_s.p99,
        e2e_p99_s: s.e2e_s.p99,
        output_tokens_per_s: s.output_tokens_per_s,
        usd_per_million_input_tokens: bill.usd_per_million_input_tokens.unwrap_or(f64::INFINITY),
        usd_per_million_output_tokens: bill.usd_per_million_output_tokens.unwrap_or(f64::INFINITY),
        usd_per_request: bill.usd_per_request.unwrap_or(f64::INFINITY),
        meets_sla: s.holds_p99(Some(req.ttft_bound_s), Some(req.tpot_bound_s)),
        serving: ServingKind::Disaggregated,
        prefill_instances: Some(x),
        prefill_tp: Some(lp.tp),
        prefill_ep: Some(lp.ep),
        decode_instances: Some(y),
        decode_tp: Some(ld.tp),
        decode_ep: Some(ld.ep),
    })
}

/// Lower bounds on the instances of each pool at the rate: `⌈R ÷ μ⌉` with `μ` an upper bound on
/// the requests/s one instance serves. A prefill instance's `μ_p`: steps of
/// `k = ⌊max_batched_tokens ÷ c⌋` whole prompts of `c = min(P̄, chunk)` tokens on an empty cache
/// (`k·c` prompt tokens a step, the cheapest tokens a step can hold), `μ_p = k·c ÷ step_s ÷ P̄`; a
/// decode instance's `μ_d`: steps decoding `max_seqs` sequences at the mean prompt's context,
/// `μ_d = max_seqs ÷ step_s ÷ max(Ō − 1, 1)` (the prefill pool gives the first token).
fn split_start(prefill: &Scenario, decode: &Scenario, req: &ServingPlanRequest, cfg: &SimConfig) -> (u64, u64) {
    let prompt = cfg.prompt.mean_tokens().max(1.0);
    let c = (prompt.round() as u64).clamp(1, cfg.chunk_tokens);
    let k = (cfg.max_batched_tokens / c).clamp(1, cfg.max_seqs);
    let step_s = StepClock::new(prefill).step_s(&vec![Chunk { new_tokens: c, cached_tokens: 0 }; k as usize]);
    let mu_prefill = (k * c) as f64 / step_s / prompt;
    let cached = prompt.round() as u64;
    let step_s =
        StepClock::new(decode).step_s(&vec![Chunk { new_tokens: 1, cached_tokens: cached }; cfg.max_seqs as usize]);
    let mu_decode = cfg.max_seqs as f64 / step_s / (cfg.output.mean_tokens() - 1.0).max(1.0);
    let bound = |mu: f64| ((req.rate_per_s / mu).ceil() as u64).clamp(1, MAX_INSTANCES);
    (bound(mu_prefill), bound(mu_decode))
}

/// Assess a disaggregated candidate: the fewest prefill and decode instances of its two layouts
/// that hold both SLAs at the rate (module docs). `Err` only when the search must stop.
fn assess_split(
    prefill: &Scenario,
    decode: &Scenario,
    req: &ServingPlanRequest,
    cfg: &SimConfig,
    budget: &Budget,
) -> Result<Assessed> {
    let mut out =
        Assessed { best: None, points: Vec::new(), closest: None, simulations: 0, failed_at: None, error: None };
    let (gp, gd) = (prefill.parallel.gpus_per_replica(), decode.parallel.gpus_per_replica());
    let (x0, y0) = split_start(prefill, decode, req, cfg);
    if x0 + y0 > MAX_INSTANCES || x0 * gp + y0 * gd > req.gpus_total {
        return Ok(out);
    }
    let run = |at: (u64, u64), out: &mut Assessed| -> Result<Option<ServingPoint>> {
        out.simulations += 1;
        match simulate_split(prefill, decode, req, cfg, at, budget) {
            Ok(p) => {
                out.points.push(p);
                Ok(Some(p))
            }
            Err(e @ (Error::Cancelled | Error::OverBudget { .. })) => Err(e),
            // A split that cannot run (a request past a pool's KV capacity) is left out.
            Err(_) => Ok(None),
        }
    };
    // Fewer instances than the bounds cannot keep up: the most known to miss start below them.
    let (mut x, mut y, mut x_miss, mut y_miss) = (x0, y0, x0 - 1, y0 - 1);
    let mut previous = f64::INFINITY;
    let meeting = loop {
        let Some(p) = run((x, y), &mut out)? else { return Ok(out) };
        if p.meets_sla {
            break p;
        }
        let b = badness(req, p.ttft_p99_s, p.tpot_p99_s);
        if b > 0.95 * previous {
            return Ok(out); // more instances do not help enough
        }
        previous = b;
        // The pool that misses its SLA grows: TTFT is the prefill pool's, TPOT the decode pool's
        // (with the move); a run that did not drain grows both.
        let (ttft_miss, tpot_miss) = match (p.ttft_p99_s > req.ttft_bound_s, p.tpot_p99_s > req.tpot_bound_s) {
            (false, false) => (true, true),
            misses => misses,
        };
        let (mut nx, mut ny) = (x, y);
        if ttft_miss {
            x_miss = x;
            nx = (2 * x).min(pool_room(gp, y, y * gd, req.gpus_total));
        }
        if tpot_miss {
            y_miss = y;
            ny = (2 * y).min(pool_room(gd, nx, nx * gp, req.gpus_total));
        }
        if (nx, ny) == (x, y) {
            return Ok(out); // at the most instances a deployment takes
        }
        (x, y) = (nx, ny);
    };
    // Bisect the prefill pool in (x_miss, x], then the decode pool in (y_miss, y].
    let (x, best) = fewest_meeting(x_miss, (x, meeting), |mid| run((mid, y), &mut out))?;
    let (_, best) = fewest_meeting(y_miss, (y, best), |mid| run((x, mid), &mut out))?;
    out.best = Some(best);
    Ok(out)
}

/// The request's scheduler with chunks (and a step's token budget) of `chunk` tokens and the
/// plan's SLAs.
fn config_at(req: &ServingPlanRequest, chunk: u64) -> SimConfig {
    SimConfig {
        max_batched_tokens: chunk,
        chunk_tokens: chunk,
        ttft_slo_s: Some(req.ttft_bound_s),
        tpot_slo_s: Some(req.tpot_bound_s),
        ..req.sim.clone()
    }
}

/// The candidate configurations of one layout: `(max_seqs, chunk)`.
fn candidates_of(sc: &Scenario, req: &ServingPlanRequest) -> Vec<SimConfig> {
    let mut out = Vec::new();
    for chunk in CHUNK_CANDIDATES {
        let base = config_at(req, chunk);
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

/// Seconds to prefill one prompt of `prompt` tokens alone on `sc`, in chunks of `chunk` tokens.
fn prefill_alone_s(sc: &Scenario, prompt: u64, chunk: u64) -> f64 {
    let mut clock = StepClock::new(sc);
    let (mut cached, mut t) = (0, 0.0);
    while cached < prompt {
        let c = (prompt - cached).min(chunk);
        t += clock.step_s(&[Chunk { new_tokens: c, cached_tokens: cached }]);
        cached += c;
    }
    t
}

/// The disaggregated candidates (module docs): per pool, the [`POOL_LAYOUTS`] layouts of the
/// fewest GPUs (then the fastest in the pool's phase) that hold the lengths in their KV cache and
/// meet the pool's bound alone — a prefill of the mean prompt within the TTFT bound, a decode
/// step of one sequence within the TPOT bound — paired every way; each pair with the largest
/// chunk of [`CHUNK_CANDIDATES`] and two sequence limits: `m*`, the largest power of two (as the
/// aggregated candidates' limits) whose decode step at the mean context (prompt + output ÷ 2)
/// on the decode layout meets the TPOT bound, and `m* ÷ 2`.
fn split_candidates(layouts: &[Scenario], quick: &[(usize, f64)], req: &ServingPlanRequest) -> Vec<Candidate> {
    let chunk = CHUNK_CANDIDATES[CHUNK_CANDIDATES.len() - 1];
    let base = config_at(req, chunk);
    let prompt = base.prompt.mean_tokens().max(1.0).round() as u64;
    let context = prompt + (base.output.mean_tokens() / 2.0).round() as u64;
    let (longest_prompt, longest_output) = (base.prompt.max_tokens(), base.output.max_tokens());
    let capacity = |sc: &Scenario| kv_capacity_blocks(sc, &base).map_or(0, |b| b * base.block_tokens);
    let mut prefill: Vec<(u64, f64, usize)> = Vec::new();
    let mut decode: Vec<(u64, f64, usize, u64)> = Vec::new();
    for (i, sc) in layouts.iter().enumerate() {
        let tokens = capacity(sc);
        let gpus = sc.parallel.gpus_per_replica();
        if tokens > 0 && longest_prompt.is_none_or(|p| p <= tokens) {
            let t = prefill_alone_s(sc, prompt, chunk);
            if t <= req.ttft_bound_s {
                prefill.push((gpus, t, i));
            }
        }
        let step_s = quick[i].1;
        let whole = match (longest_prompt, longest_output) {
            (Some(p), Some(o)) if p + o - 1 > tokens => continue,
            (Some(p), Some(o)) => (tokens / (p + o)).max(1),
            _ => MAX_SEQS_RANGE.1,
        };
        if tokens == 0 || step_s > req.tpot_bound_s {
            continue;
        }
        let limit = whole.next_power_of_two().clamp(MAX_SEQS_RANGE.0, MAX_SEQS_RANGE.1).min(chunk);
        let mut clock = StepClock::new(sc);
        let mut seqs = MAX_SEQS_RANGE.0;
        let mut best = seqs;
        while seqs <= limit {
            if clock.step_s(&vec![Chunk { new_tokens: 1, cached_tokens: context }; seqs as usize]) <= req.tpot_bound_s {
                best = seqs;
            }
            seqs *= 2;
        }
        decode.push((gpus, step_s, i, best));
    }
    let order = |a: &(u64, f64), b: &(u64, f64)| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1));
    prefill.sort_by(|a, b| order(&(a.0, a.1), &(b.0, b.1)).then(a.2.cmp(&b.2)));
    decode.sort_by(|a, b| order(&(a.0, a.1), &(b.0, b.1)).then(a.2.cmp(&b.2)));
    let mut out = Vec::new();
    for &(_, _, p) in prefill.iter().take(POOL_LAYOUTS) {
        for &(_, _, d, best) in decode.iter().take(POOL_LAYOUTS) {
            for seqs in [best, best / 2].into_iter().filter(|&m| m >= MAX_SEQS_RANGE.0) {
                out.push(Candidate::Disaggregated(p, d, SimConfig { max_seqs: seqs, ..base.clone() }));
            }
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

/// One candidate of a search: what it simulates, with the scheduler's limits.
#[derive(Debug, Clone)]
enum Candidate {
    /// Replicas of one layout (index in the search's layouts).
    Aggregated(usize, SimConfig),
    /// A prefill pool of one layout and a decode pool of another (indices in the layouts).
    Disaggregated(usize, usize, SimConfig),
}

impl Candidate {
    fn cfg(&self) -> &SimConfig {
        match self {
            Candidate::Aggregated(_, c) | Candidate::Disaggregated(_, _, c) => c,
        }
    }
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
    /// The candidates: the aggregated ones, then the disaggregated ones.
    work: Vec<Candidate>,
    /// Aggregated candidates (the first of `work`).
    aggregated: usize,
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
        if !(1..=MAX_SERVING_GPUS).contains(&req.gpus_total) {
            return Err(Error::invalid("gpus_total", req.gpus_total, integer_in(1, MAX_SERVING_GPUS)));
        }
        SimConfig { ttft_slo_s: Some(req.ttft_bound_s), tpot_slo_s: Some(req.tpot_bound_s), ..req.sim.clone() }
            .validate()?;
        let layouts: Vec<Scenario> =
            layouts(base, req.max_gpus.min(req.gpus_total)).into_iter().filter(|sc| sc.parallel.pp == 1).collect();
        // Early stop: a layout whose fastest decode step misses the TPOT bound is not simulated.
        let quick: Vec<(usize, f64)> = layouts
            .iter()
            .enumerate()
            .map(|(i, sc)| (i, StepClock::new(sc).step_s(&[Chunk { new_tokens: 1, cached_tokens: 0 }])))
            .collect();
        let mut work: Vec<Candidate> = quick
            .iter()
            .filter(|(_, t)| *t <= req.tpot_bound_s)
            .flat_map(|(i, _)| candidates_of(&layouts[*i], req).into_iter().map(move |c| Candidate::Aggregated(*i, c)))
            .collect();
        let aggregated = work.len();
        work.extend(split_candidates(&layouts, &quick, req));
        Ok(ServingSearch {
            base: base.clone(),
            req: req.clone(),
            layouts,
            quick,
            work,
            aggregated,
            unbound: Unbound::default(),
        })
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
        budget.admit(self.work.iter().map(Candidate::cfg))
    }

    /// Assess candidate `j` (< [`ServingSearch::len`]): the fewest replicas, or prefill and
    /// decode instances, that hold both SLAs (module docs); `Err` only when the search must stop
    /// (cancelled, or past the budget).
    pub fn assess(&self, j: usize, budget: &Budget) -> Result<Assessed> {
        match self.work.get(j) {
            None => Err(Error::invalid("candidate", j, format!("an index below {}", self.work.len()))),
            Some(Candidate::Aggregated(i, cfg)) => {
                assess(OnLayout { sc: &self.layouts[*i], kept: Some((*i, &self.unbound)) }, &self.req, cfg, budget)
            }
            Some(Candidate::Disaggregated(p, d, cfg)) => {
                assess_split(&self.layouts[*p], &self.layouts[*d], &self.req, cfg, budget)
            }
        }
    }

    /// The error of candidate `j`'s simulation at `replicas`, run again here (an assessment
    /// made in another process carries where it failed, not the error: the run is
    /// deterministic, and one that cannot run fails before its first step).
    fn failure(&self, j: usize, replicas: u64) -> Error {
        let Candidate::Aggregated(i, cfg) = &self.work[j] else {
            return Error::invalid("candidates", j, "assessments made from this search's own candidates");
        };
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

    /// The candidates in the order a search that may stop early assesses them: the fewest GPUs
    /// of one instance first (a disaggregated candidate: one instance of each pool), then in
    /// candidate order.
    pub fn fewest_gpus_first(&self) -> Vec<usize> {
        let gpus = |c: &Candidate| match c {
            Candidate::Aggregated(i, _) => self.layouts[*i].parallel.gpus_per_replica(),
            Candidate::Disaggregated(p, d, _) => {
                self.layouts[*p].parallel.gpus_per_replica() + self.layouts[*d].parallel.gpus_per_replica()
            }
        };
        let mut order: Vec<usize> = (0..self.work.len()).collect();
        order.sort_by_key(|&j| (gpus(&self.work[j]), j));
        order
    }

    /// The plan from every candidate's assessment, in candidate order.
    pub fn gather(&self, assessed: Vec<Assessed>) -> Result<ServingPlan> {
        self.gather_partial(assessed.into_iter().map(Some).collect())
    }

    /// The plan from the candidates assessed, in candidate order (`None`: not assessed, the
    /// search stopped first; [`ServingPlan::unassessed`] counts them). With none holding the
    /// SLAs and some not assessed, the refusal says the search stopped and how to narrow it.
    pub fn gather_partial(&self, assessed: Vec<Option<Assessed>>) -> Result<ServingPlan> {
        if assessed.len() != self.work.len() {
            return Err(Error::invalid(
                "candidates",
                assessed.len(),
                format!("{} assessments, one per candidate", self.work.len()),
            ));
        }
        let unassessed = assessed.iter().filter(|a| a.is_none()).count();
        let assessed: Vec<Assessed> = assessed
            .into_iter()
            .map(|a| {
                a.unwrap_or(Assessed {
                    best: None,
                    points: Vec::new(),
                    closest: None,
                    simulations: 0,
                    failed_at: None,
                    error: None,
                })
            })
            .collect();
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
        if ranked.is_empty() && unassessed > 0 {
            return Err(Error::refused(
                "max_gpus",
                format!("{} (the search stopped after {} of {} candidates)", req.max_gpus, work.len() - unassessed, work.len()),
                "a narrower search: fewer GPUs per replica ({max_gpus}), fewer {requests} per candidate, or more {max_steps}",
            ));
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
            a.usd_per_request
                .total_cmp(&b.usd_per_request)
                .then(a.gpus.cmp(&b.gpus))
                .then(a.e2e_p99_s.total_cmp(&b.e2e_p99_s))
        };
        let (mut ranked, meeting) = (distinct(ranked), distinct(meeting));
        ranked.sort_by(order);
        Ok(ServingPlan {
            ranked,
            pareto: pareto(meeting),
            layouts: layouts.len(),
            candidates: work.len(),
            disaggregated_candidates: work.len() - self.aggregated,
            unassessed,
            simulations,
        })
    }
}

/// The points less those that repeat another's deployment and outcome: the same layout,
/// replicas (or pools) and chunk, and the same simulated p99s and tokens/s, with a larger
/// `max_seqs` (a limit the run never reached, so the simulation was the same). The smallest
/// `max_seqs` stays.
pub fn distinct(mut points: Vec<ServingPoint>) -> Vec<ServingPoint> {
    let key = |p: &ServingPoint| {
        (
            (p.tp, p.pp, p.ep, p.replicas, p.chunk_tokens),
            (p.serving, p.prefill_instances, p.prefill_tp, p.prefill_ep, p.decode_instances, p.decode_tp, p.decode_ep),
            [p.ttft_p99_s, p.tpot_p99_s, p.e2e_p99_s, p.output_tokens_per_s].map(f64::to_bits),
        )
    };
    points.sort_by(|a, b| key(a).cmp(&key(b)).then(a.max_seqs.cmp(&b.max_seqs)));
    points.dedup_by(|later, kept| key(later) == key(kept));
    points
}

/// The points no other beats on both lower cost and lower p99 end-to-end latency, by cost.
pub fn pareto(mut points: Vec<ServingPoint>) -> Vec<ServingPoint> {
    points.sort_by(|a, b| a.usd_per_request.total_cmp(&b.usd_per_request).then(a.e2e_p99_s.total_cmp(&b.e2e_p99_s)));
    let mut front: Vec<ServingPoint> = Vec::new();
    for p in points {
        if front.last().is_none_or(|f| p.e2e_p99_s < f.e2e_p99_s) {
            front.push(p);
        }
    }
    front
}
