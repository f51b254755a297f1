//! `llm-ledger moe`: the union problem over a batch range, for a MoE model or for E and k alone.

use crate::cli::MoeArgs;
use anyhow::Result;
use llm_ledger_report::moe::{MoeReport, MoeRequest, MAX_POINTS};
use llm_ledger_report::{Format, Report};

/// Render the MoE report the flags describe.
pub fn run(args: &MoeArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    // The rest of the scenario (phase, ctx, routing, the model if any) at batch 1.
    let base = super::scenario(&args.base(), "moe")?;
    let req = MoeRequest {
        batch: args.shape.batch.as_deref(),
        experts: args.experts.as_deref(),
        top_k: args.top_k.as_deref(),
        model_given: args.setup.model.is_some(),
    };
    Ok(MoeReport::build(&base, &req, MAX_POINTS)?.render(format)?)
}
