//! The load a deployment holds, found by simulation ([`crate::simulate`]): the largest arrival
//! rate whose run keeps p99 TTFT and p99 TPOT within their bounds (its **capacity**, the goodput
//! an SLA allows), the rate it completes requests when it is always full (**saturation**), and
//! the **knee** past which queueing, not service, sets the latency.
//!
//! * **Saturation** `μ`: a closed loop of `max_seqs × instances` requests in flight (each
//!   finished request is replaced at once, so every step is as full as the scheduler and the
//!   KV cache allow), its completed requests per second. No open-loop rate above `μ` is served
//!   in a steady state: the queue grows without bound, and what a run of a fixed number of
//!   requests completes then depends on how far past `μ` it is pushed.
//! * **Light load**: the same arrivals at [`LIGHT_LOAD`] × `μ`: the latencies of a deployment
//!   that never queues.
//! * **Capacity**: the largest rate in `[LIGHT_LOAD·μ, μ]` whose run finishes every request
//!   within the p99 bounds ([`SimSummary::holds_p99`]), by bisection on the rate's logarithm
//!   until the bracket is within [`RATE_PRECISION`]. Each run draws the same random numbers
//!   (the seed), so a higher rate is the same arrivals closer together: the p99s grow with
//!   the rate up to the sketch's noise, which bisection assumes. `None` when the light-load
//!   run already misses a bound (no load holds it).
//! * **Knee**: the largest rate in the same range whose p99 end-to-end latency is at most
//!   [`KNEE_FACTOR`] × the light-load run's, by the same bisection.
//!
//! The work is bounded: `2 + 2 ⌈log₂(ln(1/LIGHT_LOAD) ÷ ln(1 + RATE_PRECISION))⌉ = 18` runs at
//! most, each within the caller's step [`Budget`].

use crate::error::{Error, Result};
use crate::scenario::Scenario;
use crate::simulate::workload::Arrivals;
use crate::simulate::{simulate_within, Budget, Deployment, SimConfig, SimSummary, Simulation};
use serde::Serialize;

/// The light load, as a fraction of the saturation rate.
pub const LIGHT_LOAD: f64 = 0.05;
/// The bisection stops when the bracket's rates are within this fraction of each other.
pub const RATE_PRECISION: f64 = 0.02;
/// The knee: p99 end-to-end latency this many times the light load's.
pub const KNEE_FACTOR: f64 = 2.0;

/// One run of the search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityRun {
    /// Poisson (or gamma) arrivals per second; `None` for the saturating closed loop.
    pub rate_per_s: Option<f64>,
    /// Whether the run held the p99 bounds.
    pub holds: bool,
    /// Completed requests per second.
    pub requests_per_s: f64,
    /// p99 time to first token, seconds.
    pub ttft_p99_s: f64,
    /// p99 time per output token, seconds.
    pub tpot_p99_s: f64,
    /// p99 end-to-end latency, seconds.
    pub e2e_p99_s: f64,
}

impl CapacityRun {
    fn of(rate_per_s: Option<f64>, s: &SimSummary, bounds: Bounds) -> CapacityRun {
        CapacityRun {
            rate_per_s,
            holds: s.holds_p99(bounds.ttft_s, bounds.tpot_s),
            requests_per_s: s.requests_per_s,
            ttft_p99_s: s.ttft_s.p99,
            tpot_p99_s: s.tpot_s.p99,
            e2e_p99_s: s.e2e_s.p99,
        }
    }
}

/// The p99 bounds a load must hold, seconds (at least one).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bounds {
    /// p99 time to first token.
    pub ttft_s: Option<f64>,
    /// p99 time per output token.
    pub tpot_s: Option<f64>,
}

/// What the search found: the facts, and the run at the capacity.
#[derive(Debug, Clone)]
pub struct Capacity {
    /// The rates found and every run of the search.
    pub facts: CapacityFacts,
    /// The run at the capacity (the light load's when no rate holds the bounds).
    pub at: Simulation,
}

/// The rates a capacity search found, and its runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityFacts {
    /// The bounds held.
    pub bounds: Bounds,
    /// Requests in flight in the saturating closed loop.
    pub saturating_concurrency: u64,
    /// Completed requests per second when always full.
    pub saturation_per_s: f64,
    /// The largest arrival rate that holds the bounds; `None`: not even the light load does.
    pub capacity_per_s: Option<f64>,
    /// The largest arrival rate whose p99 end-to-end latency is within [`KNEE_FACTOR`] × the
    /// light load's.
    pub knee_per_s: f64,
    /// The light load's rate, requests per second.
    pub light_rate_per_s: f64,
    /// The light load's p99 end-to-end latency, seconds.
    pub light_e2e_p99_s: f64,
    /// Every run, in the order run.
    pub runs: Vec<CapacityRun>,
}

