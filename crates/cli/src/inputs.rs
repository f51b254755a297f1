//! The CLI's I/O edge: the shared file readers of `llm_ledger_files` (also the Python package's),
//! the scenario flags gathered for them, and the plot files the CLI writes.

use crate::cli::ScenarioArgs;
use anyhow::{Context, Result};
use llm_ledger_core::Scenario;
use llm_ledger_files::FileInputs;
pub use llm_ledger_files::{catalog, gpu, looks_like_path, read_text};

/// Resolve the scenario flags, reading any files they name.
pub fn scenario(args: &ScenarioArgs) -> Result<Scenario> {
    let files = FileInputs {
        revision: args.revision.clone(),
        gpu_file: args.gpu_file.clone(),
        preset_file: args.preset_file.clone(),
        profile: args.profile.clone(),
        histogram: args.histogram.clone(),
        expert_loads: args.expert_loads.clone(),
    };
    llm_ledger_files::scenario(args.request(), &files)
}

/// Write a plot as a standalone SVG file (the CLI's one output file besides stdout).
pub fn write_svg(path: &str, inline_svg: &str) -> Result<()> {
    std::fs::write(path, llm_ledger_report::plot::standalone(inline_svg))
        .with_context(|| format!("cannot write plot `{path}`"))
}
