//! `llm-ledger ledger`.

use crate::cli::LedgerArgs;
use crate::inputs;
use anyhow::Result;
use llm_ledger_core::Ledger;
use llm_ledger_report::{Format, LedgerReport, Report};

/// Render the ledger of the scenario the flags describe.
pub fn run(args: &LedgerArgs) -> Result<String> {
    let format: Format = args.format.parse()?;
    let sc = inputs::scenario(&args.scenario)?;
    let ledger = Ledger::build(&sc);
    Ok(LedgerReport::new(&sc, &ledger).render(format))
}
