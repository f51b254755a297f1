//! Levers (the reference calculator: "Long context changes the mix" and "Weight quantisation in the ledger"):
//! the same workload re-run with one change each, and what it buys.
//!
//! | lever | inputs it sets ([`Lever::inputs`]) | side |
//! |---|---|---|
//! | `w4a16` | `weights = int4` (0.5 B, scales ignored, the reference calculator's convention), `gemm_activations` = the 16-bit activation format: math in 16 bits | weights |
//! | `w8a16` | `weights = int8`, `gemm_activations` 16-bit | weights |
//! | `fp8` | W8A8: `weights = fp8`, `activations = fp8`, `gemm_activations = fp8`: GEMMs at the fp8 peak where the GPU has one | weights |
//! | `batch` | `batch` = the largest that fits at the same context (uniform batches only) | weights |
//! | `kv-fp8`, `kv-int8` | `kv = fp8`, `int8` (halves attention bytes at bf16) | cache |
//! | `kv-heads/2` | half the KV heads (GQA factor 2; a model change that needs retraining or uptraining, no input) | cache |
//! | `attend-2048` | `attend = 2048`: each attention layer reads and keeps at most [`ATTEND_TOKENS`] cached tokens per sequence (a window or eviction; sparse attention reads as few but keeps the whole cache) | cache |
//!
//! Every lever names its price in quality ([`Lever::quality`]), in the reference calculator's
//! words where it has them: an fp8 KV cache "evaluate quality first"; windows, eviction and sparse
//! attention "change model behaviour"; fewer KV heads need retraining; quantised weights cost
//! accuracy to be measured on the task.
//!
//! A lever is exactly the scenario those inputs resolve to with the rest unchanged (the rules of
//! [`crate::scenario::ScenarioRequest::resolve`]: `weights` stores every GEMM weight in that
//! format, the embedding and routers in its unquantised form, and replaces the checkpoint's own
//! formats), so its row is the ledger of that command.
//!
//! Each lever's effect is measured per output token: `time per token = step time ÷ tokens per
//! step`, so a precision lever (same tokens) saves what it saves in step time and the batch lever
//! saves through more tokens per step. The saving in time per token is the saving in cost per
//! token at a fixed GPU price. Under the roofline (and the reference calculator) dequantisation
//! work is not counted; the measured clock charges it ([`crate::clock::dequant_s`]).

use crate::crossover::Side;
use crate::ledger::summarise;
use crate::memory::{Fit, FitBasis, WeightFootprint};
use crate::model::{Attention, ModelSpec, WeightPrecisions};
use crate::precision::Precision;
use crate::scenario::Scenario;
use crate::workload::Contexts;
use serde::Serialize;
use std::sync::Arc;

/// One lever.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lever {
    /// 4-bit weights, 16-bit math.
    W4a16,
    /// int8 weights, 16-bit math.
    W8a16,
    /// fp8 weights and activations.
    Fp8,
    /// The largest batch that fits.
    Batch,
    /// fp8 KV cache.
    KvFp8,
    /// int8 KV cache.
    KvInt8,
    /// Half the KV heads.
    KvHeadsHalf,
    /// At most [`ATTEND_TOKENS`] cached tokens read per sequence by each attention layer.
    Attend,
}

/// The cached tokens the evict-or-sparsify lever lets each attention layer read: 2,048, the
/// top-k of DeepSeek Sparse Attention in production (DeepSeek-V3.2's `index_topk`,
/// `crates/core/tests/data/configs/2026/`); any other bound is the `attend` input.
pub const ATTEND_TOKENS: u64 = 2048;

impl Lever {
    /// Every lever, in table order.
    pub const ALL: [Lever; 8] = [
        Lever::W4a16,
        Lever::W8a16,
        Lever::Fp8,
        Lever::Batch,
        Lever::KvFp8,
        Lever::KvInt8,
        Lever::KvHeadsHalf,
        Lever::Attend,
    ];

