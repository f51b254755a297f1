//! "What do I need": the fewest GPUs of each kind in the catalogue for a model at a batch × context
//! (decode), with the layout, its price and the memory wall ([`NeedReport`]), its inputs as text.
//! The explorer's *What do I need* page reads them; the plan under load for one GPU is `plan
//! --rate` ([`crate::plan::PlanLoadRequest`]).

use crate::{CommandError, Input};
use llm_ledger_core::stop::Stop;
use llm_ledger_core::{Catalog, Error, Scenario, ScenarioRequest};
use llm_ledger_report::need::{NeedInputs, NeedReport, OnGpu};
use serde::Deserialize;
use std::sync::atomic::AtomicBool;

type Result<T, E = CommandError> = std::result::Result<T, E>;

/// The inputs besides the scenario, as text, named as [`inputs`] names them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeedRequest {
    /// Most GPUs per replica searched (as `plan`'s).
    pub max_gpus: Option<String>,
    /// Memory reserve per GPU.
    pub reserve: Option<String>,
    /// Bound on the time per output token, milliseconds: the answer also meets it.
    pub tpot_ms: Option<String>,
}

/// The inputs of [`NeedRequest`], in its field order.
pub fn inputs() -> &'static [Input] {
    const INPUTS: &[Input] = &[
        Input::text("max_gpus", Some("64"), "an integer from 1 to 1,024", "most GPUs per replica searched"),
        Input::text("reserve", Some("2GB"), "bytes (`2GB`, `512MiB`)", "memory kept free per GPU"),
        Input::text("tpot_ms", None, "milliseconds (optional)", "the answer also meets this time per output token"),
    ];
    INPUTS
}

impl NeedRequest {
    /// The answer for `sc` (resolved from `req` against `catalog`) on every GPU of `catalog`:
    /// the scenario is resolved again with each GPU in place of its own; a GPU it cannot run on
    /// gets its refusal in words. Checked first: the reserve and the bound (against `sc`'s
    /// GPU), then `max_gpus`.
    pub fn run(&self, req: &ScenarioRequest, catalog: &Catalog, sc: &Scenario) -> Result<NeedReport> {
        self.run_within(req, catalog, sc, None)
    }

    /// [`NeedRequest::run`], stopped once `cancel` becomes true.
    pub fn run_within(
        &self,
        req: &ScenarioRequest,
        catalog: &Catalog,
        sc: &Scenario,
        cancel: Option<&AtomicBool>,
    ) -> Result<NeedReport> {
        let serving = crate::plan::PlanRequest {
            reserve: self.reserve.clone(),
            tpot_ms: self.tpot_ms.clone(),
            ..Default::default()
        }
        .serving(sc)?;
        let max_gpus = crate::plan::max_gpus(self.max_gpus.as_deref())?;
        let mut gpus: Vec<OnGpu> = catalog
            .gpus()
            .iter()
            .map(|g| {
                let on = if g.name == sc.gpu.name {
                    Ok(sc.clone())
                } else {
                    ScenarioRequest { gpu: Some(g.name.clone()), gpu_file: None, ..req.clone() }
                        .resolve(catalog)
                        .map_err(|e: Error| e.to_string())
                };
                OnGpu { gpu: g.clone(), scenario: on }
            })
            .collect();
        // A GPU of the user's own (a file) is not in the catalogue: it is asked too.
        if !gpus.iter().any(|on| on.gpu.name == sc.gpu.name) {
            gpus.insert(0, OnGpu { gpu: sc.gpu.clone(), scenario: Ok(sc.clone()) });
        }
        let n = NeedInputs { reserve_bytes: serving.reserve_bytes, tpot_bound_s: serving.tpot_bound_s, max_gpus };
        Ok(NeedReport::build_within(sc, &gpus, n, Stop::maybe(cancel))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table_checks::assert_request_is_table;

    #[test]
    fn the_request_takes_the_input_tables_fields_in_order() {
        let req: NeedRequest = assert_request_is_table(inputs());
        assert_eq!(req.tpot_ms.as_deref(), Some("1"));
    }

    /// Every GPU of the catalogue has a row; the scenario's own is the plan's answer for it.
    #[test]
    fn every_gpu_has_a_row() {
        let catalog = Catalog::builtin();
        let req = ScenarioRequest { model: Some("llama-3-70b".into()), batch: Some("8".into()), ..Default::default() };
        let sc = req.resolve(&catalog).unwrap();
        let r = NeedRequest { max_gpus: Some("8".into()), ..Default::default() }.run(&req, &catalog, &sc).unwrap();
        assert_eq!(r.rows.len(), catalog.gpus().len());
        let own = r.row(&sc.gpu.name).unwrap().answer.unwrap();
        assert_eq!(own.gpus, 2);
        // A 24 GB card holds 141 GB of weights in 8 GPUs only with room to spare for nothing
        // else: at most 8 of them are searched, so it has an answer or a refusal in words.
        assert!(r.rows.iter().all(|row| row.answer.is_some() != row.refusal.is_some()));
        let e = NeedRequest { max_gpus: Some("0".into()), ..Default::default() }.run(&req, &catalog, &sc).unwrap_err();
        assert_eq!(e.field(), Some("max_gpus"));
    }
}
