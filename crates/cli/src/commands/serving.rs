//! Shared by the economics commands.

use crate::cli::ScenarioArgs;
use anyhow::{bail, Result};

/// Refuse the flags that describe a step's contexts in a command that builds its own from
/// `--prompt`/`--output` (latency, cost).
pub fn no_context_flags(args: &ScenarioArgs, command: &str) -> Result<()> {
    let given = [
        ("ctx", args.ctx.is_some()),
        ("contexts", args.contexts.is_some()),
        ("histogram", args.histogram.is_some()),
        ("phase", args.phase.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
        bail!("invalid `{flag}`: `{command}` builds its steps from --prompt and --output (prefill, then decode with a growing context); use --batch for concurrent requests");
    }
    Ok(())
}
