//! `llm-ledger moe`: the union problem over a batch range, for a MoE model or for E and k alone.

use crate::cli::MoeArgs;
use anyhow::Result;
use llm_ledger_app::moe::{MoeRequest, MAX_POINTS};
use llm_ledger_report::{Format, Report};

/// Render the MoE report the flags describe ([`MoeRequest::run`]).
pub fn run(args: &MoeArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    // The rest of the scenario (phase, ctx, routing, the model if any) at batch 1.
    let base = super::scenario(&args.base(), "moe")?;
    let req = MoeRequest { batch: args.shape.batch.clone(), experts: args.experts.clone(), top_k: args.top_k.clone() };
    Ok(req.run(&base, args.setup.model.is_some(), MAX_POINTS)?.render(format)?)
}
