//! Shared by the scenario commands.

use crate::cli::ScenarioArgs;
use crate::inputs;
use anyhow::Result;
use llm_ledger_core::{Error, Scenario};

/// Resolve the scenario of a command that takes one GPU, one weight and one KV precision; a list
/// (`--gpu h100-sxm,h200`) points to `sweep`, which compares them as series.
pub fn scenario(args: &ScenarioArgs, command: &str) -> Result<Scenario> {
    let lists = [("gpu", &args.gpu), ("weights", &args.weights), ("kv", &args.kv)];
    for (field, value) in lists {
        let Some(v) = value.as_deref() else { continue };
        if v.contains(',') && !(field == "gpu" && inputs::looks_like_path(v)) {
            return Err(Error::invalid(
                field,
                format!("{v:?}"),
                format!("one value for `{command}`; `llm-ledger sweep` compares several as series"),
            )
            .into());
        }
    }
    inputs::scenario(args)
}
