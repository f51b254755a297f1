//! The `kv` report: KV bytes per token, the crossover, where the workload sits, memory and
//! capacity.
//!
//! JSON keys (stable): `inputs`, `kv_bytes_per_token`, `weight_bytes` (read per step),
//! `crossover_tokens`, `cached_tokens`, `kv_read_bytes`, `kv_to_weight_ratio`, `side`,
//! `state_bytes_per_sequence`, `state_read_bytes`, `state_cache_bytes` (a hybrid's recurrent
//! states: per sequence, read this step, held by the batch; 0 otherwise),
//! `weight_memory_bytes`, `kv_cache_bytes`, `workspace_bytes`, `memory_bytes`, `capacity_bytes`,
//! `reserve_bytes`, `fits`, `max_cached_tokens`, `max_batch`, `fit_basis` (`step`: `fits` and
//! `max_batch` are this step's, [`FitBasis::Step`]), `kv_bytes_per_sequence`, `gpu_memory_bytes`
//! and `plan_command` (as every report's [`crate::fit::FitView`]).

use crate::facts::{facts_table, yes_no};
use crate::human;
use crate::ledger::Inputs;
use crate::render::{HumanTable, Report};
use llm_ledger_core::crossover::Crossover;
use llm_ledger_core::memory::{kv_bytes_per_sequence, max_cached_tokens, Fit, FitBasis};
use llm_ledger_core::{Contexts, Scenario};
use serde::Serialize;

/// The flat numbers (also the CSV row).
#[derive(Debug, Clone, Serialize)]
pub struct KvRow {
    /// KV-cache bytes per cached token, all layers, ignoring windows.
    pub kv_bytes_per_token: f64,
    /// Weight bytes read per step (the crossover's numerator).
    pub weight_bytes: f64,
    /// Total cached tokens at which KV bytes equal weight bytes.
    pub crossover_tokens: f64,
    /// Σ context tokens of this workload.
    pub cached_tokens: f64,
    /// KV bytes this step reads.
    pub kv_read_bytes: f64,
    /// (kv_read_bytes + state_read_bytes) ÷ weight_bytes.
    pub kv_to_weight_ratio: f64,
    /// `below` or `above` the crossover.
    pub side: &'static str,
    /// Bytes of state one sequence holds however long it is (recurrent layers' states at their
    /// precision, their convolutions' at the activations'; 0 without recurrent layers).
    pub state_bytes_per_sequence: f64,
    /// State bytes this step reads (each sequence's, every step).
    pub state_read_bytes: f64,
    /// Of `kv_cache_bytes`, the batch's states.
    pub state_cache_bytes: f64,
    /// Stored weights that count toward memory.
    pub weight_memory_bytes: f64,
    /// KV cache of the batch.
    pub kv_cache_bytes: f64,
    /// Activation workspace estimate.
    pub workspace_bytes: f64,
    /// weights + KV cache + workspace.
    pub memory_bytes: f64,
    /// GPU memory.
    pub capacity_bytes: f64,
    /// Runtime reserve.
    pub reserve_bytes: f64,
    /// memory ≤ capacity − reserve.
    pub fits: bool,
    /// Cached tokens that fit next to the weights, the workspace and the batch's states.
    pub max_cached_tokens: u64,
    /// Largest batch that fits at this context (uniform batches only).
    pub max_batch: Option<u64>,
    /// The basis of `fits` and `max_batch`: this step.
    pub fit_basis: FitBasis,
    /// Cache bytes of one sequence at this context (uniform batches only; windows applied;
    /// with its recurrent state).
    pub kv_bytes_per_sequence: Option<f64>,
}

/// The `kv` report.
#[derive(Debug, Clone, Serialize)]
pub struct KvReport {
    /// Inputs.
    pub inputs: Inputs,
    /// The numbers.
    #[serde(flatten)]
    pub row: KvRow,
    /// One GPU's memory, bytes (`capacity_bytes`, under the name every report gives it).
    pub gpu_memory_bytes: f64,
    /// When the step does not fit: the `plan` command that searches for a layout that does.
    pub plan_command: Option<String>,
}

impl KvReport {
    /// Build for a scenario with `reserve_bytes` held back.
    pub fn new(sc: &Scenario, reserve_bytes: f64) -> KvReport {
        let c = Crossover::of(sc);
        let fit = Fit::step(sc, reserve_bytes);
        let fp = fit.footprint;
        let uniform = match sc.workload.contexts {
            Contexts::Uniform { tokens, .. } => Some(tokens),
            Contexts::Mix(_) => None,
        };
        let view = crate::fit::FitView::of(sc, &fit);
        let state_per_sequence = sc.model.state_bytes_per_sequence(sc.workload.activations);
        let batch = sc.workload.contexts.batch();
        let beside_states = max_cached_tokens(sc, reserve_bytes)
            .saturating_sub(batch.saturating_mul(llm_ledger_core::memory::state_tokens_per_sequence(sc)));
        KvReport {
            inputs: Inputs::of(sc),
            gpu_memory_bytes: view.gpu_memory_bytes,
            plan_command: view.plan_command,
            row: KvRow {
                kv_bytes_per_token: c.kv_bytes_per_token,
                weight_bytes: c.weight_bytes,
                crossover_tokens: c.crossover_tokens,
                cached_tokens: c.cached_tokens,
                kv_read_bytes: c.kv_read_bytes,
                kv_to_weight_ratio: c.kv_to_weight_ratio,
                side: c.side.name(),
                state_bytes_per_sequence: state_per_sequence,
                state_read_bytes: c.state_read_bytes,
                state_cache_bytes: fp.state_bytes,
                weight_memory_bytes: fp.weight_bytes,
                kv_cache_bytes: fp.kv_cache_bytes,
                workspace_bytes: fp.workspace_bytes,
                memory_bytes: fp.memory_bytes,
                capacity_bytes: fp.capacity_bytes,
                reserve_bytes: fp.reserve_bytes,
                fits: fp.fits,
                max_cached_tokens: beside_states,
                max_batch: fit.max_batch,
                fit_basis: fit.basis,
                kv_bytes_per_sequence: uniform
                    .map(|t| kv_bytes_per_sequence(&sc.model, sc.workload.kv, sc.workload.activations, t as f64)),
            },
        }
    }
}

