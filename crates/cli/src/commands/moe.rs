//! `llm-ledger moe`: the union problem over a batch range, for a MoE model or for E and k alone.

use crate::cli::MoeArgs;
use crate::inputs;
use anyhow::{bail, Result};
use llm_ledger_core::limits::{MAX_BATCH, MAX_EXPERTS};
use llm_ledger_core::moe::{expert_step, moe_shape, routing_probabilities, union_point};
use llm_ledger_core::scenario::parse_u64;
use llm_ledger_core::sweep::Axis;
use llm_ledger_core::{Contexts, Error, Phase};
use llm_ledger_report::moe::{MoePoint, MoeReport};
use llm_ledger_report::{Format, Report};

/// Most batch points one `moe` table computes (each builds a ledger).
const MAX_POINTS: u64 = 100_000;

/// Render the MoE report the flags describe.
pub fn run(args: &MoeArgs) -> Result<String> {
    let format: Format = args.output.format.parse()?;
    let batches = Axis::parse("batch", args.scenario.batch.as_deref().unwrap_or("1,2,4,8,16,32,64,128"), 1, MAX_BATCH)?;
    if batches.len() > MAX_POINTS {
        bail!(Error::invalid("batch", format!("{} points", batches.len()), format!("at most {MAX_POINTS} points")));
    }
    // The rest of the scenario (phase, ctx, routing, the model if any) at batch 1.
    let mut flags = args.scenario.clone();
    flags.batch = None;
    let standalone = args.experts.is_some() || args.top_k.is_some();
    if standalone && args.scenario.model.is_some() {
        bail!("invalid `experts`: given together with --model (a model brings its own experts and top-k)");
    }
    let base = inputs::scenario(&flags)?;
    let (experts, top_k) = if standalone {
        let field = |name: &str, v: &Option<String>| -> Result<u64> {
            let v = v
                .as_deref()
                .ok_or_else(|| Error::MissingField { field: name.into(), context: "moe without --model".into() })?;
            let n = parse_u64(name, v)?;
            if !(1..=MAX_EXPERTS).contains(&n) {
                bail!(Error::invalid(name, n, format!("an integer in 1..={MAX_EXPERTS}")));
            }
            Ok(n)
        };
        let (e, k) = (field("experts", &args.experts)?, field("top_k", &args.top_k)?);
        routing_probabilities(e, k, &base.routing)?;
        (e, k)
    } else {
        moe_shape(&base.model).ok_or_else(|| {
            anyhow::anyhow!(
                "unsupported model `{}` for moe: it has no mixture-of-experts layers; pass a MoE model (mixtral-8x7b, qwen3-30b-a3b, deepseek-v3, gpt-oss-20b …) or --experts and --top-k",
                base.model.name
            )
        })?
    };
    let ctx = base.workload.contexts.max_tokens();
    let mut points = Vec::with_capacity(batches.len() as usize);
    for batch in batches.iter() {
        let mut sc = base.clone();
        sc.workload.contexts = Contexts::uniform(batch, ctx)?;
        let tokens = sc.workload.step_tokens();
        let union = union_point(experts, top_k, tokens, &base.routing)?;
        let model = if standalone { None } else { expert_step(&sc) };
        points.push(MoePoint { batch, union, model });
    }
    let report = MoeReport {
        experts,
        top_k,
        routing: base.routing.describe(),
        model: (!standalone).then(|| base.model.name.clone()),
        gpu: (!standalone).then(|| base.gpu.name.clone()),
        phase: base.workload.phase.to_string(),
        ctx: if base.workload.phase == Phase::Prefill { ctx } else { 0 },
        points,
    };
    Ok(report.render(format))
}