/// The largest value in `[lo, hi]` where `holds` is true, by bisection on the logarithm
/// (`holds(lo)` is known true and `holds(hi)` false), to within [`RATE_PRECISION`].
fn bisect(mut lo: f64, mut hi: f64, mut holds: impl FnMut(f64) -> Result<bool>) -> Result<f64> {
    while hi / lo > 1.0 + RATE_PRECISION {
        let mid = (lo * hi).sqrt();
        if holds(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// Find the capacity, saturation and knee of `deployment` on `sc` for `cfg`'s requests and
/// scheduler (its arrivals must be Poisson or gamma: their rate is what is searched).
pub fn find(
    sc: &Scenario,
    cfg: &SimConfig,
    deployment: &Deployment,
    bounds: Bounds,
    budget: &Budget,
) -> Result<Capacity> {
    if bounds.ttft_s.is_none() && bounds.tpot_s.is_none() {
        return Err(Error::refused("rate", "max", "{ttft_ms} or {tpot_ms}: the p99 bounds the load must hold"));
    }
    if cfg.arrivals.rate_per_s().is_none() {
        return Err(Error::refused("rate", "max", "poisson or gamma {arrivals}: a rate to search"));
    }
    let mut runs = Vec::new();
    let run = |cfg: &SimConfig| simulate_within(sc, cfg, deployment, budget, |_| {});
    let concurrency = cfg.max_seqs.saturating_mul(deployment.instances());
    let closed = SimConfig { arrivals: Arrivals::Closed { concurrency }, ..cfg.clone() };
    let saturated = run(&closed)?.summary;
    runs.push(CapacityRun::of(None, &saturated, bounds));
    let mu = saturated.requests_per_s;
    if mu.is_nan() || mu <= 0.0 {
        return Err(Error::invalid("rate", "max", "a deployment that completes requests when full"));
    }
    let light_rate = LIGHT_LOAD * mu;
    let light = run(&cfg.at_rate(light_rate))?;
    runs.push(CapacityRun::of(Some(light_rate), &light.summary, bounds));
    let light_e2e = light.summary.e2e_s.p99;
    let mut tried: Vec<(f64, Simulation)> = Vec::new();
    let mut at_rate = |rate: f64, runs: &mut Vec<CapacityRun>| -> Result<SimSummary> {
        if let Some((_, s)) = tried.iter().find(|(r, _)| *r == rate) {
            return Ok(s.summary.clone());
        }
        let s = run(&cfg.at_rate(rate))?;
        runs.push(CapacityRun::of(Some(rate), &s.summary, bounds));
        let summary = s.summary.clone();
        tried.push((rate, s));
        Ok(summary)
    };
    let holds = |s: &SimSummary| s.holds_p99(bounds.ttft_s, bounds.tpot_s);
    let capacity = if !holds(&light.summary) {
        None
    } else if holds(&at_rate(mu, &mut runs)?) {
        Some(mu)
    } else {
        Some(bisect(light_rate, mu, |r| Ok(holds(&at_rate(r, &mut runs)?)))?)
    };
    let knee_holds = |s: &SimSummary| s.drained && s.e2e_s.p99 <= KNEE_FACTOR * light_e2e;
    let knee = if knee_holds(&at_rate(mu, &mut runs)?) {
        mu
    } else {
        bisect(light_rate, mu, |r| Ok(knee_holds(&at_rate(r, &mut runs)?)))?
    };
    let at = match capacity {
        Some(c) if c != light_rate => {
            at_rate(c, &mut runs)?;
            tried.into_iter().find(|(r, _)| *r == c).map(|(_, s)| s).expect("the capacity's run was kept")
        }
        _ => light,
    };
    Ok(Capacity {
        facts: CapacityFacts {
            bounds,
            saturating_concurrency: concurrency,
            saturation_per_s: mu,
            capacity_per_s: capacity,
            knee_per_s: knee,
            light_rate_per_s: light_rate,
            light_e2e_p99_s: light_e2e,
            runs,
        },
        at,
    })
}