    /// Short name (`w4a16`, `kv-fp8`, …).
    pub fn name(self) -> &'static str {
        match self {
            Lever::W4a16 => "w4a16",
            Lever::W8a16 => "w8a16",
            Lever::Fp8 => "fp8",
            Lever::Batch => "batch",
            Lever::KvFp8 => "kv-fp8",
            Lever::KvInt8 => "kv-int8",
            Lever::KvHeadsHalf => "kv-heads/2",
            Lever::Attend => "attend-2048",
        }
    }

    /// What it changes, in words.
    pub fn description(self) -> &'static str {
        match self {
            Lever::W4a16 => "4-bit weights, 16-bit math (W4A16)",
            Lever::W8a16 => "int8 weights, 16-bit math (W8A16)",
            Lever::Fp8 => "fp8 weights and activations (W8A8)",
            Lever::Batch => "the largest batch that fits",
            Lever::KvFp8 => "fp8 KV cache",
            Lever::KvInt8 => "int8 KV cache",
            Lever::KvHeadsHalf => "half the KV heads (GQA ×2)",
            Lever::Attend => "at most 2,048 cached tokens read (window, eviction, sparse)",
        }
    }

    /// Its price in quality, in words (the reference calculator's where it has them).
    pub fn quality(self) -> &'static str {
        match self {
            Lever::W4a16 => "costs accuracy, 4 bits the most: measure it",
            Lever::W8a16 | Lever::Fp8 => "costs a little accuracy: measure it",
            Lever::Batch => "none (each step takes longer)",
            Lever::KvFp8 | Lever::KvInt8 => "evaluate quality first",
            Lever::KvHeadsHalf => "needs retraining",
            Lever::Attend => "changes model behaviour",
        }
    }

    /// Weight side or cache side (which side of the crossover it pays on).
    pub fn side(self) -> Side {
        match self {
            Lever::W4a16 | Lever::W8a16 | Lever::Fp8 | Lever::Batch => Side::Below,
            Lever::KvFp8 | Lever::KvInt8 | Lever::KvHeadsHalf | Lever::Attend => Side::Above,
        }
    }

    /// The scenario inputs this lever sets, as `(input, value)` pairs of the scenario's text
    /// inputs (`weights`, `activations`, `gemm_activations`, `kv`, `batch`), for `sc`; empty for
    /// a change no input makes (`kv-heads/2`). [`Lever::apply`] is these inputs resolved.
    pub fn inputs(self, sc: &Scenario, reserve_bytes: f64) -> Vec<(&'static str, String)> {
        let sixteen = || {
            let a = sc.workload.activations;
            if a.bytes() == 2.0 { a } else { Precision::Bf16 }.name()
        };
        match self {
            Lever::W4a16 => vec![("weights", "int4".into()), ("gemm_activations", sixteen())],
            Lever::W8a16 => vec![("weights", "int8".into()), ("gemm_activations", sixteen())],
            Lever::Fp8 => {
                vec![("weights", "fp8".into()), ("activations", "fp8".into()), ("gemm_activations", "fp8".into())]
            }
            Lever::Batch => {
                vec![("batch", Fit::step(sc, reserve_bytes).max_batch.unwrap_or(0).to_string())]
            }
            Lever::KvFp8 => vec![("kv", "fp8".into())],
            Lever::KvInt8 => vec![("kv", "int8".into())],
            Lever::KvHeadsHalf => Vec::new(),
            Lever::Attend => vec![("attend", ATTEND_TOKENS.to_string())],
        }
    }

    /// The scenario with this lever pulled, or why it does not apply.
    pub fn apply(self, sc: &Scenario, reserve_bytes: f64) -> std::result::Result<Scenario, String> {
        let mut s = sc.clone();
        let weights = |p: Precision| {
            let w = WeightPrecisions::uniform(p);
            let now = WeightFootprint::of(&sc.model, &sc.weights).total_bytes();
            if WeightFootprint::of(&sc.model, &w).total_bytes() < now {
                Ok(w)
            } else {
                Err(format!("weights are already stored in {} or fewer bytes", p.bytes()))
            }
        };
        let kv = |p: Precision| {
            if p.bytes() < sc.workload.kv.bytes() {
                Ok(p)
            } else {
                Err(format!("the KV cache is already {}", sc.workload.kv))
            }
        };
        if self == Lever::Attend && sc.workload.contexts.max_tokens() <= ATTEND_TOKENS {
            return Err(format!(
                "every context ({} tokens at most) is within the {} cached tokens it would attend to",
                crate::error::grouped(sc.workload.contexts.max_tokens()),
                crate::error::grouped(ATTEND_TOKENS)
            ));
        }
        if self == Lever::Batch {
            let Contexts::Uniform { batch, .. } = sc.workload.contexts else {
                return Err("only for a uniform batch (`batch` and `ctx`)".into());
            };
            let most = Fit::step(sc, reserve_bytes).max_batch.unwrap_or(0);
            if most <= batch {
                return Err(format!("batch {batch} is already the largest that fits ({most})"));
            }
        }
        for (input, value) in self.inputs(sc, reserve_bytes) {
            let p = || value.parse::<Precision>().map_err(|e| e.to_string());
            match input {
                "weights" => s.weights = weights(p()?)?,
                "activations" => s.workload.activations = p()?,
                "gemm_activations" => s.workload.gemm_activations = p()?,
                "kv" => s.workload.kv = kv(p()?)?,
                "attend" => {
                    let limited = crate::scenario::attention_limited(&sc.model, &value).map_err(|_| {
                        format!(
                            "every attention layer already reads at most {value} cached tokens, or the model has none"
                        )
                    })?;
                    s.model = Arc::new(limited);
                }
                "batch" => {
                    let tokens = sc.workload.contexts.max_tokens();
                    let batch = value.parse().map_err(|_| format!("batch {value}"))?;
                    s.workload.contexts = Contexts::Uniform { batch, tokens };
                }
                other => return Err(format!("lever input `{other}`")),
            }
        }
        if self == Lever::KvHeadsHalf {
            s.model = Arc::new(halve_kv_heads(&sc.model)?);
        }
        Ok(s)
    }
}

