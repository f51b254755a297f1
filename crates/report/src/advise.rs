//! The `advise` report: the advice in sentences, and the levers ranked by the cost per token
//! they save.
//!
//! JSON keys (stable): `inputs`, `lines[]` (the sentences), `crossover` (as `kv`), `footprint`,
//! `max_batch`, `fit_basis` (`step`: `footprint.fits` and `max_batch` are this step's),
//! `price`, `usd_per_million_tokens`, `baseline`, `levers[]` (ranked; lever fields as in `levers`
//! plus `usd_per_million_tokens`), `skipped[]`, `experts_touched`.

use crate::ledger::Inputs;
use crate::levers::{lever_table, LeverRow};
use crate::render::{HumanTable, Report};
use llm_ledger_core::advise::Advice;
use llm_ledger_core::levers::LeverOutcome;
use serde::Serialize;

/// The `advise` report.
#[derive(Debug, Clone, Serialize)]
pub struct AdviseReport {
    /// Inputs.
    pub inputs: Inputs,
    /// The advice.
    #[serde(flatten)]
    pub advice: Advice,
}

impl Report for AdviseReport {
    type CsvRow = LeverRow;

    fn csv_rows(&self) -> Vec<LeverRow> {
        self.advice.levers.iter().map(|r| LeverRow::of(&r.lever)).collect()
    }

    fn human(&self) -> HumanTable {
        let a = &self.advice;
        let ranked: Vec<&LeverOutcome> = a.levers.iter().map(|r| &r.lever).collect();
        let (header, rows, mut footer) = lever_table(&a.baseline, &ranked, &a.skipped);
        footer.push(a.fit_basis.rule(self.inputs.counting).into());
        let mut title = vec![self.inputs.headline(), String::new()];
        title.extend(a.lines.iter().cloned());
        title.push(String::new());
        title.push("Levers, ranked by cost per token saved:".into());
        let priority = crate::levers::lever_priority(&header);
        HumanTable { title, header, rows, right_aligned: (2..=8).collect(), footer, priority }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Format;
    use llm_ledger_core::serving::ServingRequest;
    use llm_ledger_core::testing::scenario;

    fn report(batch: &str, ctx: &str) -> AdviseReport {
        let sc = scenario(&[("counting", "seed"), ("batch", batch), ("ctx", ctx)]);
        let s = ServingRequest { usd_per_hour: Some("3".into()), ..Default::default() }.resolve(&sc).unwrap();
        AdviseReport { inputs: Inputs::of(&sc), advice: Advice::of(&sc, &s) }
    }

    #[test]
    fn advise_table_above_the_crossover() {
        insta::assert_snapshot!(report("8", "32768").render(Format::Table).unwrap());
    }

    #[test]
    fn advise_json_carries_the_sentences_and_ranked_levers() {
        let v: serde_json::Value = serde_json::from_str(&report("1", "2048").render(Format::Json).unwrap()).unwrap();
        assert!(v["lines"][0].as_str().unwrap().starts_with("Below the crossover"));
        assert_eq!(v["crossover"]["side"], "below");
        assert_eq!(v["levers"][0]["name"], "batch");
        assert!(v["levers"][0]["usd_per_million_tokens"].is_number());
    }
}
