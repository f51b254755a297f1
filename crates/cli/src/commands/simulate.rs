//! `llm-ledger simulate`: flags and files into a [`llm_ledger_core::simulate::SimConfig`], one run per rate, the
//! report and the plots. The simulation itself is the core's ([`llm_ledger_core::simulate`]).

use crate::cli::SimulateArgs;
use crate::inputs;
use anyhow::Result;
use llm_ledger_core::simulate::StepRecord;
use llm_ledger_core::Error;
use llm_ledger_report::plot::serving::ServingChart;
use llm_ledger_report::plot::PlotSize;
use llm_ledger_report::{Format, Report};
use std::path::{Path, PathBuf};

/// The files `simulate`'s inputs name, read from disk.
pub const FILES: llm_ledger_app::Files<'static> = llm_ledger_app::Files::Read(&llm_ledger_files::read_text);

/// The step trace of `--trace-out`: every step of the run as a CSV row, written as the run takes
/// it into a temporary file renamed over `path` only when the run finished ([`TraceFile::commit`]),
/// so a failed run leaves the old file as it was.
struct TraceFile {
    path: String,
    writer: csv::Writer<std::io::BufWriter<llm_ledger_files::output::OutputFile>>,
    failed: Option<csv::Error>,
}

impl TraceFile {
    fn create(path: &str) -> Result<TraceFile> {
        let file = llm_ledger_files::output::OutputFile::create(Path::new(path), "trace")?;
        Ok(TraceFile {
            path: path.into(),
            writer: csv::Writer::from_writer(std::io::BufWriter::new(file)),
            failed: None,
        })
    }

    /// One step (after a write error, nothing more: the error is reported at the end).
    fn write(&mut self, r: &StepRecord) {
        if self.failed.is_none() {
            self.failed = self.writer.serialize(r).err();
        }
    }

    /// The finished trace renamed over its path.
    fn commit(self) -> Result<()> {
        let file = match (self.failed, self.writer.into_inner()) {
            (None, Ok(buffered)) => buffered.into_inner().map_err(|e| e.into_error()),
            (Some(e), _) => Err(std::io::Error::other(e.to_string())),
            (None, Err(e)) => Err(std::io::Error::other(e.to_string())),
        };
        match file {
            Ok(file) => Ok(file.commit()?),
            Err(error) => {
                let what =
                    llm_ledger_files::output::WriteFailed { what: "trace".into(), path: self.path.into(), error };
                Err(what.into())
            }
        }
    }
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
    let req = args.sim();
    // The step budget first, then the inputs, resolved once for every use below.
    let budget = llm_ledger_app::simulate::budget(req.max_steps.as_deref(), Some(crate::interrupt::flag()))?;
    let resolved = req.resolve(&sc, FILES)?;
    if args.plot_timeline.is_some() && resolved.sweep() {
        return Err(Error::invalid("plot_timeline", "given with a sweep of rates", "one rate").into());
    }
    if args.trace_out.is_some() {
        resolved.refuse_sink("trace_out")?;
    }
    let mut trace = args.trace_out.as_deref().map(TraceFile::create).transpose()?;
    let mut write = |r: &StepRecord| {
        if let Some(t) = trace.as_mut() {
            t.write(r);
        }
    };
    let sink: Option<llm_ledger_app::simulate::StepSink<'_>> =
        args.trace_out.as_ref().map(|_| ("trace_out", &mut write as &mut dyn FnMut(&StepRecord)));
    let sim = crate::progress::steps(&budget, || resolved.run(&sc, &budget, sink))?;
    if let Some(t) = trace {
        t.commit()?;
    }
    if let Some(path) = &args.plot {
        inputs::write_svg(path, &sim.chart().svg(PlotSize::default())?)?;
    }
    if let Some(path) = &args.plot_timeline {
        let title = llm_ledger_app::simulate::chart_title(&sim.report.inputs);
        inputs::write_svg(path, &ServingChart::timeline(&sim.runs[0].series, title).svg(PlotSize::default())?)?;
    }
    Ok(sim.report.render(format)?)
}
