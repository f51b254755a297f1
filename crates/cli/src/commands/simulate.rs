//! `llm-ledger simulate`: flags and files into a [`SimConfig`], one run per rate, the report and
//! the plots. The simulation itself is the core's ([`llm_ledger_core::simulate`]).

use crate::cli::SimulateArgs;
use crate::inputs;
use anyhow::{Context, Result};
use llm_ledger_core::simulate::{simulate, Deployment, Disagg, SimConfig, Simulation, StepRecord};
use llm_ledger_core::Error;
use llm_ledger_report::plot::serving::ServingChart;
use llm_ledger_report::plot::PlotSize;
use llm_ledger_report::simulate::SimulateReport;
use llm_ledger_report::{Format, Report};

use llm_ledger_files::simulate::with_rate;

/// The simulator's configuration from the flags (the rate is set per run): the shared resolver
/// of the text inputs, [`llm_ledger_files::simulate::config`].
pub fn config(args: &SimulateArgs, sc: &llm_ledger_core::Scenario) -> Result<SimConfig> {
    llm_ledger_files::simulate::config(&args.sim(), sc)
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
    let rates = llm_ledger_files::simulate::rates(args.rate.as_deref(), &cfg)?;
    let sweep = rates.len() > 1;
    let disagg = disagg(args, &sc)?;
    // With --disagg every rate runs twice: disaggregated and aggregated.
    if sweep && disagg.is_some() {
        llm_ledger_files::simulate::check_sweep_requests(&cfg, rates.len(), 2, ", run disaggregated and aggregated")?;
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
            let deployments: Vec<Deployment> = match &disagg {
                None => vec![Deployment::SINGLE],
                Some(d) => {
                    let d = Deployment::Disaggregated(d.clone());
                    vec![d.aggregated_equivalent(), d]
                }
            };
            llm_ledger_files::simulate::run_deployments(&sc, &cfg, &rates, &deployments)?
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
    let title = llm_ledger_files::simulate::chart_title(&report.inputs);
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
