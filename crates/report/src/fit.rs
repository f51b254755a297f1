//! "Does it fit", as every report that prints a time for a scenario says it: the JSON fields
//! [`FitView`] (`fits`, `memory_bytes`, `gpu_memory_bytes`, `plan_command`) and the footer lines
//! of `FitView::footer`. The answer is the core's one rule ([`Fit`]: weights + KV cache +
//! workspace ≤ GPU memory − reserve, on the fullest GPU of a TP/PP/EP layout); this module only
//! words it, and names the `plan` command that searches for a layout that fits when it does not.

use crate::human;
use llm_ledger_core::memory::{Fit, Footprint};
use llm_ledger_core::{Contexts, Phase, Precision, Scenario};
use serde::Serialize;

/// The bound on the time per output token of the suggested `plan` command, milliseconds: an
/// interactive decode speed (20 tokens/s per sequence), for the user to change.
pub const PLAN_HINT_TPOT_MS: u32 = 50;

/// Whether a scenario fits, for a report's JSON (flattened into it: the keys are top-level).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitView {
    /// `memory_bytes ≤ gpu_memory_bytes − reserve` (on the fullest GPU of a layout).
    pub fits: bool,
    /// Weights + KV cache + workspace on the fullest GPU, bytes.
    pub memory_bytes: f64,
    /// One GPU's memory (the vendor's label), bytes.
    pub gpu_memory_bytes: f64,
    /// When it does not fit: the `plan` command line that searches for a layout that does
    /// (`null` when it fits).
    pub plan_command: Option<String>,
}

impl FitView {
    /// The view of `fit`, the answer for `sc`.
    pub fn of(sc: &Scenario, fit: &Fit) -> FitView {
        FitView::of_footprint(sc, &fit.footprint)
    }

    /// The view of one footprint of `sc` (a step's).
    pub fn of_footprint(sc: &Scenario, f: &Footprint) -> FitView {
        FitView {
            fits: f.fits,
            memory_bytes: f.memory_bytes,
            gpu_memory_bytes: f.capacity_bytes,
            plan_command: (!f.fits).then(|| plan_command(sc)),
        }
    }

    /// The `plan` line alone, when it does not fit (for reports that show the memory already).
    pub fn hint(&self) -> Option<String> {
        self.plan_command.as_deref().map(hint)
    }
}

/// A step's fit with the footprint that decided it, for reports that print no memory of their own
/// (`ledger`, `measure`, `zoom`): the JSON fields and the footer lines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepFit {
    /// The JSON fields.
    #[serde(flatten)]
    pub view: FitView,
    /// The footprint that decided.
    #[serde(skip)]
    pub footprint: Footprint,
    /// Whether the scenario runs on several GPUs (the footprint is then one GPU's).
    #[serde(skip)]
    pub parallel: bool,
}

impl StepFit {
    /// One step of `sc` as given, with `reserve_bytes` held back ([`Fit::step`]).
    pub fn of(sc: &Scenario, reserve_bytes: f64) -> StepFit {
        let fit = Fit::step(sc, reserve_bytes);
        StepFit { view: FitView::of(sc, &fit), footprint: fit.footprint, parallel: !sc.parallel.is_single() }
    }

    /// The footer: one line with the memory and the answer; when it does not fit, a second line
    /// with the `plan` command.
    pub fn footer(&self) -> Vec<String> {
        let f = &self.footprint;
        let whose = if self.parallel { "memory on the fullest GPU" } else { "memory" };
        let answer = if self.view.fits {
            "fits".to_string()
        } else {
            "does NOT fit: the times are what the step would take if it did".to_string()
        };
        // A hybrid's sequences hold a state of constant size beside their KV.
        let cache = if f.state_bytes > 0.0 {
            format!("KV {} + state {}", human::bytes(f.kv_cache_bytes - f.state_bytes), human::bytes(f.state_bytes))
        } else {
            format!("KV {}", human::bytes(f.kv_cache_bytes))
        };
        let mut lines = vec![format!(
            "{whose}: {} (weights {} + {cache} + workspace {}) of {} available ({} − {} reserve): {answer}",
            human::bytes(f.memory_bytes),
            human::bytes(f.weight_bytes),
            human::bytes(f.workspace_bytes),
            human::bytes(f.available_bytes),
            human::bytes(f.capacity_bytes),
            human::bytes(f.reserve_bytes),
        )];
        lines.extend(self.view.hint());
        lines
    }
}

/// The footer line that names the `plan` command `command`.
pub fn hint(command: &str) -> String {
    format!("find a layout that fits (per GPU, under TP/PP/EP): `{command}`")
}

/// The `plan` command that searches layouts for `sc`'s model on its GPU: the model and the GPU,
/// the weight and KV precisions and the cached context where they are not the defaults, and a
/// bound of [`PLAN_HINT_TPOT_MS`] on the time per output token.
pub fn plan_command(sc: &Scenario) -> String {
    let mut words = vec!["llm-ledger plan".to_string(), format!("--model {}", quoted(&sc.model.name))];
    words.push(format!("--gpu {}", quoted(&sc.gpu.name)));
    // A mix of precisions per module (a checkpoint's) is the model's own: plan reads it again.
    let weights = sc.weights.describe();
    if !weights.contains(' ') && weights != Precision::Bf16.name() {
        words.push(format!("--weights {weights}"));
    }
    if sc.workload.kv != Precision::Bf16 {
        words.push(format!("--kv {}", sc.workload.kv.name()));
    }
    if let (Phase::Decode, Contexts::Uniform { tokens, .. }) = (sc.workload.phase, &sc.workload.contexts) {
        if *tokens != llm_ledger_core::scenario::DEFAULT_CTX {
            words.push(format!("--ctx {tokens}"));
        }
    }
    words.push(format!("--tpot-ms {PLAN_HINT_TPOT_MS}"));
    words.join(" ")
}

/// A word for a shell command line: as is when it holds only characters a shell leaves alone,
/// else in single quotes.
fn quoted(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:@+,=".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_ledger_core::testing::scenario;

    #[test]
    fn a_model_that_fits_has_no_plan_command() {
        let sc = scenario(&[]);
        let f = StepFit::of(&sc, 2e9);
        assert!(f.view.fits && f.view.plan_command.is_none());
        assert_eq!(f.view.gpu_memory_bytes, 80e9);
        assert_eq!(f.footer().len(), 1);
        assert!(f.footer()[0].ends_with("of 78.0 GB available (80.0 GB − 2.00 GB reserve): fits"), "{:?}", f.footer());
    }

    #[test]
    fn a_model_that_does_not_fit_names_the_plan_command_with_its_inputs() {
        let sc = scenario(&[("model", "llama-3.1-405b"), ("kv", "fp8"), ("ctx", "8192")]);
        let f = StepFit::of(&sc, 2e9);
        assert!(!f.view.fits);
        assert!(f.view.memory_bytes > 800e9, "{}", f.view.memory_bytes);
        assert_eq!(
            f.view.plan_command.as_deref(),
            Some("llm-ledger plan --model llama-3.1-405b --gpu h100-sxm --kv fp8 --ctx 8192 --tpot-ms 50")
        );
        let footer = f.footer();
        assert!(footer[0].contains("does NOT fit"), "{footer:?}");
        assert!(footer[1].contains("`llm-ledger plan --model llama-3.1-405b"), "{footer:?}");
    }

    #[test]
    fn words_a_shell_would_split_are_quoted() {
        assert_eq!(quoted("my models/config.json"), "'my models/config.json'");
        assert_eq!(quoted("it's"), r"'it'\''s'");
        assert_eq!(quoted("org/name"), "org/name");
    }
}
