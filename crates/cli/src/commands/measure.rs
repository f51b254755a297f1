//! `llm-ledger measure` and `llm-ledger advise`.

use crate::cli::{AdviseArgs, MeasureArgs};
use anyhow::Result;
use llm_ledger_core::advise::Advice;
use llm_ledger_core::measure::Utilisation;
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_core::Error;
use llm_ledger_report::advise::AdviseReport;
use llm_ledger_report::measure::MeasureReport;
use llm_ledger_report::{Format, Report};

/// MBU and MFU of a measured step.
pub fn measure(args: &MeasureArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    let sc = super::scenario(&args.scenario(), "measure")?;
    let req =
        ServingRequest { step_ms: args.step_ms.clone(), tokens_per_s: args.tokens_per_s.clone(), ..Default::default() };
    let measured = req
        .resolve(&sc)?
        .measured
        .ok_or_else(|| Error::invalid("step_ms", "none given", "--step-ms or --tokens-per-s"))?;
    Ok(MeasureReport::new(&sc, Utilisation::checked(&sc, measured)?).render(format)?)
}

/// Below or above the crossover, and the levers ranked.
pub fn advise(args: &AdviseArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    let sc = super::scenario(&args.scenario(), "advise")?;
    let req = ServingRequest {
        usd_per_hour: args.price.usd_per_hour.clone(),
        reserve: args.reserve.reserve.clone(),
        ..Default::default()
    };
    let s = req.resolve(&sc)?;
    Ok(AdviseReport::new(&sc, Advice::of(&sc, &s)).render(format)?)
}
