//! `llm-ledger simulate`: flags and files into a [`SimConfig`], one run per rate, the report and
//! the plots. The simulation itself is the core's ([`llm_ledger_core::simulate`]).

use crate::cli::SimulateArgs;
use crate::inputs;
use anyhow::{Context, Result};
use llm_ledger_core::simulate::{simulate, SimConfig, Simulation, StepRecord};
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
    let cfg = if rates.len() == 1 && !rates[0].is_nan() { with_rate(&cfg, rates[0]) } else { cfg };
    if sweep {
        for (flag, given) in [("trace_out", args.trace_out.is_some()), ("plot_timeline", args.plot_timeline.is_some())]
        {
            if given {
                return Err(Error::invalid(flag, "given with a sweep of rates", "one rate").into());
            }
        }
    }
    let runs: Vec<Simulation> = match &args.trace_out {
        Some(path) => vec![traced(&sc, &cfg, path)?],
        None => llm_ledger_files::simulate::run_rates(&sc, &cfg, &rates)?,
    };
    let report = SimulateReport::new(&sc, &cfg, runs.iter().map(|r| r.summary.clone()).collect(), sweep);
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
