//! The CLI's I/O edge: the shared file readers of `llm_ledger_files` (also the Python package's),
//! the scenario flags gathered for them, and the output files the CLI writes (through
//! `llm_ledger_files::output`: checked before the run, written whole or not at all).

use crate::cli::ScenarioArgs;
use anyhow::Result;
use llm_ledger_core::Scenario;
use llm_ledger_files::FileInputs;
pub use llm_ledger_files::{catalog, gpu, looks_like_path, read_text};
use std::path::{Path, PathBuf};

/// The file flags of a scenario, for the shared readers.
fn file_inputs(args: &ScenarioArgs) -> FileInputs {
    FileInputs {
        revision: args.revision.clone(),
        gpu_file: args.gpu_file.clone(),
        preset_file: args.preset_file.clone(),
        profile: args.profile.clone(),
        histogram: args.histogram.clone(),
        expert_loads: args.expert_loads.clone(),
    }
}

/// Resolve the scenario flags, reading any files they name.
pub fn scenario(args: &ScenarioArgs) -> Result<Scenario> {
    llm_ledger_files::scenario(args.request(), &file_inputs(args))
}

/// The files the scenario flags read (an output must not be one of them).
pub fn input_files(args: &ScenarioArgs) -> Vec<PathBuf> {
    llm_ledger_files::input_paths(args.model.as_deref(), args.gpu.as_deref(), &file_inputs(args))
}

/// Check a run's output flags, `(flag, what, path)` with the path when given, against its input
/// files before the run starts (see `llm_ledger_files::output::check_outputs`).
pub fn check_outputs(outputs: &[(&str, &str, Option<&String>)], inputs: &[PathBuf]) -> Result<()> {
    let given: Vec<(&str, &str, &str)> =
        outputs.iter().filter_map(|(flag, what, p)| p.map(|p| (*flag, *what, p.as_str()))).collect();
    llm_ledger_files::output::check_outputs(&given, inputs)
}

/// Write a plot as a standalone SVG file, whole or not at all.
pub fn write_svg(path: &str, inline_svg: &str) -> Result<()> {
    llm_ledger_files::output::write(Path::new(path), "plot", llm_ledger_report::plot::standalone(inline_svg).as_bytes())
}
