//! `llm-ledger zoom`.

use crate::cli::ZoomArgs;
use crate::inputs;
use anyhow::{bail, Result};
use llm_ledger_core::ZoomTree;
use llm_ledger_report::plot::Dataflow;
use llm_ledger_report::{Format, Report, ZoomReport};

/// Render the node at `--at` of the scenario's zoom tree — or, in a table or Markdown, where this
/// scenario has no node there, the deepest level of that path it has, with a `note:` on stderr
/// saying why ([`ZoomTree::deepest`], the explorer page's rule); JSON and CSV, read by programs,
/// name the path's error instead (as the explorer's `/api/zoom` does). With `--plot`, also write
/// the dataflow diagram of the layer or block shown.
pub fn run(args: &ZoomArgs) -> Result<String> {
    let format: Format = args.format.0;
    let scenario_args = args.scenario();
    inputs::check_outputs(&[("--plot", "plot", args.plot.as_ref())], &inputs::input_files(&scenario_args))?;
    let sc = super::scenario(&scenario_args, "zoom")?;
    let tree = ZoomTree::build(&sc);
    let (view, notice) = match format {
        Format::Table | Format::Md => tree.deepest(&sc, &args.at),
        Format::Json | Format::Csv => (tree.node(&args.at)?, None),
    };
    if let Some(notice) = notice {
        eprintln!("note: {}", llm_ledger_core::error::escape_controls(&notice));
    }
    if let Some(path) = &args.plot {
        let Some(flow) = Dataflow::of_node(&view, llm_ledger_report::zoom::clock_word(&sc)) else {
            bail!(
                "invalid `--plot`: `--at {}` is not a layer or a block (the dataflow diagram draws layer.N, layer.N.attn or layer.N.mlp)",
                view.path
            );
        };
        inputs::write_svg(path, &flow.svg(None))?;
    }
    Ok(ZoomReport::new(&sc, &tree, &view).render(format)?)
}
