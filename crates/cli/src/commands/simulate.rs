//! `llm-ledger simulate`: flags and files into a [`SimConfig`], one run per rate, the report and
//! the plots. The simulation itself is the core's ([`llm_ledger_core::simulate`]).

use crate::cli::SimulateArgs;
use crate::inputs;
use anyhow::{Context, Result};
use llm_ledger_core::limits::{parse_f64, TPOT_MS};
use llm_ledger_core::scenario::parse_u64;
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_core::simulate::workload::{parse_trace_csv, Arrivals, Lengths};
use llm_ledger_core::simulate::{
    simulate, simulate_deployment, Deployment, Disagg, SimConfig, Simulation, StepRecord, MAX_RATE_PER_S,
};
use llm_ledger_core::sweep::Axis;
use llm_ledger_core::Error;
use llm_ledger_report::plot::serving::ServingChart;
use llm_ledger_report::plot::PlotSize;
use llm_ledger_report::simulate::SimulateReport;
use llm_ledger_report::{Format, Report};
use std::path::Path;

/// Most rates in one sweep.
pub const MAX_RATES: usize = 1000;

/// Most requests over all the rates of one sweep (each run is bounded; this bounds their sum).
pub const MAX_SWEEP_REQUESTS: u64 = 10_000_000;

/// The rates of `--rate`: the sweep syntax for whole numbers (`2,4,8`, `1..40`, `1..64*2`), or a
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
    items
        .iter()
        .map(|s| {
            let v = parse_f64("rate", s)?;
            if v > 0.0 && v <= MAX_RATE_PER_S {
                Ok(v)
            } else {
                Err(Error::invalid("rate", s, format!("a rate in requests/s above 0 and at most {MAX_RATE_PER_S}")))
            }
        })
        .collect()
}

/// Prompt or output lengths from a flag's text (`hist:FILE` read here), or `default` tokens.
pub fn lengths(field: &str, text: Option<&str>, default: u64) -> Result<Lengths> {
    match text {
        None => Ok(Lengths::Fixed(default)),
        Some(t) => match t.trim().strip_prefix("hist:") {
            Some(path) => {
                let text = inputs::read_text(Path::new(path), "histogram")?;
                Ok(Lengths::parse_histogram(field, &text).with_context(|| format!("in histogram `{path}`"))?)
            }
            None => Ok(Lengths::parse(field, t)?),
        },
    }
}

/// The simulator's configuration from the flags (the rate is set per run).
pub fn config(args: &SimulateArgs, sc: &llm_ledger_core::Scenario) -> Result<SimConfig> {
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
            let text = inputs::read_text(Path::new(path), "trace")?;
            Arrivals::Trace(parse_trace_csv(&text).with_context(|| format!("in trace `{path}`"))?.into())
        }
        other => return Err(Error::unknown("arrivals", other, ["poisson", "gamma", "closed", "trace"]).into()),
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
    let serving = ServingRequest { reserve: args.reserve.reserve.clone(), ..Default::default() }.resolve(sc)?;
    let max_batched_tokens = u("max_batched_tokens", &args.max_batched_tokens, d.max_batched_tokens)?;
    let ms = |field: &str, v: &Option<String>| -> Result<Option<f64>> {
        Ok(v.as_deref()
            .map(|s| TPOT_MS.parse(s).map_err(|e| e.map_field(|_| field.to_string())))
            .transpose()?
            .map(|ms| ms / 1e3))
    };
    Ok(SimConfig {
        arrivals,
        requests: u("requests", &args.requests, d.requests)?,
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
    })
}

fn with_rate(cfg: &SimConfig, rate: f64) -> SimConfig {
    let arrivals = match &cfg.arrivals {
        Arrivals::Poisson { .. } => Arrivals::Poisson { rate_per_s: rate },
        Arrivals::Gamma { cv, .. } => Arrivals::Gamma { rate_per_s: rate, cv: *cv },
        other => other.clone(),
    };
    SimConfig { arrivals, ..cfg.clone() }
}

/// The disaggregated deployment of `--disagg X:Y` and `--kv-link`, if asked for.
pub fn disagg(args: &SimulateArgs, sc: &llm_ledger_core::Scenario) -> Result<Option<Disagg>> {
    let Some(split) = &args.disagg else {
        if args.kv_link.is_some() {
            return Err(Error::invalid("kv_link", "given", "it applies only with --disagg X:Y").into());
        }
        return Ok(None);
    };
    Ok(Some(Disagg::of_inputs(split, args.kv_link.as_deref(), sc)?))
}

