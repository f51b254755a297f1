//! `zoom`: its path (`at`) into the node of the scenario's zoom tree, with the explorer page's
//! fallback to the deepest level of a path this scenario lacks, and the INT4 flip of a GEMM (the
//! decode batch where INT4 weights make it compute-bound). One definition for every front end.

use crate::{CommandError, Input};
use llm_ledger_core::zoom::{weight_flip, Flip, NodeView};
use llm_ledger_core::{Error, Scenario, ZoomTree};
use llm_ledger_report::ZoomReport;
use serde::Deserialize;

/// The node shown when `at` is not given.
pub const DEFAULT_AT: &str = "model";

/// The inputs of `zoom` besides the scenario, as text, named as [`inputs`] names them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoomRequest {
    /// The zoom path (default [`DEFAULT_AT`]).
    pub at: Option<String>,
}

impl ZoomRequest {
    /// The path asked for.
    pub fn at(&self) -> &str {
        self.at.as_deref().unwrap_or(DEFAULT_AT)
    }

    /// The node of `tree` (the zoom tree of `sc`) at `at`. With `fallback` (a table for a
    /// person: the CLI's table and Markdown, the explorer's page), a path this scenario lacks
    /// shows the deepest level of it that exists, with a sentence saying why
    /// ([`ZoomTree::deepest`]); without it (JSON and CSV, read by programs), the path's error,
    /// about `at`.
    pub fn view<'t>(
        &self,
        tree: &'t ZoomTree,
        sc: &Scenario,
        fallback: bool,
    ) -> Result<(NodeView<'t>, Option<String>), Error> {
        if fallback {
            return Ok(tree.deepest(sc, self.at()));
        }
        // The core names the zoom path `path`; the input is `at`.
        let at = |f: &str| if f == "path" { "at".to_string() } else { f.to_string() };
        Ok((tree.node(self.at()).map_err(|e| e.map_field(at))?, None))
    }

    /// The report of the node at `at` of `sc`'s zoom tree ([`ZoomRequest::view`]), and the
    /// sentence of a fallback.
    pub fn run(&self, sc: &Scenario, fallback: bool) -> Result<(ZoomReport, Option<String>), CommandError> {
        let tree = ZoomTree::build(sc);
        let (view, notice) = self.view(&tree, sc, fallback)?;
        Ok((ZoomReport::new(sc, &tree, &view), notice))
    }
}

/// `zoom`'s inputs besides the scenario.
pub fn inputs() -> &'static [Input] {
    const INPUTS: &[Input] = &[Input::text(
        "at",
        Some(DEFAULT_AT),
        "model, embedding, layer.N, layer.N.attn, layer.N.mlp.up, layer.N.mlp.up.tiles, final_norm, lm_head …",
        "the node to show",
    )];
    INPUTS
}

/// At a GEMM of a layer (`view`, in `sc`'s tree) whose weights are not already INT4, the decode
/// batch where INT4 weights would make it compute-bound while the scenario's own keep it
/// memory-bound ([`weight_flip`]: the first power of two, each side by the scenario's clock);
/// `None` where the node is not a layer's GEMM or no batch flips it. `int4` resolves the same
/// scenario with INT4 weights (the front end's resolver: only called at a GEMM).
pub fn int4_flip<E>(
    sc: &Scenario,
    view: &NodeView<'_>,
    int4: impl FnOnce() -> Result<Scenario, E>,
) -> Result<Option<Flip>, E> {
    let Some(node) = view.op() else { return Ok(None) };
    let layer = view.path.strip_prefix("layer.").and_then(|p| p.split('.').next()).and_then(|n| n.parse().ok());
    let (Some(layer), Some(_)) = (layer, node.op.gemm) else { return Ok(None) };
    let int4 = int4()?;
    if int4.weights == sc.weights {
        return Ok(None);
    }
    Ok(weight_flip(sc, &int4, layer, node.op.kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table_checks::assert_request_is_table;

    #[test]
    fn the_request_takes_the_input_tables_fields_in_order() {
        let req: ZoomRequest = assert_request_is_table(inputs());
        assert_eq!(req.at(), "1");
        assert_eq!(ZoomRequest::default().at(), inputs()[0].default.unwrap());
    }

    /// A path this scenario lacks: the deepest level it has with a sentence (for a person), or
    /// the path's error about `at` (for a program).
    #[test]
    fn a_missing_path_falls_back_or_names_at() {
        let sc = llm_ledger_core::testing::scenario(&[]);
        let req = ZoomRequest { at: Some("layer.0.mlp.upp".into()) };
        let (report, notice) = req.run(&sc, true).unwrap();
        assert!(notice.is_some());
        assert_eq!(report.path, "layer.0");
        let e = req.run(&sc, false).unwrap_err();
        assert_eq!(e.field(), Some("at"));
    }

    /// The default decode step's up-projection flips at a decode batch with INT4 weights; a
    /// block, or INT4 weights already, has no flip (and is not resolved).
    #[test]
    fn the_int4_flip_is_found_at_a_layers_gemm_only() {
        let sc = llm_ledger_core::testing::scenario(&[]);
        let int4 = || Ok::<_, Error>(llm_ledger_core::testing::scenario(&[("weights", "int4")]));
        let tree = ZoomTree::build(&sc);
        let up = tree.node("layer.0.mlp.up").unwrap();
        let flip = int4_flip(&sc, &up, int4).unwrap().expect("a flip");
        assert!(flip.batch.is_power_of_two() && flip.layer == 0);
        let block = tree.node("layer.0.mlp").unwrap();
        let never = || -> Result<Scenario, Error> { panic!("resolved for a block") };
        assert!(int4_flip(&sc, &block, never).unwrap().is_none());
        let in_int4 = llm_ledger_core::testing::scenario(&[("weights", "int4")]);
        let tree = ZoomTree::build(&in_int4);
        assert!(int4_flip(&in_int4, &tree.node("layer.0.mlp.up").unwrap(), int4).unwrap().is_none());
    }
}
