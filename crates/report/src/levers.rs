//! The `levers` report: the workload as given, then re-run with each lever.
//!
//! JSON keys (stable): `inputs`, `baseline` (`batch`, `step_time_s`, `tokens_per_s`,
//! `time_per_token_s`, `memory_bytes`, `fits`), `levers[]` (`lever`, `name`, `description`,
//! `quality` (its price in quality, in words), `side`, `outcome` as `baseline`, `speedup`,
//! `step_time_saved_s`, `cost_saving`), `skipped[]`
//! (`name`, `reason`), `fit_basis` (`step`: every `fits` and the batch lever are this step's,
//! [`FitBasis::Step`]), and whether the workload as given fits ([`FitView`]: `fits`,
//! `memory_bytes`, `gpu_memory_bytes`, `plan_command`). CSV: one flat row per lever, the baseline
//! first.

use crate::fit::FitView;
use crate::human;
use crate::ledger::Inputs;
use crate::render::{HumanTable, Report};
use llm_ledger_core::levers::{Lever, LeverOutcome, LeverSet, Outcome, Skipped};
use llm_ledger_core::memory::FitBasis;
use llm_ledger_core::Scenario;
use serde::Serialize;

/// The `levers` report.
#[derive(Debug, Clone, Serialize)]
pub struct LeverReport {
    /// Inputs.
    pub inputs: Inputs,
    /// The workload as given.
    pub baseline: Outcome,
    /// The levers that apply.
    pub levers: Vec<LeverOutcome>,
    /// The levers that do not, with the reason.
    pub skipped: Vec<Skipped>,
    /// The basis of every `fits`.
    pub fit_basis: FitBasis,
    /// Whether the workload as given fits.
    #[serde(flatten)]
    pub fit: FitView,
}

/// One flat row (CSV).
#[derive(Debug, Clone, Serialize)]
pub struct LeverRow {
    /// Lever name (`baseline` for the workload as given).
    pub name: String,
    /// `below` (weight side) or `above` (cache side); empty for the baseline.
    pub side: String,
    /// Sequences.
    pub batch: u64,
    /// Step time, seconds.
    pub step_time_s: f64,
    /// Baseline ÷ lever step time.
    pub speedup: f64,
    /// Step time saved, seconds.
    pub step_time_saved_s: f64,
    /// Tokens per second.
    pub tokens_per_s: f64,
    /// Fraction of cost per token saved.
    pub cost_saving: f64,
    /// Memory, bytes.
    pub memory_bytes: f64,
    /// Fits the GPU after the reserve.
    pub fits: bool,
    /// Its price in quality (empty for the baseline).
    pub quality: String,
}

impl LeverRow {
    fn baseline(o: &Outcome) -> LeverRow {
        LeverRow {
            name: "baseline".into(),
            side: String::new(),
            batch: o.batch,
            step_time_s: o.step_time_s,
            speedup: 1.0,
            step_time_saved_s: 0.0,
            tokens_per_s: o.tokens_per_s,
            cost_saving: 0.0,
            memory_bytes: o.memory_bytes,
            fits: o.fits,
            quality: String::new(),
        }
    }

    /// A lever's row.
    pub fn of(l: &LeverOutcome) -> LeverRow {
        LeverRow {
            name: l.name.into(),
            side: l.side.name().into(),
            speedup: l.speedup,
            step_time_saved_s: l.step_time_saved_s,
            cost_saving: l.cost_saving,
            quality: l.quality.into(),
            ..LeverRow::baseline(&l.outcome)
        }
    }
}

impl LeverReport {
    /// Every lever against `sc`, in lever order, with `reserve_bytes` held back.
    pub fn new(sc: &Scenario, reserve_bytes: f64) -> LeverReport {
        let set = LeverSet::of(sc, reserve_bytes);
        LeverReport {
            inputs: Inputs::of(sc),
            fit: FitView::of(sc, &llm_ledger_core::memory::Fit::step(sc, reserve_bytes)),
            baseline: set.baseline,
            levers: set.levers,
            skipped: set.skipped,
            fit_basis: set.fit_basis,
        }
    }
}

/// Which lever columns a narrow terminal hides first: the explanation, then the side and memory;
/// the lever, its step, speed-up and whether it fits stay.
pub(crate) fn lever_priority(header: &[String]) -> Vec<u8> {
    header
        .iter()
        .map(|h| match h.as_str() {
            "lever" | "step" | "speedup" | "fits" => 0,
            "batch" | "tok/s" | "per token" => 1,
            "side" | "memory" => 2,
            _ => 3,
        })
        .collect()
}

