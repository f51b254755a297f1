//! `sweep`: its axes (`batch`, `ctx`) and reserve as text into the report's [`SweepPlan`] — the
//! head and the core's [`llm_ledger_core::sweep::Sweep`] the CLI streams, the explorer's Batching
//! page draws and the Python package returns as columns. One definition for every front end.

use crate::{CommandError, Input};
use llm_ledger_core::limits::{MAX_BATCH, MAX_CONTEXT};
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_core::sweep::Axis;
use llm_ledger_core::{Error, Phase, Scenario};
use llm_ledger_report::sweep::{SweepAxes, SweepPlan};
use serde::Deserialize;

/// The batch axis when none is given (`sweep` without `batch`).
pub const DEFAULT_BATCH_AXIS: &str = "1";
/// The context axis when none is given.
pub const DEFAULT_CTX_AXIS: &str = "2048";

/// The inputs of `sweep` besides the scenario's series, as text, named as [`inputs`] names them
/// (`batch` and `ctx` are axes here, not the scenario's one batch and context).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepRequest {
    /// The batch axis: a list or ranges.
    pub batch: Option<String>,
    /// The context axis: a list or ranges.
    pub ctx: Option<String>,
    /// Memory reserve (e.g. `2GB`).
    pub reserve: Option<String>,
}

impl SweepRequest {
    /// The two axes for `base` (resolved without batch and context): `batch` in 1..=[`MAX_BATCH`],
    /// `ctx` in 0..=[`MAX_CONTEXT`] (from 1 in prefill, which needs a prompt); defaults
    /// [`DEFAULT_BATCH_AXIS`] and [`DEFAULT_CTX_AXIS`].
    pub fn axes(&self, base: &Scenario) -> Result<SweepAxes, Error> {
        let batch_text = self.batch.as_deref().unwrap_or(DEFAULT_BATCH_AXIS);
        let ctx_text = self.ctx.as_deref().unwrap_or(DEFAULT_CTX_AXIS);
        let batch = Axis::parse("batch", batch_text, 1, MAX_BATCH)?;
        let min_ctx = if base.workload.phase == Phase::Prefill { 1 } else { 0 };
        let ctx = Axis::parse("ctx", ctx_text, min_ctx, MAX_CONTEXT)?;
        Ok(SweepAxes { batch, batch_text: batch_text.trim().to_string(), ctx, ctx_text: ctx_text.trim().to_string() })
    }

    /// The axes for `base` and the reserve in bytes, checked in [`SweepRequest::plan`]'s order:
    /// the reserve first, then `batch`, then `ctx`.
    pub fn checked(&self, base: &Scenario) -> Result<(SweepAxes, f64), CommandError> {
        let serving = ServingRequest { reserve: self.reserve.clone(), ..Default::default() }.resolve(base)?;
        let axes = self.axes(base)?;
        Ok((axes, serving.reserve_bytes))
    }

    /// The sweep of `base` over these axes with the reserve held back, ready to run: the reserve
    /// checked first, then `batch`, then `ctx` ([`SweepRequest::checked`]).
    pub fn plan(&self, base: Scenario) -> Result<SweepPlan, CommandError> {
        let (axes, reserve_bytes) = self.checked(&base)?;
        Ok(SweepPlan::new(base, axes, reserve_bytes)?)
    }
}

/// `sweep`'s inputs besides the scenario's, in [`SweepRequest`]'s field order.
pub fn inputs() -> &'static [Input] {
    const INPUTS: &[Input] = &[
        Input::text(
            "batch",
            Some(DEFAULT_BATCH_AXIS),
            "a list `1,8,32` or ranges `1..256`, `1..256*2`",
            "the batch axis",
        ),
        Input::text("ctx", Some(DEFAULT_CTX_AXIS), "a list or ranges `0..8192:1024`", "the context axis"),
        Input::text("reserve", Some("2GB"), "bytes (`2GB`, `512MiB`)", "memory kept free of weights and KV cache"),
    ];
    INPUTS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table_checks::assert_request_is_table;

    #[test]
    fn the_request_takes_the_input_tables_fields_in_order() {
        let req: SweepRequest = assert_request_is_table(inputs());
        assert_eq!(req.ctx.as_deref(), Some("1"));
    }

    /// The axes default to the table's values, echo their text trimmed, and a prefill sweep's
    /// contexts start at 1 (a prefill needs a prompt).
    #[test]
    fn axes_take_the_tables_defaults_and_the_phases_range() {
        let decode = llm_ledger_core::testing::scenario(&[]);
        let plan = SweepRequest::default().plan(decode.clone()).unwrap();
        assert_eq!((plan.head.batch_axis.as_str(), plan.head.ctx_axis.as_str()), ("1", "2048"));
        assert_eq!(plan.head.point_count, 1);
        assert_eq!(plan.head.reserve_bytes, 2e9);
        let req = SweepRequest { batch: Some(" 1,8 ".into()), ctx: Some("0".into()), reserve: Some("1GB".into()) };
        let plan = req.plan(decode).unwrap();
        assert_eq!((plan.head.batch_axis.as_str(), plan.head.point_count, plan.head.reserve_bytes), ("1,8", 2, 1e9));
        let prefill = llm_ledger_core::testing::scenario(&[("phase", "prefill")]);
        let e = req.plan(prefill).unwrap_err();
        assert_eq!(e.field(), Some("ctx"));
        // The reserve is checked before the axes.
        let bad = SweepRequest { batch: Some("0".into()), reserve: Some("lots".into()), ..Default::default() };
        assert_eq!(bad.plan(llm_ledger_core::testing::scenario(&[])).unwrap_err().field(), Some("reserve"));
    }
}
