//! `llm-ledger models` and `llm-ledger gpus`.

use crate::cli::ListArgs;
use crate::inputs;
use anyhow::Result;
use llm_ledger_report::catalog::{GpuList, ModelList};
use llm_ledger_report::{Format, Report};

/// The model presets.
pub fn models(args: &ListArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    let c = inputs::catalog(args.gpu_file.as_deref(), args.preset_file.as_deref())?;
    Ok(ModelList::new(&c).render(format)?)
}

/// The GPU catalogue.
pub fn gpus(args: &ListArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    let c = inputs::catalog(args.gpu_file.as_deref(), args.preset_file.as_deref())?;
    Ok(GpuList::new(&c).render(format)?)
}