/// One run writing every step to the CSV file `path` as it goes.
fn traced(sc: &llm_ledger_core::Scenario, cfg: &SimConfig, path: &str) -> Result<Simulation> {
    let file = std::fs::File::create(path).with_context(|| format!("cannot write trace `{path}`"))?;
    let mut w = csv::Writer::from_writer(std::io::BufWriter::new(file));
    let mut failed: Option<csv::Error> = None;
    let sim = simulate(sc, cfg, |r: &StepRecord| {
        if failed.is_none() {
            failed = w.serialize(r).err();
        }
    })?;
    if let Some(e) = failed {
        return Err(anyhow::Error::new(e).context(format!("cannot write trace `{path}`")));
    }
    w.flush().with_context(|| format!("cannot write trace `{path}`"))?;
    Ok(sim)
}

/// Run the simulation(s) and render the report.
pub fn run(args: &SimulateArgs) -> Result<String> {
    let format: Format = args.output_format.format.0;
    let sc = super::scenario(&args.scenario(), "simulate")?;
    let cfg = config(args, &sc)?;
    let rates = match (&args.rate, cfg.arrivals.rate_per_s()) {
        (Some(r), Some(_)) => parse_rates(r)?,
        (None, Some(_)) => vec![10.0],
        _ => vec![f64::NAN],
    };
    let sweep = rates.len() > 1;
    let disagg = disagg(args, &sc)?;
    // With --disagg every rate runs twice: disaggregated and aggregated.
    let runs_per_rate = if disagg.is_some() { 2 } else { 1 };
    let total = cfg.requests.saturating_mul(rates.len() as u64 * runs_per_rate);
    if sweep && total > MAX_SWEEP_REQUESTS {
        return Err(Error::invalid(
            "requests",
            format!(
                "{} requests at each of {} rates{}",
                cfg.requests,
                rates.len(),
                if disagg.is_some() { ", run disaggregated and aggregated" } else { "" }
            ),
            format!("at most {MAX_SWEEP_REQUESTS} requests in all"),
        )
        .into());
    }
    let cfg = if rates.len() == 1 && !rates[0].is_nan() { with_rate(&cfg, rates[0]) } else { cfg };
    if sweep {
        for (flag, given) in [("trace_out", args.trace_out.is_some()), ("plot_timeline", args.plot_timeline.is_some())]
        {
            if given {
                return Err(Error::invalid(flag, "given with a sweep of rates", "one rate").into());
            }
        }
    }
    if disagg.is_some() && args.trace_out.is_some() {
        return Err(Error::invalid("trace_out", "given with --disagg", "a run of one instance").into());
    }
    let runs: Vec<Simulation> = match &args.trace_out {
        Some(path) => vec![traced(&sc, &cfg, path)?],
        None => {
            use rayon::prelude::*;
            // One run per rate (and per deployment), in parallel; each is deterministic, so the
            // order of work does not change a number.
            let deployments: Vec<Deployment> = match &disagg {
                None => vec![Deployment::SINGLE],
                Some(d) => {
                    let d = Deployment::Disaggregated(d.clone());
                    vec![d.aggregated_equivalent(), d]
                }
            };
            let jobs: Vec<(f64, &Deployment)> =
                deployments.iter().flat_map(|d| rates.iter().map(move |&r| (r, d))).collect();
            jobs.par_iter()
                .map(|&(rate, d)| {
                    let c = if rate.is_nan() { cfg.clone() } else { with_rate(&cfg, rate) };
                    simulate_deployment(&sc, &c, d, |_| {})
                })
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    // With --disagg the runs are the aggregated ones, then the disaggregated ones.
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
        None => SimulateReport::new(&sc, &cfg, summaries, sweep),
        Some(d) => SimulateReport::disaggregated(
            &sc,
            &cfg,
            d,
            summaries,
            aggregated.iter().map(|r| r.summary.clone()).collect(),
            sweep,
        ),
    };
    let title =
        // Model and GPU: the ledger title's phase and batch are not a serving run's.
        Some(llm_ledger_report::plot::title(&report.inputs).split(" · ").take(1).collect::<Vec<_>>().join(" · "));
    if let Some(path) = &args.plot {
        let chart = if sweep {
            ServingChart::throughput_latency(&report.points.clone().unwrap_or_default(), title.clone())
        } else {
            ServingChart::latency_cdfs(&runs[0], title.clone())
        };
        inputs::write_svg(path, &chart.svg(PlotSize::default())?)?;
    }
    if let Some(path) = &args.plot_timeline {
        inputs::write_svg(path, &ServingChart::timeline(&runs[0].series, title).svg(PlotSize::default())?)?;
    }
    Ok(report.render(format)?)
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
        assert!(parse_rates("-2").unwrap_err().to_string().contains("above 0"));
        assert!(parse_rates("1..100000").unwrap_err().to_string().contains("at most 1000"));
    }
}
