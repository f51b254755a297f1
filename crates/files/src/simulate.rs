//! `simulate` and `plan --rate` inputs as text (the CLI's flags, the Python package's keywords)
//! into the core's [`SimConfig`] and [`ServingPlanRequest`], reading the files they name
//! (`--trace`, `hist:FILE` lengths); the runs of a rate sweep; the plan under load as its report.
//! One definition for both front ends, so the same text gives the same numbers.

use crate::read_text;
use anyhow::{Context, Result};
use llm_ledger_core::limits::{parse_f64, TPOT_MS};
use llm_ledger_core::plan::MAX_PLAN_GPUS;
use llm_ledger_core::plan_serving::{plan_serving_within, ServingPlanRequest, DEFAULT_SEARCH_REQUESTS};
use llm_ledger_core::scenario::parse_u64;
use llm_ledger_core::serving::{Serving, ServingRequest};
use llm_ledger_core::simulate::budget::MAX_STEPS_FIELD;
use llm_ledger_core::simulate::workload::{check_rate, parse_trace_csv, Arrivals, Lengths};
use llm_ledger_core::simulate::{
    simulate_within, Budget, Deployment, Disagg, SimConfig, Simulation, DEFAULT_MAX_STEPS, MAX_RATE_PER_S,
};
use llm_ledger_core::sweep::Axis;
use llm_ledger_core::{Error, Scenario};
use llm_ledger_report::plan::DEFAULT_MAX_GPUS;
use llm_ledger_report::plan_serving::ServingPlanReport;
use llm_ledger_report::plot::serving::ServingChart;
use llm_ledger_report::simulate::SimulateReport;
use llm_ledger_report::Inputs;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// Most rates in one sweep.
pub const MAX_RATES: usize = 1000;

/// Most requests over all the rates of one sweep (each run is bounded; this bounds their sum).
pub const MAX_SWEEP_REQUESTS: u64 = 10_000_000;

/// The rates of `rate`: the sweep syntax for whole numbers (`2,4,8`, `1..40`, `1..64*2`), or a
/// list of decimals (`0.5,1.5`).
pub fn parse_rates(text: &str) -> Result<Vec<f64>, Error> {
    if let Ok(axis) = Axis::parse("rate", text, 1, MAX_RATE_PER_S as u64) {
        if axis.len() as usize > MAX_RATES {
            return Err(Error::invalid("rate", format!("{} rates", axis.len()), format!("at most {MAX_RATES}")));
        }
        return Ok(axis.iter().map(|v| v as f64).collect());
    }
    let items: Vec<&str> = text.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if items.is_empty() || items.len() > MAX_RATES {
        return Err(Error::invalid(
            "rate",
            format!("{text:?}"),
            "requests/s: a value, a list `2,4,8` or a range `1..40`",
        ));
    }
    items.iter().map(|s| check_rate("rate", parse_f64("rate", s)?)).collect()
}

/// The step budget of one command over all its runs: `max_steps` (an integer ≥ 1; default
/// [`DEFAULT_MAX_STEPS`]), cancelled when `cancel` becomes true.
pub fn budget<'a>(max_steps: Option<&str>, cancel: Option<&'a AtomicBool>) -> Result<Budget<'a>, Error> {
    let steps = match max_steps {
        Some(s) => parse_u64(MAX_STEPS_FIELD, s)?,
        None => DEFAULT_MAX_STEPS,
    };
    if steps == 0 {
        return Err(Error::invalid(MAX_STEPS_FIELD, steps, "an integer ≥ 1 (engine steps over every run)"));
    }
    Ok(Budget::new(steps, cancel))
}

/// Prompt or output lengths from a flag's text (`hist:FILE` read here), or `default` tokens.
pub fn lengths(field: &str, text: Option<&str>, default: u64) -> Result<Lengths> {
    match text {
        None => Ok(Lengths::Fixed(default)),
        Some(t) => match t.trim().strip_prefix("hist:") {
            Some(path) => {
                let text = read_text(Path::new(path), "histogram")?;
                Ok(Lengths::parse_histogram(field, &text).with_context(|| format!("in histogram `{path}`"))?)
            }
            None => Ok(Lengths::parse(field, t)?),
        },
    }
}

