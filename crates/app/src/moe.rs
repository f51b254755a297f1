//! `moe`: its batch axis and E and k as text into the report's [`MoeReport`] — the union problem
//! over a batch range, for a MoE model or for E and k alone. One definition for every front end.

use crate::{CommandError, Input};
use llm_ledger_core::error::integer_in;
use llm_ledger_core::error::{echo, Text};
use llm_ledger_core::limits::{MAX_BATCH, MAX_EXPERTS};
use llm_ledger_core::moe::{moe_shape, routing_probabilities};
use llm_ledger_core::scenario::parse_u64;
use llm_ledger_core::sweep::Axis;
use llm_ledger_core::{Error, Scenario};
use llm_ledger_report::moe::{MoeReport, MoeShape};
use serde::Deserialize;

/// The batch axis when none is given.
pub const DEFAULT_BATCH_AXIS: &str = "1,2,4,8,16,32,64,128";

/// Most batch points one `moe` report computes on the CLI and in Python (each builds a ledger).
pub const MAX_POINTS: u64 = 100_000;

/// The inputs of `moe` besides the scenario, as text, named as [`inputs`] names them (`batch` is
/// an axis here, not the scenario's one batch).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoeRequest {
    /// The batch axis: a list or ranges (default [`DEFAULT_BATCH_AXIS`]).
    pub batch: Option<String>,
    /// Routed experts E, without a model.
    pub experts: Option<String>,
    /// Experts per token k, without a model.
    pub top_k: Option<String>,
}

impl MoeRequest {
    /// Whether E or k is given (then no model is used).
    pub fn standalone(&self) -> bool {
        self.experts.is_some() || self.top_k.is_some()
    }

    /// The batch axis, in 1..=[`MAX_BATCH`].
    pub fn batches(&self) -> Result<Axis, Error> {
        Axis::parse("batch", self.batch.as_deref().unwrap_or(DEFAULT_BATCH_AXIS), 1, MAX_BATCH)
    }

    /// The batch axis (at most `max_points` batches) and the experts of `base`: E and k given
    /// alone (refused when a model is given too, `model_given`: it brings its own), or the
    /// model's (refused for a dense model).
    pub fn resolve(&self, base: &Scenario, model_given: bool, max_points: u64) -> Result<(Axis, MoeShape), Error> {
        let batches = self.batches()?;
        if batches.len() > max_points {
            return Err(Error::invalid(
                "batch",
                format!("{} points", batches.len()),
                format!("at most {max_points} points"),
            ));
        }
        let standalone = self.standalone();
        if standalone && model_given {
            return Err(Error::refused_text(
                "experts",
                Text::template("given together with {model}"),
                Text::template("a model brings its own experts and top-k"),
            ));
        }
        let (experts, top_k) = if standalone {
            let field = |name: &str, v: Option<&str>| -> Result<u64, Error> {
                let missing = || {
                    let message = Text::template("missing required field `").input(name).plain("` for moe without ");
                    Error::input(name, message.input("model"))
                };
                let v = v.ok_or_else(missing)?;
                let n = parse_u64(name, v)?;
                if !(1..=MAX_EXPERTS).contains(&n) {
                    return Err(Error::invalid(name, n, integer_in(1, MAX_EXPERTS)));
                }
                Ok(n)
            };
            let (e, k) = (field("experts", self.experts.as_deref())?, field("top_k", self.top_k.as_deref())?);
            routing_probabilities(e, k, &base.routing)?;
            (e, k)
        } else {
            moe_shape(&base.model).ok_or_else(|| {
                let what = echo(&format!("model `{}` for moe", base.model.name));
                let message = Text::template("unsupported ").plain(&what).then(Text::template(
                    ": it has no mixture-of-experts layers; pass a MoE model (mixtral-8x7b, qwen3-30b-a3b, deepseek-v3, gpt-oss-20b …) or {experts} and {top_k}",
                ));
                Error::input("model", message)
            })?
        };
        Ok((batches, MoeShape { experts, top_k, standalone }))
    }

    /// The `moe` report of `base` (the scenario without a batch: phase, context, routing, the
    /// model unless E and k are given), at most `max_points` batches ([`MoeRequest::resolve`]).
    pub fn run(&self, base: &Scenario, model_given: bool, max_points: u64) -> Result<MoeReport, CommandError> {
        let (batches, shape) = self.resolve(base, model_given, max_points)?;
        Ok(MoeReport::build(base, &batches, shape)?)
    }
}

/// `moe`'s inputs besides the scenario, in [`MoeRequest`]'s field order.
pub fn inputs() -> &'static [Input] {
    const INPUTS: &[Input] = &[
        Input::text("batch", Some(DEFAULT_BATCH_AXIS), "a list or ranges", "sequences per step: the batch axis"),
        Input::text("experts", None, "an integer from 1 to 65,536 (with top_k; without a model)", "routed experts E"),
        Input::text(
            "top_k",
            None,
            "an integer from 1 to experts (with experts; without a model)",
            "experts per token k",
        ),
    ];
    INPUTS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table_checks::assert_request_is_table;

    #[test]
    fn the_request_takes_the_input_tables_fields_in_order() {
        let req: MoeRequest = assert_request_is_table(inputs());
        assert_eq!(req.top_k.as_deref(), Some("1"));
        let experts = inputs().iter().find(|i| i.name == "experts").unwrap();
        assert!(
            experts.accepted.contains(&llm_ledger_core::error::range_words(1, MAX_EXPERTS)),
            "{}",
            experts.accepted
        );
    }

    /// The reference calculator's union for E = 8, k = 2: 8·(1 − (1 − 2/8)ᴺ) = 2.0, 5.5 at N = 1, 4.
    #[test]
    fn e_and_k_alone_give_the_union_and_a_model_with_them_is_refused() {
        let base = llm_ledger_core::testing::scenario(&[]);
        let req = MoeRequest { batch: Some("1,4".into()), experts: Some("8".into()), top_k: Some("2".into()) };
        let report = req.run(&base, false, 10).unwrap();
        let touched: Vec<String> = report.points.iter().map(|p| format!("{:.1}", p.union.experts_touched)).collect();
        assert_eq!(touched, ["2.0", "5.5"]);
        assert!(report.model.is_none() && report.points[0].model.is_none());
        assert_eq!(req.run(&base, true, 10).unwrap_err().field(), Some("experts"));
        assert_eq!(req.run(&base, false, 1).unwrap_err().to_string(), "invalid `batch`: 2 points (at most 1 points)");
        let k_missing = MoeRequest { top_k: None, ..req };
        let e = k_missing.run(&base, false, 10).unwrap_err();
        assert_eq!(e.to_string(), "missing required field `top_k` for moe without model");
        // A dense model without E and k names the model.
        assert_eq!(MoeRequest::default().run(&base, false, 10).unwrap_err().field(), Some("model"));
    }
}