/// The model with every standard-attention layer's KV heads halved.
fn halve_kv_heads(m: &ModelSpec) -> std::result::Result<ModelSpec, String> {
    let mut layers = m.layers().to_vec();
    let mut changed = false;
    for l in &mut layers {
        if let Attention::Standard(a) = &mut l.attention {
            if a.kv_heads < 2 || a.kv_heads % 2 != 0 {
                return Err(format!("{} KV heads cannot be halved", a.kv_heads));
            }
            a.kv_heads /= 2;
            changed = true;
        }
    }
    if !changed {
        return Err("MLA caches a latent, not KV heads".into());
    }
    m.with_layers(format!("{} (kv heads ÷2)", m.name), layers).map_err(|e| e.to_string())
}

/// One workload's step, summarised for comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Outcome {
    /// Sequences.
    pub batch: u64,
    /// Step time, seconds.
    pub step_time_s: f64,
    /// Tokens per second.
    pub tokens_per_s: f64,
    /// Step time ÷ tokens per step, seconds (∝ cost per token).
    pub time_per_token_s: f64,
    /// Weights + KV + workspace, bytes.
    pub memory_bytes: f64,
    /// Fits the GPU after the reserve ([`FitBasis::Step`]).
    pub fits: bool,
}

impl Outcome {
    /// Evaluate a scenario.
    pub fn of(sc: &Scenario, reserve_bytes: f64) -> Outcome {
        let s = summarise(sc);
        let fp = Fit::step(sc, reserve_bytes).footprint;
        Outcome {
            batch: sc.workload.contexts.batch(),
            step_time_s: s.step_time_s(),
            tokens_per_s: s.tokens_per_s(),
            time_per_token_s: s.step_time_s() / s.tokens,
            memory_bytes: fp.memory_bytes,
            fits: fp.fits,
        }
    }
}

/// One lever pulled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeverOutcome {
    /// The lever.
    pub lever: Lever,
    /// Its short name.
    pub name: &'static str,
    /// What it changes.
    pub description: &'static str,
    /// Its price in quality ([`Lever::quality`]).
    pub quality: &'static str,
    /// The scenario inputs it sets ([`Lever::inputs`]): the ledger of the scenario with these
    /// inputs is this row.
    pub inputs: Vec<(&'static str, String)>,
    /// Which side of the crossover it pays on.
    pub side: Side,
    /// The workload with the lever pulled.
    pub outcome: Outcome,
    /// Baseline step time ÷ lever step time.
    pub speedup: f64,
    /// Step time saved, seconds (negative when the step gets longer, as with a bigger batch).
    pub step_time_saved_s: f64,
    /// 1 − (time per token with the lever ÷ without): the fraction of cost per token saved.
    pub cost_saving: f64,
}