/// The inputs of `simulate` besides the scenario, as text (the CLI's flags; `None` = the default).
#[derive(Debug, Clone, Default)]
pub struct SimArgs {
    /// Requests/s: a value, a list or a range (a sweep).
    pub rate: Option<String>,
    /// poisson, gamma, closed or trace.
    pub arrivals: Option<String>,
    /// Coefficient of variation of gamma gaps.
    pub cv: Option<String>,
    /// Closed-loop concurrency.
    pub concurrency: Option<String>,
    /// A trace CSV file (path).
    pub trace: Option<String>,
    /// Requests per run.
    pub requests: Option<String>,
    /// Seed of the draws.
    pub seed: Option<String>,
    /// Prompt lengths (N, uniform:, lognormal:, hist:FILE).
    pub prompt: Option<String>,
    /// Output lengths, as `prompt`.
    pub output: Option<String>,
    /// Most sequences per step.
    pub max_seqs: Option<String>,
    /// Most new tokens per step.
    pub max_batched_tokens: Option<String>,
    /// Most prompt tokens of one sequence per step.
    pub chunk: Option<String>,
    /// prefill-first or decode-first.
    pub schedule: Option<String>,
    /// Tokens per KV block.
    pub block: Option<String>,
    /// Prefix-cache hit rate.
    pub prefix_hit: Option<String>,
    /// Goodput TTFT bound, milliseconds.
    pub ttft_ms: Option<String>,
    /// Goodput TPOT bound, milliseconds.
    pub tpot_ms: Option<String>,
    /// Memory reserve (e.g. `2GB`).
    pub reserve: Option<String>,
    /// Disaggregated pools `PREFILL:DECODE` (instances).
    pub disagg: Option<String>,
    /// The link a disaggregated run moves KV caches over.
    pub kv_link: Option<String>,
    /// Engine steps over every run of the command (the step budget).
    pub max_steps: Option<String>,
}

