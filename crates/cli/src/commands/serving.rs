//! Shared by the economics commands.

use crate::cli::ScenarioArgs;
use anyhow::Result;
use llm_ledger_core::serving::step_shape_refused;

/// Refuse the flags that describe a step's contexts in a command that builds its own from
/// `--prompt`/`--output` (latency, cost).
pub fn no_context_flags(args: &ScenarioArgs, command: &str) -> Result<()> {
    let given = [
        ("ctx", args.ctx.is_some()),
        ("contexts", args.contexts.is_some()),
        ("histogram", args.histogram.is_some()),
        ("phase", args.phase.is_some()),
    ];
    match given.iter().find(|(_, g)| *g) {
        Some((flag, _)) => Err(step_shape_refused(flag, command).into()),
        None => Ok(()),
    }
}
