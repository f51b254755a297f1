//! `llm-ledger simulate`: flags and files into a [`SimConfig`], one run per rate, the report and
//! the plots. The simulation itself is the core's ([`llm_ledger_core::simulate`]).

use crate::cli::SimulateArgs;
use crate::inputs;
use anyhow::{Context, Result};
use llm_ledger_core::simulate::{simulate_within, Budget, Deployment, SimConfig, Simulation, StepRecord};
use llm_ledger_core::Error;
use llm_ledger_report::plot::serving::ServingChart;
use llm_ledger_report::plot::PlotSize;
use llm_ledger_report::{Format, Report};

/// The simulator's configuration from the flags (the rate is set per run): the shared resolver
/// of the text inputs, [`llm_ledger_files::simulate::config`].
pub fn config(args: &SimulateArgs, sc: &llm_ledger_core::Scenario) -> Result<SimConfig> {
    llm_ledger_files::simulate::config(&args.sim(), sc)
}

/// One run writing every step to the CSV file `path` as it goes, under `budget`.
fn traced(sc: &llm_ledger_core::Scenario, cfg: &SimConfig, budget: &Budget, path: &str) -> Result<Simulation> {
    let file = std::fs::File::create(path).with_context(|| format!("cannot write trace `{path}`"))?;
    let mut w = csv::Writer::from_writer(std::io::BufWriter::new(file));
    let mut failed: Option<csv::Error> = None;
    let sim = simulate_within(sc, cfg, &Deployment::SINGLE, budget, |r: &StepRecord| {
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
    if args.plot_timeline.is_some()
        && llm_ledger_files::simulate::rates(args.rate.as_deref(), &config(args, &sc)?)?.len() > 1
    {
        return Err(Error::invalid("plot_timeline", "given with a sweep of rates", "one rate").into());
    }
    let trace =
        |cfg: &SimConfig, budget: &Budget| traced(&sc, cfg, budget, args.trace_out.as_deref().unwrap_or_default());
    let single: Option<llm_ledger_files::simulate::SingleRun<'_>> =
        args.trace_out.as_ref().map(|_| ("trace_out", &trace as &dyn Fn(&SimConfig, &Budget) -> Result<Simulation>));
    let sim = llm_ledger_files::simulate::run(&sc, &args.sim(), single, Some(crate::interrupt::flag()))?;
    if let Some(path) = &args.plot {
        inputs::write_svg(path, &sim.chart().svg(PlotSize::default())?)?;
    }
    if let Some(path) = &args.plot_timeline {
        let title = llm_ledger_files::simulate::chart_title(&sim.report.inputs);
        inputs::write_svg(path, &ServingChart::timeline(&sim.runs[0].series, title).svg(PlotSize::default())?)?;
    }
    Ok(sim.report.render(format)?)
}