/// The simulator's configuration from the text inputs (the rate is set per run).
pub fn config(args: &SimArgs, sc: &Scenario) -> Result<SimConfig> {
    let u = |field: &str, v: &Option<String>, default: u64| -> Result<u64> {
        Ok(v.as_deref().map(|s| parse_u64(field, s)).transpose()?.unwrap_or(default))
    };
    let d = SimConfig::poisson(10.0);
    let kind = args.arrivals.as_deref().unwrap_or(if args.trace.is_some() { "trace" } else { "poisson" });
    let arrivals = match kind.trim().to_ascii_lowercase().as_str() {
        "poisson" => d.arrivals.clone(),
        "gamma" => Arrivals::Gamma {
            rate_per_s: 10.0,
            cv: args.cv.as_deref().map(|s| parse_f64("cv", s)).transpose()?.unwrap_or(2.0),
        },
        "closed" => Arrivals::Closed { concurrency: u("concurrency", &args.concurrency, 16)? },
        "trace" => {
            let Some(path) = &args.trace else {
                return Err(Error::invalid("arrivals", "trace", "--trace FILE with trace arrivals").into());
            };
            let text = read_text(Path::new(path), "trace")?;
            Arrivals::Trace(parse_trace_csv(&text).with_context(|| format!("in trace `{path}`"))?.into())
        }
        other => {
            return Err(Error::unknown("arrivals", other, ["poisson", "gamma", "closed", "trace"])
                .about("arrivals")
                .into())
        }
    };
    let unused = |flag: &str, given: bool, needs: &str| -> Result<()> {
        if given {
            return Err(Error::invalid(flag, "given", format!("it applies only to --arrivals {needs}")).into());
        }
        Ok(())
    };
    unused("cv", args.cv.is_some() && kind != "gamma", "gamma")?;
    unused("concurrency", args.concurrency.is_some() && kind != "closed", "closed")?;
    unused("trace", args.trace.is_some() && kind != "trace", "trace")?;
    unused("rate", args.rate.is_some() && matches!(kind, "closed" | "trace"), "poisson or gamma")?;
    unused("requests", args.requests.is_some() && kind == "trace", "poisson, gamma or closed (a trace has its own)")?;
    let serving = ServingRequest { reserve: args.reserve.clone(), ..Default::default() }.resolve(sc)?;
    let max_batched_tokens = u("max_batched_tokens", &args.max_batched_tokens, d.max_batched_tokens)?;
    let ms = |field: &str, v: &Option<String>| -> Result<Option<f64>> {
        Ok(v.as_deref()
            .map(|s| TPOT_MS.parse(s).map_err(|e| e.map_field(|_| field.to_string())))
            .transpose()?
            .map(|ms| ms / 1e3))
    };
    let requests = match &arrivals {
        Arrivals::Trace(t) => t.len() as u64,
        _ => u("requests", &args.requests, d.requests)?,
    };
    let cfg = SimConfig {
        arrivals,
        requests,
        seed: u("seed", &args.seed, d.seed)?,
        prompt: lengths("prompt", args.prompt.as_deref(), llm_ledger_core::serving::DEFAULT_PROMPT_TOKENS)?,
        output: lengths("output", args.output.as_deref(), llm_ledger_core::serving::DEFAULT_OUTPUT_TOKENS)?,
        max_seqs: u("max_seqs", &args.max_seqs, d.max_seqs)?,
        max_batched_tokens,
        chunk_tokens: u("chunk", &args.chunk, max_batched_tokens)?,
        schedule: args
            .schedule
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|e: Error| e.about("schedule"))?
            .unwrap_or(d.schedule),
        block_tokens: u("block", &args.block, d.block_tokens)?,
        prefix_hit: args.prefix_hit.as_deref().map(|s| parse_f64("prefix_hit", s)).transpose()?.unwrap_or(0.0),
        ttft_slo_s: ms("ttft_ms", &args.ttft_ms)?,
        tpot_slo_s: ms("tpot_ms", &args.tpot_ms)?,
        reserve_bytes: serving.reserve_bytes,
        ..d
    };
    // Every range first, so that a bad value is named before the step budget is estimated.
    cfg.validate()?;
    Ok(cfg)
}

/// `cfg` at another arrival rate (open loops; a closed loop or a trace is unchanged).
pub fn with_rate(cfg: &SimConfig, rate: f64) -> SimConfig {
    let arrivals = match &cfg.arrivals {
        Arrivals::Poisson { .. } => Arrivals::Poisson { rate_per_s: rate },
        Arrivals::Gamma { cv, .. } => Arrivals::Gamma { rate_per_s: rate, cv: *cv },
        other => other.clone(),
    };
    SimConfig { arrivals, ..cfg.clone() }
}

/// The rates to run: `rate`'s list for open loops (10/s when not given), one run (NaN: the
/// configuration's own arrivals) for a closed loop or a trace; at most [`MAX_SWEEP_REQUESTS`]
/// requests over a sweep.
pub fn rates(rate: Option<&str>, cfg: &SimConfig) -> Result<Vec<f64>> {
    let rates = match (rate, cfg.arrivals.rate_per_s()) {
        (Some(r), Some(_)) => parse_rates(r)?,
        (None, Some(_)) => vec![10.0],
        _ => vec![f64::NAN],
    };
    if rates.len() > 1 {
        check_sweep_requests(cfg, rates.len(), 1, "")?;
    }
    Ok(rates)
}

/// At most [`MAX_SWEEP_REQUESTS`] requests over `rates × runs_per_rate` runs of `cfg` (`what`
/// says why a rate runs more than once).
pub fn check_sweep_requests(cfg: &SimConfig, rates: usize, runs_per_rate: u64, what: &str) -> Result<()> {
    if cfg.requests.saturating_mul(rates as u64).saturating_mul(runs_per_rate) > MAX_SWEEP_REQUESTS {
        return Err(Error::invalid(
            "requests",
            format!("{} requests at each of {rates} rates{what}", cfg.requests),
            format!("at most {MAX_SWEEP_REQUESTS} requests in all"),
        )
        .into());
    }
    Ok(())
}