/// Human cells of a lever table (shared with `advise`).
pub fn lever_table(
    baseline: &Outcome,
    levers: &[&LeverOutcome],
    skipped: &[Skipped],
    measured: bool,
) -> (Vec<String>, Vec<Vec<String>>, Vec<String>) {
    let header =
        ["lever", "side", "batch", "step", "speedup", "tok/s", "per token", "memory", "fits", "what", "quality"]
            .map(String::from)
            .to_vec();
    let cells = |r: &LeverRow, what: &str, quality: &str| {
        vec![
            r.name.clone(),
            r.side.clone(),
            human::count(r.batch),
            human::seconds(r.step_time_s),
            human::ratio(r.speedup),
            human::count(r.tokens_per_s.round() as u64),
            if r.name == "baseline" { "—".into() } else { format!("{:+.0} %", -r.cost_saving * 100.0) },
            human::bytes(r.memory_bytes),
            crate::facts::yes_no(r.fits),
            what.to_string(),
            quality.to_string(),
        ]
    };
    let mut rows = vec![cells(&LeverRow::baseline(baseline), "the workload as given", "—")];
    rows.extend(levers.iter().map(|l| cells(&LeverRow::of(l), l.description, l.quality)));
    let mut footer: Vec<String> =
        skipped.iter().map(|s| format!("not applicable: {} ({})", s.name, s.reason)).collect();
    let weight_only: Vec<&str> =
        levers.iter().filter(|l| matches!(l.lever, Lever::W4a16 | Lever::W8a16)).map(|l| l.name).collect();
    if !weight_only.is_empty() {
        let rule = if measured { WEIGHT_ONLY_DEQUANT_MEASURED } else { WEIGHT_ONLY_DEQUANT };
        footer.push(format!("{}: {rule}", weight_only.join(", ")));
    }
    let commands: Vec<String> = levers
        .iter()
        .filter(|l| !l.inputs.is_empty())
        .map(|l| format!("{} {}", l.name, lever_flags(&l.inputs)))
        .collect();
    if !commands.is_empty() {
        footer.push(format!("each lever is the ledger of the same command with: {}", commands.join(" · ")));
    }
    (header, rows, footer)
}

/// A lever's inputs as the CLI spells them: `--weights fp8 --gemm-activations fp8`.
pub fn lever_flags(inputs: &[(&'static str, String)]) -> String {
    inputs.iter().map(|(k, v)| format!("--{} {v}", k.replace('_', "-"))).collect::<Vec<_>>().join(" ")
}

/// What the weight-only levers (W4A16, W8A16) leave out under the roofline, said wherever they
/// are shown.
pub const WEIGHT_ONLY_DEQUANT: &str =
    "dequantising the weights inside each GEMM is not counted by the roofline (as in the reference calculator); kernels pay it, most at large batches";

/// What the measured clock charges the weight-only levers.
pub const WEIGHT_ONLY_DEQUANT_MEASURED: &str =
    "the measured clock charges dequantising the weights inside each GEMM (once per 64-row tile), so these levers lose their edge as the batch grows";

impl Report for LeverReport {
    type CsvRow = LeverRow;

    fn csv_rows(&self) -> Vec<LeverRow> {
        let mut v = vec![LeverRow::baseline(&self.baseline)];
        v.extend(self.levers.iter().map(LeverRow::of));
        v
    }

    fn human(&self) -> HumanTable {
        let refs: Vec<&LeverOutcome> = self.levers.iter().collect();
        let (header, rows, mut footer) =
            lever_table(&self.baseline, &refs, &self.skipped, self.inputs.engine.is_some());
        footer.push(
            "per token = change in step time ÷ tokens per step (the change in cost per token at a fixed price)".into(),
        );
        footer.push(self.fit_basis.rule(self.inputs.counting).into());
        footer.extend(self.fit.hint());
        let priority = lever_priority(&header);
        HumanTable {
            title: vec![self.inputs.headline()],
            header,
            rows,
            right_aligned: (2..=8).collect(),
            footer,
            priority,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Format;
    use llm_ledger_core::testing::scenario;

    fn report(batch: &str, ctx: &str) -> LeverReport {
        let sc = scenario(&[("counting", "seed"), ("batch", batch), ("ctx", ctx)]);
        LeverReport::new(&sc, 2e9)
    }

    #[test]
    fn levers_table_long_context() {
        insta::assert_snapshot!(report("8", "32768").render(Format::Table).unwrap());
    }

    #[test]
    fn weight_only_levers_say_that_dequantisation_is_not_counted() {
        let table = report("8", "32768").render(Format::Table).unwrap();
        assert!(table.contains(&format!("w4a16, w8a16: {WEIGHT_ONLY_DEQUANT}")), "{table}");
        // Not said when the weight-only levers do not apply (weights already 4-bit).
        let sc = scenario(&[("counting", "seed"), ("weights", "int4")]);
        let table = LeverReport::new(&sc, 2e9).render(Format::Table).unwrap();
        assert!(!table.contains(WEIGHT_ONLY_DEQUANT), "{table}");
    }

    #[test]
    fn levers_csv_rows_start_with_the_baseline() {
        let csv = report("64", "2048").render(Format::Csv).unwrap();
        assert!(csv.starts_with("name,side,batch,step_time_s,speedup,"));
        assert!(csv.lines().nth(1).unwrap().starts_with("baseline,,64,"));
    }
}
