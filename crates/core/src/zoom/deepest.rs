//! The deepest node of a zoom path that a scenario has: a path written for one scenario (an
//! operator FlashAttention fused away, a layer the model lacks, a dense model's MLP operators on
//! an MoE model) shows the deepest level of it that exists here, with a sentence saying why the
//! rest does not — the explorer's and `zoom --at`'s one rule.

use super::{path_steps, NodeDetail, NodeView, ZoomTree};
use crate::scenario::Scenario;

impl ZoomTree {
    /// The node at `at`, or the deepest node on its path that exists here and why the rest does not.
    pub fn deepest(&self, sc: &Scenario, at: &str) -> (NodeView<'_>, Option<String>) {
        let tree = self;
        if let Ok(v) = tree.node(at) {
            return (v, None);
        }
        let steps = path_steps(at);
        // No path deeper than MAX_PATH_STEPS exists: its longest prefix worth trying is that deep.
        for keep in (0..steps.len().min(super::MAX_PATH_STEPS + 1)).rev() {
            let prefix = if keep == 0 { "model".to_string() } else { steps[..keep].join(".") };
            let Ok(view) = tree.node(&prefix) else { continue };
            let missing = steps.get(keep).map(String::as_str).unwrap_or("");
            let why = why_missing(sc, tree, &prefix, &view, missing);
            // A block's path shows the layer with the block marked: list the block's operators.
            let focus = match view.detail {
                NodeDetail::Layer { focus, .. } => focus,
                _ => None,
            };
            let here: Vec<&str> = view
                .children
                .iter()
                .filter(|c| focus.is_none() || c.block == focus)
                .filter_map(|c| c.path.as_deref())
                .map(last_step)
                .collect();
            let listing =
                if here.is_empty() { String::new() } else { format!(" (here it holds {})", short_list(&here)) };
            let notice = format!(
                "`{}` is not part of this scenario: {why}. Showing `{prefix}`, the deepest level of that path that is{listing}.",
                crate::error::echo(at.trim()),
            );
            return (view, Some(notice));
        }
        (tree.node("model").expect("the model node always exists"), None)
    }
}

fn last_step(path: &str) -> &str {
    if path.starts_with("layer.") && path.matches('.').count() == 1 {
        path
    } else {
        path.rsplit('.').next().unwrap_or(path)
    }
}

fn short_list(items: &[&str]) -> String {
    if items.len() > 8 {
        format!("{}, … {} in all", items[..6].join(", "), items.len())
    } else {
        items.join(", ")
    }
}

/// One clause on why `missing` is not below `prefix` (shown as `view`) in this scenario.
fn why_missing(sc: &Scenario, tree: &ZoomTree, prefix: &str, view: &NodeView<'_>, missing: &str) -> String {
    let flash = sc.workload.flash_attention;
    let attn = prefix.ends_with(".attn");
    let mlp = prefix.ends_with(".mlp");
    match missing {
        "scores" | "values" | "softmax" if attn && flash => {
            "FlashAttention is on, so the score and value products and the softmax are fused into one operator, `attention`".into()
        }
        "attention" if attn && !flash => {
            "FlashAttention is off, so attention runs as separate operators (`scores`, `softmax`, `values`) and the score matrix goes through memory".into()
        }
        _ if mlp && sc.model.is_moe() => format!("`{}` is a mixture-of-experts model, whose MLP has other operators", sc.model.name),
        _ if mlp => format!("`{}` has a dense MLP with other operators", sc.model.name),
        m if m.starts_with("layer.") && tree.pipeline.is_some() => format!(
            "the zoom shows one GPU of the busiest pipeline stage, as the ledger does, and it runs {} of `{}`'s {} layers",
            tree.layers_phrase(),
            sc.model.name,
            tree.model_layers
        ),
        m if m.starts_with("layer.") => format!("`{}` has {} layers (layer.0 … layer.{})", sc.model.name, tree.model_layers, tree.model_layers.saturating_sub(1)),
        "tiles" => format!("`{}` is not cut into tiles ({})", view.path, view.leaf_reason()),
        "" => "the path is empty".into(),
        m => format!("there is no `{}` under `{}` here", crate::error::echo(m), view.path),
    }
}