/// One run per rate of [`rates`], in parallel; each is deterministic, so the order of work does
/// not change a number.
pub fn run_rates(sc: &Scenario, cfg: &SimConfig, rates: &[f64], budget: &Budget) -> Result<Vec<Simulation>, Error> {
    run_deployments(sc, cfg, rates, &[Deployment::SINGLE], budget)
}

/// One run per deployment and rate (deployment-major: every rate of the first deployment, then
/// of the next), in parallel, under one step budget: estimated before any starts
/// ([`Budget::admit`]), charged as they go.
pub fn run_deployments(
    sc: &Scenario,
    cfg: &SimConfig,
    rates: &[f64],
    deployments: &[Deployment],
    budget: &Budget,
) -> Result<Vec<Simulation>, Error> {
    use rayon::prelude::*;
    let jobs: Vec<(f64, &Deployment)> = deployments.iter().flat_map(|d| rates.iter().map(move |&r| (r, d))).collect();
    budget.admit(std::iter::repeat_n(cfg, jobs.len()))?;
    jobs.par_iter()
        .map(|&(rate, d)| {
            let c = if rate.is_nan() { cfg.clone() } else { with_rate(cfg, rate) };
            simulate_within(sc, &c, d, budget, |_| {})
        })
        .collect()
}

/// The disaggregated deployment of `disagg` (`X:Y`) and `kv_link`, if asked for.
pub fn disagg(args: &SimArgs, sc: &Scenario) -> Result<Option<Disagg>> {
    let Some(split) = &args.disagg else {
        if args.kv_link.is_some() {
            return Err(Error::invalid("kv_link", "given", "it applies only with --disagg X:Y").into());
        }
        return Ok(None);
    };
    Ok(Some(Disagg::of_inputs(split, args.kv_link.as_deref(), sc)?))
}

/// A `simulate` run as every front end shows it: the report, and the runs behind it (one per
/// rate; the disaggregated ones with `disagg`).
pub struct SimRun {
    /// The report (table, JSON, CSV, Markdown).
    pub report: SimulateReport,
    /// One run per rate (the disaggregated deployment's with `disagg`).
    pub runs: Vec<Simulation>,
}

impl SimRun {
    /// The plot `--plot` draws: latency CDFs of one rate, or throughput against p99 latency over
    /// a sweep.
    pub fn chart(&self) -> ServingChart {
        let title = chart_title(&self.report.inputs);
        match &self.report.points {
            Some(points) => ServingChart::throughput_latency(points, title),
            None => ServingChart::latency_cdfs(&self.runs[0], title),
        }
    }
}

/// A run that replaces the parallel runs of one rate (the CLI's step trace), with the input that
/// asks for it (named in the refusal when a sweep or `disagg` is asked for too).
pub type SingleRun<'a> = (&'a str, &'a dyn Fn(&SimConfig, &Budget) -> Result<Simulation>);

