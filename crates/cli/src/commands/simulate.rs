//! `llm-ledger simulate`: flags and files into a [`SimConfig`], one run per rate, the report and
//! the plots. The simulation itself is the core's ([`llm_ledger_core::simulate`]).

use crate::cli::SimulateArgs;
use crate::inputs;
use anyhow::Result;
use llm_ledger_core::simulate::{simulate_within, Budget, Deployment, SimConfig, Simulation, StepRecord};
use llm_ledger_core::Error;
use llm_ledger_report::plot::serving::ServingChart;
use llm_ledger_report::plot::PlotSize;
use llm_ledger_report::{Format, Report};
use std::path::{Path, PathBuf};

/// The files `simulate`'s inputs name, read from disk.
pub const FILES: llm_ledger_app::Files<'static> = llm_ledger_app::Files::Read(&llm_ledger_files::read_text);

/// The simulator's configuration from the flags (the rate is set per run): the shared resolver
/// of the text inputs, [`llm_ledger_app::simulate::config`].
pub fn config(args: &SimulateArgs, sc: &llm_ledger_core::Scenario) -> Result<SimConfig> {
    Ok(llm_ledger_app::simulate::config(&args.sim(), sc, FILES)?)
}

/// One run writing every step to the CSV file `path` as it goes, under `budget`: into a temporary
/// file renamed over `path` only when the run finished, so a failed run leaves the old file as it
/// was.
fn traced(sc: &llm_ledger_core::Scenario, cfg: &SimConfig, budget: &Budget, path: &str) -> Result<Simulation> {
    let file = llm_ledger_files::output::OutputFile::create(Path::new(path), "trace")?;
    let mut w = csv::Writer::from_writer(std::io::BufWriter::new(file));
    let mut failed: Option<csv::Error> = None;
    let sim = simulate_within(sc, cfg, &Deployment::SINGLE, budget, |r: &StepRecord| {
        if failed.is_none() {
            failed = w.serialize(r).err();
        }
    })?;
    let file = match (failed, w.into_inner()) {
        (None, Ok(buffered)) => buffered.into_inner().map_err(|e| e.into_error()),
        (Some(e), _) => Err(std::io::Error::other(e.to_string())),
        (None, Err(e)) => Err(std::io::Error::other(e.to_string())),
    };
    match file {
        Ok(file) => file.commit()?,
        Err(e) => {
            let what = llm_ledger_files::output::WriteFailed { what: "trace".into(), path: path.into(), error: e };
            return Err(what.into());
        }
    }
    Ok(sim)
}

/// The files a simulation reads: the scenario's, the `--trace` and `hist:FILE` lengths.
fn input_files(args: &SimulateArgs) -> Vec<PathBuf> {
    let mut read = inputs::input_files(&args.scenario());
    read.extend(args.trace.iter().map(PathBuf::from));
    let hist = [&args.prompt, &args.output].into_iter().flatten();
    read.extend(hist.filter_map(|l| l.trim().strip_prefix("hist:").map(PathBuf::from)));
    read
}

/// Run the simulation(s) and render the report.
pub fn run(args: &SimulateArgs) -> Result<String> {
    let format: Format = args.output_format.format.0;
    let outputs = [
        ("--trace-out", "trace", args.trace_out.as_ref()),
        ("--plot", "plot", args.plot.as_ref()),
        ("--plot-timeline", "plot", args.plot_timeline.as_ref()),
    ];
    inputs::check_outputs(&outputs, &input_files(args))?;
    let sc = super::scenario(&args.scenario(), "simulate")?;
    if args.plot_timeline.is_some()
        && llm_ledger_app::simulate::rates(args.rate.as_deref(), &config(args, &sc)?)?.len() > 1
    {
        return Err(Error::invalid("plot_timeline", "given with a sweep of rates", "one rate").into());
    }
    let trace =
        |cfg: &SimConfig, budget: &Budget| traced(&sc, cfg, budget, args.trace_out.as_deref().unwrap_or_default());
    let single: Option<llm_ledger_app::simulate::SingleRun<'_>> =
        args.trace_out.as_ref().map(|_| ("trace_out", &trace as &dyn Fn(&SimConfig, &Budget) -> Result<Simulation>));
    let req = args.sim();
    let budget = llm_ledger_app::simulate::budget(req.max_steps.as_deref(), Some(crate::interrupt::flag()))?;
    let sim =
        crate::progress::steps(&budget, || llm_ledger_app::simulate::run_within(&sc, &req, FILES, single, &budget))?;
    if let Some(path) = &args.plot {
        inputs::write_svg(path, &sim.chart().svg(PlotSize::default())?)?;
    }
    if let Some(path) = &args.plot_timeline {
        let title = llm_ledger_app::simulate::chart_title(&sim.report.inputs);
        inputs::write_svg(path, &ServingChart::timeline(&sim.runs[0].series, title).svg(PlotSize::default())?)?;
    }
    Ok(sim.report.render(format)?)
}