/// A lever that does not apply to this scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    /// Its short name.
    pub name: &'static str,
    /// Why.
    pub reason: String,
}

/// Every lever against one baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeverSet {
    /// The basis of every `fits` and of the batch lever: this step ([`FitBasis::Step`]).
    pub fit_basis: FitBasis,
    /// The workload as given.
    pub baseline: Outcome,
    /// The levers that apply, in [`Lever::ALL`] order.
    pub levers: Vec<LeverOutcome>,
    /// The levers that do not apply, with the reason.
    pub skipped: Vec<Skipped>,
}

impl LeverSet {
    /// Pull each lever in turn.
    pub fn of(sc: &Scenario, reserve_bytes: f64) -> LeverSet {
        let baseline = Outcome::of(sc, reserve_bytes);
        let mut levers = Vec::new();
        let mut skipped = Vec::new();
        for lever in Lever::ALL {
            match lever.apply(sc, reserve_bytes) {
                Ok(s) => {
                    let o = Outcome::of(&s, reserve_bytes);
                    levers.push(LeverOutcome {
                        lever,
                        name: lever.name(),
                        description: lever.description(),
                        quality: lever.quality(),
                        inputs: lever.inputs(sc, reserve_bytes),
                        side: lever.side(),
                        speedup: baseline.step_time_s / o.step_time_s,
                        step_time_saved_s: baseline.step_time_s - o.step_time_s,
                        cost_saving: 1.0 - o.time_per_token_s / baseline.time_per_token_s,
                        outcome: o,
                    });
                }
                Err(reason) => skipped.push(Skipped { name: lever.name(), reason }),
            }
        }
        LeverSet { fit_basis: FitBasis::Step, baseline, levers, skipped }
    }

    /// The outcome of one lever, if it applied.
    pub fn get(&self, lever: Lever) -> Option<&LeverOutcome> {
        self.levers.iter().find(|l| l.lever == lever)
    }

