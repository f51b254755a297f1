//! The `measure` report: MBU and MFU of a measured step against the ledger, and the reference calculator's reading.
//!
//! JSON keys (stable): `inputs`, `mbu`, `mfu`, `measured_step_s`, `measured_tokens_per_s`,
//! `ledger_step_s`, `memory_floor_s`, `compute_floor_s`, `bytes`, `flops`,
//! `measured_over_ledger`, `reading` (`above_roof`, `near_roof`, `overhead`), `advice`, and
//! whether the step fits ([`StepFit`]: `fits`, `memory_bytes`, `gpu_memory_bytes`,
//! `plan_command`; the default reserve).

use crate::facts::facts_table;
use crate::fit::StepFit;
use crate::human;
use crate::ledger::Inputs;
use crate::render::{HumanTable, Report};
use llm_ledger_core::measure::{Reading, Utilisation};
use llm_ledger_core::serving::DEFAULT_RESERVE_BYTES;
use llm_ledger_core::Scenario;
use serde::Serialize;

/// The reading in words (the reference calculator: "Measuring against the ledger").
pub fn advice(reading: Reading) -> &'static str {
    match reading {
        Reading::AboveRoof => "faster than the hardware allows for the ledger's bytes and FLOPs: check the inputs (precisions, batch, context, GPU) and the measurement",
        Reading::NearRoof => "within reach of a roof: the step is bound by what the ledger counts; to go faster, move fewer bytes or FLOPs (see `llm-ledger advise`)",
        Reading::Overhead => "below ~60 % of both roofs: look for kernel launches and Python overhead (CUDA Graphs), unfused kernels and communication before buying hardware",
    }
}

/// The flat numbers (also the CSV row).
#[derive(Debug, Clone, Serialize)]
pub struct MeasureRow {
    /// The utilisation.
    #[serde(flatten)]
    pub utilisation: Utilisation,
    /// The reading in words.
    pub advice: &'static str,
}

/// The `measure` report.
#[derive(Debug, Clone, Serialize)]
pub struct MeasureReport {
    /// Inputs.
    pub inputs: Inputs,
    /// The numbers.
    #[serde(flatten)]
    pub row: MeasureRow,
    /// Whether the step fits in GPU memory.
    #[serde(flatten)]
    pub fit: StepFit,
}

impl MeasureReport {
    /// Build from a utilisation of `sc`'s step.
    pub fn new(sc: &Scenario, u: Utilisation) -> MeasureReport {
        MeasureReport {
            inputs: Inputs::of(sc),
            row: MeasureRow { utilisation: u, advice: advice(u.reading) },
            fit: StepFit::of(sc, DEFAULT_RESERVE_BYTES),
        }
    }
}

impl Report for MeasureReport {
    type CsvRow = Utilisation;

    fn csv_rows(&self) -> Vec<Utilisation> {
        vec![self.row.utilisation]
    }

    fn human(&self) -> HumanTable {
        let u = &self.row.utilisation;
        facts_table(
            vec![self.inputs.headline()],
            vec![
                ("measured step", format!("{} ({} tok/s)", human::seconds(u.measured_step_s), human::sig3(u.measured_tokens_per_s))),
                ("ledger step", format!("{} (measured is {} the ledger)", human::seconds(u.ledger_step_s), human::ratio(u.measured_over_ledger))),
                ("MBU", format!("{} ({} in {})", human::percent(u.mbu), human::bytes(u.bytes), human::seconds(u.measured_step_s))),
                ("MFU", format!("{} ({})", human::percent(u.mfu), human::flops(u.flops))),
                ("memory floor", human::seconds(u.memory_floor_s)),
                ("compute floor", human::seconds(u.compute_floor_s)),
            ],
            [
                vec![
                    format!("reading: {}", self.row.advice),
                    "MBU = ledger bytes ÷ measured time ÷ peak bandwidth; MFU = Σ FLOPs ÷ peak of their format ÷ measured time".into(),
                ],
                self.fit.footer(),
            ]
            .concat(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Format;
    use llm_ledger_core::serving::Measured;
    use llm_ledger_core::testing::scenario;

    fn report(ms: f64) -> MeasureReport {
        let sc = scenario(&[("counting", "seed")]);
        MeasureReport::new(&sc, Utilisation::of(&sc, Measured::StepTime(ms / 1e3)))
    }

    #[test]
    fn a_slow_step_reads_as_overhead_in_words() {
        assert!(report(1000.0).row.advice.contains("launches"), "{}", report(1000.0).row.advice);
    }

    #[test]
    fn measure_table() {
        insta::assert_snapshot!(report(10.0).render(Format::Table).unwrap());
    }

    #[test]
    fn measure_json_has_mbu_and_mfu() {
        let v: serde_json::Value = serde_json::from_str(&report(10.0).render(Format::Json).unwrap()).unwrap();
        assert_eq!(format!("{:.3}", v["mbu"].as_f64().unwrap()), "0.456");
        assert!(v["mfu"].is_number());
        assert_eq!(v["reading"], "overhead");
    }
}
