//! `llm-ledger zoom`.

use crate::cli::{ScenarioArgs, ZoomArgs};
use crate::inputs;
use anyhow::{bail, Result};
use llm_ledger_core::zoom::{weight_flip, FlipSide, NodeView};
use llm_ledger_core::{Scenario, ZoomTree};
use llm_ledger_report::human;
use llm_ledger_report::plot::Dataflow;
use llm_ledger_report::{Format, Report, ZoomReport};

/// Render the node at `--at` of the scenario's zoom tree — or, in a table or Markdown, where this
/// scenario has no node there, the deepest level of that path it has, with a `note:` on stderr
/// saying why ([`ZoomTree::deepest`], the explorer page's rule); JSON and CSV, read by programs,
/// name the path's error instead (as the explorer's `/api/zoom` does). With `--plot`, also write
/// the dataflow diagram of the layer or block shown.
pub fn run(args: &ZoomArgs) -> Result<String> {
    let format: Format = args.format.0;
    let scenario_args = args.scenario();
    inputs::check_outputs(&[("--plot", "plot", args.plot.as_ref())], &inputs::input_files(&scenario_args))?;
    let sc = super::scenario(&scenario_args, "zoom")?;
    let tree = ZoomTree::build(&sc);
    let (view, notice) = match format {
        Format::Table | Format::Md => tree.deepest(&sc, &args.at),
        Format::Json | Format::Csv => (tree.node(&args.at)?, None),
    };
    if let Some(notice) = notice {
        eprintln!("note: {}", llm_ledger_core::error::escape_controls(&notice));
    }
    if let Some(path) = &args.plot {
        let Some(flow) = Dataflow::of_node(&view, llm_ledger_report::zoom::clock_word(&sc)) else {
            bail!(
                "invalid `--plot`: `--at {}` is not a layer or a block (the dataflow diagram draws layer.N, layer.N.attn or layer.N.mlp)",
                view.path
            );
        };
        inputs::write_svg(path, &flow.svg(None))?;
    }
    let mut out = ZoomReport::new(&sc, &tree, &view).render(format)?;
    if matches!(format, Format::Table | Format::Md) {
        if let Some(line) = int4_flip(&scenario_args, &sc, &view)? {
            // Wrapped as the table's footer lines are, where the table is fitted to a width.
            let lines = match llm_ledger_report::render::table_width() {
                Some(w) => llm_ledger_report::render::wrap(&line, w),
                None => vec![line],
            };
            for l in lines {
                out.push_str(&l);
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// At a GEMM whose weights are not already INT4, the decode batch where INT4 weights would make
/// it compute-bound while the scenario's own keep it memory-bound ([`weight_flip`]: the first
/// power of two, each side by the scenario's clock), as one line; `None` where no batch flips it.
fn int4_flip(args: &ScenarioArgs, sc: &Scenario, view: &NodeView<'_>) -> Result<Option<String>> {
    let Some(node) = view.op() else { return Ok(None) };
    let layer = view.path.strip_prefix("layer.").and_then(|p| p.split('.').next()).and_then(|n| n.parse().ok());
    let (Some(layer), Some(_)) = (layer, node.op.gemm) else { return Ok(None) };
    let int4 = super::scenario(&ScenarioArgs { weights: Some("int4".into()), ..args.clone() }, "zoom")?;
    if int4.weights == sc.weights {
        return Ok(None);
    }
    let Some(f) = weight_flip(sc, &int4, layer, node.op.kind) else { return Ok(None) };
    let side = |s: &FlipSide, weights: &str| {
        let t = &s.timing;
        let cmp = if t.compute_s > t.memory_s { ">" } else { "≤" };
        format!(
            "{}-bound with {weights} weights (math {} {cmp} memory {}, {} FLOP/B)",
            s.bound.name(),
            human::seconds(t.compute_s),
            human::seconds(t.memory_s),
            human::intensity(s.intensity)
        )
    };
    Ok(Some(format!(
        "flip: at decode batch {} ({} cached tokens) this operator is {} and {}: see it with --phase decode --batch {} --weights int4",
        human::count(f.batch),
        human::count(f.tokens),
        side(&f.from, &sc.weights.mlp.name()),
        side(&f.to, "int4"),
        f.batch
    )))
}
