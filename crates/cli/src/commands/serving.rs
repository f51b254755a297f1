//! Shared by the economics commands.

use crate::cli::ScenarioArgs;
use anyhow::{bail, Result};
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

/// The parallel-deployment flags given, by name.
pub fn parallel_flags(args: &ScenarioArgs) -> Vec<&'static str> {
    [
        ("tp", args.tp.is_some()),
        ("pp", args.pp.is_some()),
        ("ep", args.ep.is_some()),
        ("dp", args.dp.is_some()),
        ("micro-batches", args.micro_batches.is_some()),
        ("interconnect", args.interconnect.is_some()),
        ("link-efficiency", args.link_efficiency.is_some()),
    ]
    .into_iter()
    .filter_map(|(f, given)| given.then_some(f))
    .collect()
}

/// Refuse the parallel flags in a command that models one GPU (kv, levers, advise).
pub fn one_gpu_only(args: &ScenarioArgs, command: &str) -> Result<()> {
    if let Some(flag) = parallel_flags(args).first() {
        bail!("invalid `{flag}`: `{command}` models one GPU; deployments over several are costed by ledger, sweep, latency, cost and plan");
    }
    Ok(())
}
