//! `llm-ledger ledger`.

use crate::cli::LedgerArgs;
use crate::inputs;
use anyhow::Result;
use llm_ledger_core::Ledger;
use llm_ledger_report::plot::{PlotSize, Roofline};
use llm_ledger_report::{Format, LedgerReport, Report};

/// Render the ledger of the scenario the flags describe; with `--plot`, also write its roofline.
pub fn run(args: &LedgerArgs) -> Result<String> {
    let format: Format = args.format.0;
    let scenario_args = args.scenario();
    inputs::check_outputs(&[("--plot", "plot", args.plot.as_ref())], &inputs::input_files(&scenario_args))?;
    let sc = super::scenario(&scenario_args, "ledger")?;
    let report = LedgerReport::new(&sc, &Ledger::build(&sc));
    if let Some(path) = &args.plot {
        let mut chart = Roofline::from_report(&report, &sc.gpu);
        chart.title = Some(llm_ledger_report::plot::title(&report.inputs));
        inputs::write_svg(path, &chart.svg(PlotSize::default())?)?;
    }
    Ok(report.render(format)?)
}
