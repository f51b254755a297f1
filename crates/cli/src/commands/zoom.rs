//! `llm-ledger zoom`.

use crate::cli::{ScenarioArgs, ZoomArgs};
use crate::inputs;
use anyhow::{bail, Result};
use llm_ledger_app::zoom::{int4_flip, ZoomRequest};
use llm_ledger_core::zoom::{Flip, FlipSide};
use llm_ledger_core::{Scenario, ZoomTree};
use llm_ledger_report::human;
use llm_ledger_report::plot::Dataflow;
use llm_ledger_report::{Format, Report, ZoomReport};

/// Render the node at `--at` of the scenario's zoom tree — or, in a table or Markdown, where this
/// scenario has no node there, the deepest level of that path it has, with a `note:` on stderr
/// saying why ([`ZoomRequest::view`], the explorer page's rule); JSON and CSV, read by programs,
/// name the path's error instead (as the explorer's `/api/zoom` does). With `--plot`, also write
/// the dataflow diagram of the layer or block shown.
pub fn run(args: &ZoomArgs) -> Result<String> {
    let format: Format = args.format.0;
    let scenario_args = args.scenario();
    inputs::check_outputs(&[("--plot", "plot", args.plot.as_ref())], &inputs::input_files(&scenario_args))?;
    let sc = super::scenario(&scenario_args, "zoom")?;
    let tree = ZoomTree::build(&sc);
    let req = ZoomRequest { at: Some(args.at.clone()) };
    let (view, notice) = req.view(&tree, &sc, matches!(format, Format::Table | Format::Md))?;
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
        let int4 = || super::scenario(&ScenarioArgs { weights: Some("int4".into()), ..scenario_args.clone() }, "zoom");
        if let Some(f) = int4_flip(&sc, &view, int4)? {
            // Wrapped as the table's footer lines are, where the table is fitted to a width.
            let line = flip_line(&sc, &f);
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

/// The INT4 flip ([`int4_flip`]) as one line, with the flags that show it.
fn flip_line(sc: &Scenario, f: &Flip) -> String {
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
    format!(
        "flip: at decode batch {} ({} cached tokens) this operator is {} and {}: see it with --phase decode --batch {} --weights int4",
        human::count(f.batch),
        human::count(f.tokens),
        side(&f.from, &sc.weights.mlp.name()),
        side(&f.to, "int4"),
        f.batch
    )
}
