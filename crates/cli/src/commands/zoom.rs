//! `llm-ledger zoom`.

use crate::cli::ZoomArgs;
use anyhow::Result;
use llm_ledger_core::ZoomTree;
use llm_ledger_report::{Format, Report, ZoomReport};

/// Render the node at `--at` of the scenario's zoom tree.
pub fn run(args: &ZoomArgs) -> Result<String> {
    let format: Format = args.format.0;
    let sc = super::scenario(&args.scenario(), "zoom")?;
    let tree = ZoomTree::build(&sc);
    let view = tree.node(&args.at)?;
    Ok(ZoomReport::new(&sc, &tree, &view).render(format)?)
}