/// Resolve `args` for `sc` and run `simulate`: one run per rate, in parallel, and with
/// `disagg` the same rates aggregated on as many instances beside the disaggregated pools.
/// `single` replaces the runs of a single rate without `disagg` (the CLI's step trace); it is
/// refused with a sweep or `disagg` (`single_field` names its input). Every run is under the
/// step budget of `max_steps` and stops once `cancel` becomes true ([`Error::Cancelled`]).
pub fn run(
    sc: &Scenario,
    args: &SimArgs,
    single: Option<SingleRun<'_>>,
    cancel: Option<&AtomicBool>,
) -> Result<SimRun> {
    let budget = budget(args.max_steps.as_deref(), cancel)?;
    let cfg = config(args, sc)?;
    let rates = rates(args.rate.as_deref(), &cfg)?;
    let sweep = rates.len() > 1;
    let disagg = disagg(args, sc)?;
    // With disagg every rate runs twice: disaggregated and aggregated.
    if sweep && disagg.is_some() {
        check_sweep_requests(&cfg, rates.len(), 2, ", run disaggregated and aggregated")?;
    }
    let cfg = if rates.len() == 1 && !rates[0].is_nan() { with_rate(&cfg, rates[0]) } else { cfg };
    let runs = match single {
        Some((field, _)) if sweep => {
            return Err(Error::invalid(field, "given with a sweep of rates", "one rate").into());
        }
        Some((field, _)) if disagg.is_some() => {
            return Err(Error::invalid(field, "given with --disagg", "a run of one instance").into());
        }
        Some((_, one)) => {
            budget.admit([&cfg])?;
            vec![one(&cfg, &budget)?]
        }
        None => {
            let deployments: Vec<Deployment> = match &disagg {
                None => vec![Deployment::SINGLE],
                Some(d) => {
                    let d = Deployment::Disaggregated(d.clone());
                    vec![d.aggregated_equivalent(), d]
                }
            };
            run_deployments(sc, &cfg, &rates, &deployments, &budget)?
        }
    };
    // With disagg the runs are the aggregated ones, then the disaggregated ones.
    let (aggregated, runs) = match &disagg {
        Some(_) => {
            let mut runs = runs;
            let disaggregated = runs.split_off(rates.len());
            (runs, disaggregated)
        }
        None => (Vec::new(), runs),
    };
    let summaries = runs.iter().map(|r| r.summary.clone()).collect();
    let report = match &disagg {
        None => SimulateReport::new(sc, &cfg, summaries, sweep),
        Some(d) => SimulateReport::disaggregated(
            sc,
            &cfg,
            d,
            summaries,
            aggregated.iter().map(|r| r.summary.clone()).collect(),
            sweep,
        ),
    };
    Ok(SimRun { report, runs })
}

/// The title of `simulate`'s plots: the first part of the report's title (model and GPU; the
/// ledger title's phase and batch are not a serving run's).
pub fn chart_title(inputs: &Inputs) -> Option<String> {
    Some(llm_ledger_report::plot::title(inputs).split(" · ").take(1).collect::<Vec<_>>().join(" · "))
}

/// The inputs of `plan --rate` (the plan under load), as text.
#[derive(Debug, Clone, Default)]
pub struct PlanLoadArgs {
    /// Arrival rate, requests/s (Poisson).
    pub rate: Option<String>,
    /// Bound on the p99 TTFT, milliseconds.
    pub ttft_ms: Option<String>,
    /// Requests simulated per candidate.
    pub requests: Option<String>,
    /// Seed of the draws.
    pub seed: Option<String>,
    /// Prompt lengths, as `simulate`'s.
    pub prompt: Option<String>,
    /// Output lengths, as `simulate`'s.
    pub output_tokens: Option<String>,
    /// Engine steps over every simulation of the search (the step budget).
    pub max_steps: Option<String>,
}

impl PlanLoadArgs {
    /// Refuse an input of the plan under load given without `rate` (the static plan).
    pub fn check_static(&self) -> Result<()> {
        for (flag, given) in [
            ("ttft_ms", self.ttft_ms.is_some()),
            ("requests", self.requests.is_some()),
            ("seed", self.seed.is_some()),
            ("prompt", self.prompt.is_some()),
            ("output", self.output_tokens.is_some()),
            (MAX_STEPS_FIELD, self.max_steps.is_some()),
        ] {
            if given {
                return Err(Error::invalid(flag, "given", "it applies only with --rate (a plan under load)").into());
            }
        }
        Ok(())
    }

    /// The rate (`rate`, the text of [`PlanLoadArgs::rate`]) and the TTFT bound in seconds,
    /// checked, and refusals of `batch` and `ctx` (the simulated lengths replace them); run
    /// before the scenario is resolved.
    pub fn check(&self, rate: &str, batch_given: bool, ctx_given: bool) -> Result<(f64, f64)> {
        let rate_per_s = check_rate("rate", parse_f64("rate", rate)?)?;
        for (flag, given) in [("batch", batch_given), ("ctx", ctx_given)] {
            if given {
                return Err(
                    Error::invalid(flag, "given with --rate", "--prompt and --output (the simulated lengths)").into()
                );
            }
        }
        let Some(ttft) = &self.ttft_ms else {
            return Err(Error::invalid("ttft_ms", "none given", "a p99 bound in milliseconds with --rate").into());
        };
        let ttft_bound_s = TPOT_MS.parse(ttft).map_err(|e| e.map_field(|_| "ttft_ms".to_string()))? / 1e3;
        Ok((rate_per_s, ttft_bound_s))
    }