impl Report for KvReport {
    type CsvRow = KvRow;

    fn csv_rows(&self) -> Vec<KvRow> {
        vec![self.row.clone()]
    }

    fn human(&self) -> HumanTable {
        let r = &self.row;
        let tokens = |v: f64| human::count(v.round() as u64);
        let mut facts = vec![
            (
                "KV per token",
                format!(
                    "{} ({} B, KV {})",
                    human::bytes(r.kv_bytes_per_token),
                    human::count(r.kv_bytes_per_token as u64),
                    self.inputs.kv
                ),
            ),
            ("weights read per step", human::bytes(r.weight_bytes)),
        ];
        let hybrid = r.state_bytes_per_sequence > 0.0;
        if hybrid {
            facts.push((
                "state per sequence",
                format!(
                    "{} however long the sequence ({} read and written back every step)",
                    human::bytes(r.state_bytes_per_sequence),
                    human::bytes(r.state_read_bytes)
                ),
            ));
        }
        facts.extend([
            ("crossover", format!("{} cached tokens", tokens(r.crossover_tokens))),
            (
                "this workload",
                format!(
                    "{} cached tokens, {} reads {} weight reads: {} the crossover",
                    tokens(r.cached_tokens),
                    if hybrid { "KV + state" } else { "KV" },
                    human::ratio(r.kv_to_weight_ratio),
                    r.side
                ),
            ),
        ]);
        if let Some(s) = r.kv_bytes_per_sequence {
            facts.push((if hybrid { "KV + state per sequence" } else { "KV per sequence" }, human::bytes(s)));
        }
        facts.extend([
            ("KV cache", human::bytes(r.kv_cache_bytes - r.state_cache_bytes)),
            (
                "memory",
                if hybrid {
                    format!(
                        "{} = weights {} + KV {} + state {} + workspace {}",
                        human::bytes(r.memory_bytes),
                        human::bytes(r.weight_memory_bytes),
                        human::bytes(r.kv_cache_bytes - r.state_cache_bytes),
                        human::bytes(r.state_cache_bytes),
                        human::bytes(r.workspace_bytes)
                    )
                } else {
                    format!(
                        "{} = weights {} + KV {} + workspace {}",
                        human::bytes(r.memory_bytes),
                        human::bytes(r.weight_memory_bytes),
                        human::bytes(r.kv_cache_bytes),
                        human::bytes(r.workspace_bytes)
                    )
                },
            ),
            (
                "available",
                format!(
                    "{} ({} − {} reserve)",
                    human::bytes(r.capacity_bytes - r.reserve_bytes),
                    human::bytes(r.capacity_bytes),
                    human::bytes(r.reserve_bytes)
                ),
            ),
            ("fits", yes_no(r.fits)),
            ("capacity", format!("{} cached tokens", human::count(r.max_cached_tokens))),
        ]);
        if let (Some(b), Some(c)) = (r.max_batch, self.inputs.ctx) {
            facts.push(("max batch", format!("{} sequences at {} tokens", human::count(b), human::count(c))));
        }
        facts_table(
            vec![self.inputs.headline()],
            facts,
            if hybrid {
                vec![
                    "crossover = (weight bytes − state bytes read per step) ÷ KV bytes per token: the batch's recurrent states are read every step whatever the context, and only the attention layers' KV grows with it".into(),
                    "capacity = (capacity − reserve − weights − workspace − the batch's states) ÷ KV bytes per token".into(),
                    r.fit_basis.rule(self.inputs.counting).into(),
                ]
            } else {
                vec![
                    "crossover = weight bytes read per step ÷ KV bytes per token (the reference calculator's rule); above it every extra sequence is paid in full".into(),
                    "capacity = (capacity − reserve − weights − workspace) ÷ KV bytes per token".into(),
                    r.fit_basis.rule(self.inputs.counting).into(),
                ]
            }
            .into_iter()
            .chain(self.plan_command.as_deref().map(crate::fit::hint))
            .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Format;
    use llm_ledger_core::testing::scenario;

    fn report(counting: &str, batch: &str, ctx: &str) -> KvReport {
        KvReport::new(&scenario(&[("counting", counting), ("batch", batch), ("ctx", ctx)]), 2e9)
    }

    #[test]
    fn kv_table_seed() {
        insta::assert_snapshot!(report("seed", "64", "2048").render(Format::Table).unwrap());
    }

    #[test]
    fn kv_json_has_the_stable_keys() {
        let v: serde_json::Value =
            serde_json::from_str(&report("full", "1", "2048").render(Format::Json).unwrap()).unwrap();
        for k in ["kv_bytes_per_token", "weight_bytes", "crossover_tokens", "max_cached_tokens"] {
            assert!(v[k].is_number(), "{k}");
        }
        assert_eq!(v["kv_bytes_per_token"], 131072.0);
        assert_eq!(v["side"], "below");
    }
}