    /// The levers ranked by cost per token saved, best first.
    pub fn ranked(&self) -> Vec<&LeverOutcome> {
        let mut v: Vec<&LeverOutcome> = self.levers.iter().collect();
        v.sort_by(|a, b| b.cost_saving.total_cmp(&a.cost_saving));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(model: &str, counting: &str, batch: u64, ctx: u64) -> Scenario {
        let (b, c) = (batch.to_string(), ctx.to_string());
        crate::testing::scenario(&[("model", model), ("counting", counting), ("batch", &b), ("ctx", &c)])
    }

    fn ms(t: f64) -> String {
        format!("{:.1}", t * 1e3)
    }

    #[test]
    fn seed_levers() {
        let set = |b, c| LeverSet::of(&sc("llama-3-8b", "seed", b, c), 2e9);
        // "batch 8 at 32k drops from 18.4 ms to 12.0 ms per step; batch 64 at 2k drops from 12.0 ms to 8.8 ms".
        let long = set(8, 32768);
        assert_eq!(ms(long.baseline.step_time_s), "18.4");
        assert_eq!(ms(long.get(Lever::KvFp8).unwrap().outcome.step_time_s), "12.0");
        let mid = set(64, 2048);
        assert_eq!(ms(mid.baseline.step_time_s), "12.0");
        assert_eq!(ms(mid.get(Lever::KvFp8).unwrap().outcome.step_time_s), "8.8");
        // "W4A16 … batch 1 drops from 5.7 ms to about 1.5 ms … At batch 64 … from 12.0 ms to 8.0 ms".
        let one = set(1, 2048);
        assert_eq!(ms(one.baseline.step_time_s), "5.7");
        assert_eq!(ms(one.get(Lever::W4a16).unwrap().outcome.step_time_s), "1.5");
        assert_eq!(ms(mid.get(Lever::W4a16).unwrap().outcome.step_time_s), "8.0");
        // "close to the full 4x" at batch 1.
        assert!(one.get(Lever::W4a16).unwrap().speedup > 3.7);
        // int8 KV stores the same bytes as fp8 and takes the same time.
        assert_eq!(
            long.get(Lever::KvInt8).unwrap().outcome.step_time_s,
            long.get(Lever::KvFp8).unwrap().outcome.step_time_s
        );
    }

    #[test]
    fn ranking_follows_the_crossover() {
        // Batch 1 × 2k is far below the crossover: a weight lever wins; 8 × 32k is above: a cache lever
        // beats every precision lever on the weights.
        let below = LeverSet::of(&sc("llama-3-8b", "seed", 1, 2048), 2e9);
        assert_eq!(below.ranked()[0].side, Side::Below);
        let above = LeverSet::of(&sc("llama-3-8b", "seed", 8, 32768), 2e9);
        let kv = above.get(Lever::KvFp8).unwrap().cost_saving;
        assert!(kv > above.get(Lever::W4a16).unwrap().cost_saving);
    }

    #[test]
    fn halving_kv_heads_halves_the_cache_per_token() {
        let s = sc("llama-3-8b", "seed", 8, 32768);
        let half = Lever::KvHeadsHalf.apply(&s, 2e9).unwrap();
        assert_eq!(half.model.kv_elements_per_token() * 2, s.model.kv_elements_per_token());
        // Halving KV heads or halving KV bytes remove the same attention bytes; K/V projection
        // weights shrink too, so the head lever is slightly faster.
        let set = LeverSet::of(&s, 2e9);
        assert!(
            set.get(Lever::KvHeadsHalf).unwrap().outcome.step_time_s
                < set.get(Lever::KvFp8).unwrap().outcome.step_time_s
        );
    }

    #[test]
    fn levers_that_do_not_apply_say_why() {
        let mut s = sc("llama-3-8b", "full", 1, 2048);
        s.workload.kv = Precision::Fp8;
        s.weights = WeightPrecisions::uniform(Precision::Int4);
        let set = LeverSet::of(&s, 2e9);
        let names: Vec<&str> = set.skipped.iter().map(|k| k.name).collect();
        assert_eq!(names, ["w4a16", "w8a16", "fp8", "kv-fp8", "kv-int8", "attend-2048"]);
        assert_eq!(set.skipped[3].reason, "the KV cache is already fp8");
        let mla = LeverSet::of(&sc("deepseek-v2-lite", "full", 1, 2048), 2e9);
        assert!(mla.skipped.iter().any(|k| k.name == "kv-heads/2" && k.reason.contains("latent")));
    }

    #[test]
    fn each_lever_is_the_ledger_of_the_inputs_it_names() {
        // The lever's row is the scenario its inputs resolve to, under both clocks, on a dense
        // model, an fp8 MoE checkpoint (its own GEMM-input format replaced) and a GPU without fp8.
        for base in [
            vec![("batch", "1024"), ("ctx", "128"), ("time_model", "roofline")],
            vec![("batch", "256"), ("ctx", "2048")],
            vec![("model", "deepseek-v3"), ("gpu", "h200"), ("batch", "8")],
            vec![("model", "qwen3-30b-a3b"), ("gpu", "a100-80gb-sxm"), ("batch", "64"), ("activations", "fp16")],
            vec![("model", "qwen3.5-27b"), ("batch", "4"), ("ctx", "16384")],
        ] {
            let sc = crate::testing::scenario(&base);
            for lever in LeverSet::of(&sc, 2e9).levers {
                if lever.inputs.is_empty() {
                    continue;
                }
                let mut pairs: Vec<(&str, &str)> =
                    base.iter().copied().filter(|(k, _)| !lever.inputs.iter().any(|(i, _)| i == k)).collect();
                pairs.extend(lever.inputs.iter().map(|(k, v)| (*k, v.as_str())));
                let run = summarise(&crate::testing::scenario(&pairs));
                assert_eq!(lever.outcome.step_time_s, run.step_time_s(), "{base:?} {}: {pairs:?}", lever.name);
            }
        }
        // W8A8 at batch 1024 × 128 on the roofline runs at the fp8 peak: faster than bf16.
        let sc = crate::testing::scenario(&[("batch", "1024"), ("ctx", "128"), ("time_model", "roofline")]);
        let set = LeverSet::of(&sc, 2e9);
        assert!(set.get(Lever::Fp8).unwrap().speedup > 1.3, "{:?}", set.get(Lever::Fp8));
    }

    #[test]
    fn attending_to_2048_tokens_reads_and_keeps_2048_per_layer() {
        // Llama 3 8B, batch 8 × 32,768 under seed counting: each of 32 layers reads 2 (K, V) ×
        // 8 KV heads × 128 × 2 B = 4,096 B per cached token; the window reads 2,048 of them per
        // sequence instead of 32,768 (the new token's own K/V is counted by neither, seed).
        let s = sc("llama-3-8b", "seed", 8, 32768);
        let set = LeverSet::of(&s, 2e9);
        let attend = set.get(Lever::Attend).unwrap();
        assert_eq!(attend.inputs, [("attend", "2048".to_string())]);
        let lever = Lever::Attend.apply(&s, 2e9).unwrap();
        let kv_read = |sc: &Scenario| summarise(sc).cost.kv_read_bytes;
        assert_eq!(kv_read(&s), 32.0 * 8.0 * 32768.0 * 4096.0);
        assert_eq!(kv_read(&lever), 32.0 * 8.0 * 2048.0 * 4096.0);
        // The cache keeps 2,048 tokens per sequence: 8 × 2,048 × 131,072 B beside the weights.
        let kv_held = |o: &Outcome| o.memory_bytes - set.baseline.memory_bytes + 8.0 * 32768.0 * 131072.0;
        assert_eq!(kv_held(&attend.outcome), 8.0 * 2048.0 * 131072.0);
        assert!(attend.speedup > 2.5, "{attend:?}");
        // Within the bound at the default context, and on a model that reads fewer already.
        let short = LeverSet::of(&sc("llama-3-8b", "full", 1, 2048), 2e9);
        let why = &short.skipped.iter().find(|k| k.name == "attend-2048").unwrap().reason;
        assert_eq!(why, "every context (2,048 tokens at most) is within the 2,048 cached tokens it would attend to");
        // A window wider than the bound narrows to it (Mistral's 4,096).
        let mistral = LeverSet::of(&sc("mistral-7b", "full", 1, 32768), 2e9);
        assert!(mistral.get(Lever::Attend).unwrap().speedup > 1.0);
    }

    #[test]
    fn every_lever_states_its_price_in_quality() {
        for lever in Lever::ALL {
            assert!(!lever.quality().is_empty(), "{}", lever.name());
        }
        // The reference calculator's words where it has them.
        assert_eq!(Lever::KvFp8.quality(), "evaluate quality first");
        assert_eq!(Lever::Attend.quality(), "changes model behaviour");
        assert_eq!(Lever::KvHeadsHalf.quality(), "needs retraining");
        assert!(Lever::W4a16.quality().contains("accuracy"));
        let set = LeverSet::of(&sc("llama-3-8b", "full", 8, 32768), 2e9);
        assert!(set.levers.iter().all(|l| l.quality == l.lever.quality()));
    }

    #[test]
    fn changing_the_layers_keeps_the_rest_of_the_model() {
        // Halving a hybrid's KV heads halves its 16 attention layers' and keeps its vision tower,
        // draft layers and recurrent state.
        let s = sc("qwen3.5-27b", "full", 1, 8192);
        let half = Lever::KvHeadsHalf.apply(&s, 2e9).unwrap();
        assert_eq!(half.model.vision_params, s.model.vision_params);
        assert_eq!(half.model.mtp, s.model.mtp);
        assert_eq!(half.model.kv_bytes_per_token(Precision::Bf16) * 2.0, s.model.kv_bytes_per_token(Precision::Bf16));
        let act = s.workload.activations;
        assert_eq!(half.model.state_bytes_per_sequence(act), s.model.state_bytes_per_sequence(act));
    }

    #[test]
    fn the_batch_lever_trades_step_time_for_tokens() {
        let set = LeverSet::of(&sc("llama-3-8b", "full", 1, 2048), 2e9);
        let b = set.get(Lever::Batch).unwrap();
        assert!(b.outcome.batch > 100 && b.outcome.fits);
        assert!(b.step_time_saved_s < 0.0, "a bigger batch takes longer per step");
        assert!(b.cost_saving > 0.9, "but costs far less per token: {}", b.cost_saving);
    }
}