    /// The cheapest deployment of `sc` holding the p99 TTFT and TPOT bounds at the rate, by
    /// simulation (`plan_serving`), as its report: `checked` is [`PlanLoadArgs::check`]'s rate
    /// and TTFT bound; `s` holds the price, the reserve and the TPOT bound. The search runs
    /// under the step budget of `max_steps` and stops once `cancel` becomes true.
    pub fn report(
        &self,
        sc: &Scenario,
        s: &Serving,
        checked: (f64, f64),
        max_gpus: u64,
        cancel: Option<&AtomicBool>,
    ) -> Result<ServingPlanReport> {
        let (rate_per_s, ttft_bound_s) = checked;
        let budget = budget(self.max_steps.as_deref(), cancel)?;
        let price = s.require_price(&sc.gpu.name)?;
        let Some(tpot_bound_s) = s.tpot_bound_s else {
            return Err(Error::invalid("tpot_ms", "none given", "a bound in milliseconds").into());
        };
        let u = |field: &str, v: &Option<String>, default: u64| -> Result<u64> {
            Ok(v.as_deref().map(|s| parse_u64(field, s)).transpose()?.unwrap_or(default))
        };
        let defaults = SimConfig::poisson(rate_per_s);
        let sim = SimConfig {
            requests: u("requests", &self.requests, DEFAULT_SEARCH_REQUESTS)?,
            seed: u("seed", &self.seed, defaults.seed)?,
            prompt: lengths("prompt", self.prompt.as_deref(), llm_ledger_core::serving::DEFAULT_PROMPT_TOKENS)?,
            output: lengths("output", self.output_tokens.as_deref(), llm_ledger_core::serving::DEFAULT_OUTPUT_TOKENS)?,
            reserve_bytes: s.reserve_bytes,
            ..defaults
        };
        let (requests, seed) = (sim.requests, sim.seed);
        let request = ServingPlanRequest { rate_per_s, ttft_bound_s, tpot_bound_s, max_gpus, price, sim };
        let plan = plan_serving_within(sc, &request, &budget)?;
        Ok(ServingPlanReport::new(
            Inputs::of(sc),
            rate_per_s,
            ttft_bound_s,
            tpot_bound_s,
            max_gpus,
            price,
            requests,
            seed,
            plan,
        ))
    }
}

/// `max_gpus` of a plan under load (default [`DEFAULT_MAX_GPUS`]), in 1..=[`MAX_PLAN_GPUS`].
pub fn max_gpus(text: Option<&str>) -> Result<u64> {
    let max_gpus = match text {
        Some(s) => parse_u64("max_gpus", s)?,
        None => DEFAULT_MAX_GPUS,
    };
    if !(1..=MAX_PLAN_GPUS).contains(&max_gpus) {
        return Err(Error::invalid("max_gpus", max_gpus, format!("an integer in 1..={MAX_PLAN_GPUS}")).into());
    }
    Ok(max_gpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_take_the_sweep_syntax_and_decimals() {
        assert_eq!(parse_rates("2,4,8").unwrap(), [2.0, 4.0, 8.0]);
        assert_eq!(parse_rates("1..4").unwrap(), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(parse_rates("0.5,1.5").unwrap(), [0.5, 1.5]);
        assert_eq!(parse_rates("0").unwrap_err().field(), Some("rate"));
        assert!(parse_rates("-2").unwrap_err().to_string().contains("a number in [1e-300, 1e6]"));
        assert_eq!(
            parse_rates("5e-324").unwrap_err().to_string(),
            "invalid `rate`: 5e-324 (a number in [1e-300, 1e6])"
        );
        assert!(parse_rates("1..100000").unwrap_err().to_string().contains("at most 1000"));
    }
}
