//! The KV crossover (the reference calculator: "a clean crossover rule hiding in the ledger"): KV bytes read per
//! step exceed weight bytes read per step once the total cached tokens of the batch pass
//! `weight_bytes / kv_bytes_per_token` (≈114,500 for Llama 3 8B: 15.0 GB over 131,072 B).
//! Below it batching is nearly free; above it every additional sequence is paid in full.
//!
//! The weight total is the weight bytes the ledger reads in this step: under seed counting the
//! reference calculator's 15,009,316,864 B (every GEMM weight, no embedding table); under full counting also
//! the norm scales and the embedding rows the step gathers (15,009,857,536 B at batch 1). For an
//! MoE model it is the expected experts touched at this batch, so the crossover moves with the
//! batch. KV bytes per token ignore sliding windows (a windowed layer stops adding bytes past its
//! window, so such a model crosses later than the token count says); which side the workload is
//! on is decided by the ledger's own KV-read and weight bytes, which do account for windows.
//!
//! A hybrid model's recurrent layers read (and write back) a state of constant size per
//! sequence every step, however long the sequence: the cache side of the comparison is the KV
//! read plus the state read, so the crossover is where `batch × state + tokens × KV per token`
//! meets the weights, `crossover_tokens = (weight_bytes − state_read_bytes) ÷ kv_bytes_per_token`
//! at this batch (Qwen3.5-27B decoding one sequence: 154 MB of state against 55 GB of weights);
//! past it, a longer context costs only its full-attention layers' KV.

use crate::ledger::summarise;
use crate::limits::MAX_BATCH;
use crate::memory::{at_uniform, kv_bytes_per_token};
use crate::scenario::Scenario;
use serde::Serialize;

/// Which side of the crossover a workload is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// KV bytes ≤ weight bytes: weight-side levers pay (quantised weights, bigger batches).
    Below,
    /// KV bytes > weight bytes: cache-side levers pay (smaller KV dtype, fewer KV heads, shorter context).
    Above,
}

impl Side {
    /// `below` or `above`.
    pub fn name(self) -> &'static str {
        match self {
            Side::Below => "below",
            Side::Above => "above",
        }
    }
}

/// Where a workload sits relative to the crossover.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Crossover {
    /// KV-cache bytes per cached token across all layers, ignoring windows.
    pub kv_bytes_per_token: f64,
    /// Weight bytes read per step.
    pub weight_bytes: f64,
    /// `(weight_bytes − state_read_bytes) ÷ kv_bytes_per_token` (`weight_bytes ÷
    /// kv_bytes_per_token` without recurrent layers), at least 0.
    pub crossover_tokens: f64,
    /// Σ context tokens of the batch.
    pub cached_tokens: f64,
    /// KV bytes read per step by the ledger.
    pub kv_read_bytes: f64,
    /// Recurrent state bytes read per step by the ledger (0 without recurrent layers).
    pub state_read_bytes: f64,
    /// (kv_read_bytes + state_read_bytes) ÷ weight_bytes (1 at the crossover).
    pub kv_to_weight_ratio: f64,
    /// Below or above.
    pub side: Side,
}

impl Crossover {
    /// The crossover of the scenario's model and precisions, and where its workload sits.
    pub fn of(sc: &Scenario) -> Crossover {
        let s = summarise(sc);
        let per = kv_bytes_per_token(&sc.model, sc.workload.kv);
        let weight_bytes = s.cost.weight_bytes;
        let kv_read_bytes = s.cost.kv_read_bytes;
        let state_read_bytes = s.cost.state_read_bytes;
        let cache = kv_read_bytes + state_read_bytes;
        Crossover {
            kv_bytes_per_token: per,
            weight_bytes,
            crossover_tokens: if per > 0.0 { (weight_bytes - state_read_bytes).max(0.0) / per } else { f64::INFINITY },
            cached_tokens: sc.workload.contexts.total_tokens(),
            kv_read_bytes,
            state_read_bytes,
            kv_to_weight_ratio: if weight_bytes > 0.0 { cache / weight_bytes } else { f64::INFINITY },
            side: if cache > weight_bytes { Side::Above } else { Side::Below },
        }
    }
}

/// The batch of `ctx`-token sequences at which the step's KV bytes read reach its weight bytes
/// read (the reference calculator's crossover as a batch size: 114,512.6 tokens ÷ 2,048 = 55.9 for Llama 3 8B),
/// or `None` when no batch up to [`MAX_BATCH`] gets there (a context of 0, or every layer's window
/// below the weights).
///
/// The ratio `r(B) = kv_read_bytes(B) ÷ weight_bytes(B)` of [`Crossover::of`] at a uniform batch
/// `B × ctx` never falls as `B` grows (KV bytes grow in proportion to `B`; weight bytes are fixed,
/// or for MoE grow concavely with the experts touched), so the first whole batch with `r > 1` is
/// found by bisection, and the crossing is interpolated linearly between it and the batch before
/// (exact for a dense model, where `r` is linear in `B`): `B* = (B − 1) + (1 − r(B − 1)) ÷ (r(B) −
/// r(B − 1))`. Windows are accounted for, since `r` uses the ledger's own KV bytes.
pub fn crossover_batch(sc: &Scenario, ctx: u64) -> Option<f64> {
    if ctx == 0 {
        return None;
    }
    let ratio = |b: u64| Crossover::of(&at_uniform(sc, b, ctx)).kv_to_weight_ratio;
    if ratio(MAX_BATCH) <= 1.0 {
        return None;
    }
    // The last batch with r ≤ 1 (0 standing for none), then the first past it: r(MAX_BATCH) > 1.
    let lo = crate::bisect::last_true_in(0, MAX_BATCH, |b| ratio(b) <= 1.0);
    let hi = lo + 1;
    let r_hi = ratio(hi);
    let r_lo = if lo == 0 { 0.0 } else { ratio(lo) };
    Some(lo as f64 + (1.0 - r_lo) / (r_hi - r_lo))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(counting: &str, batch: &str, ctx: &str) -> Scenario {
        crate::testing::scenario(&[("counting", counting), ("batch", batch), ("ctx", ctx)])
    }

    #[test]
    fn seed_crossover_is_about_114_500_tokens() {
        // "KV bytes exceed weight bytes once the sum of context lengths … passes about 114,500":
        // 15,009,316,864 / 131,072 = 114,512.6.
        let c = Crossover::of(&sc("seed", "1", "2048"));
        assert_eq!(c.weight_bytes, 15_009_316_864.0);
        assert_eq!(c.kv_bytes_per_token, 131_072.0);
        assert_eq!(c.crossover_tokens, 15_009_316_864.0 / 131_072.0);
        assert_eq!((c.crossover_tokens / 100.0).round() * 100.0, 114_500.0);
        assert_eq!(c.side, Side::Below);
        // Full counting adds the norm scales (32·2 + 1 = 65 × 8,192 B) and one embedding row (8,192 B).
        let f = Crossover::of(&sc("full", "1", "2048"));
        assert_eq!(f.weight_bytes, 15_009_316_864.0 + 66.0 * 8192.0);
        assert_eq!((f.crossover_tokens / 100.0).round() * 100.0, 114_500.0);
    }

    #[test]
    fn the_side_flips_where_kv_bytes_pass_weight_bytes() {
        // 55 × 2,048 = 112,640 tokens: below; 56 × 2,048 = 114,688: above.
        assert_eq!(Crossover::of(&sc("seed", "55", "2048")).side, Side::Below);
        assert_eq!(Crossover::of(&sc("seed", "56", "2048")).side, Side::Above);
        let c = Crossover::of(&sc("seed", "64", "2048"));
        assert_eq!(c.cached_tokens, 131_072.0);
        // 64 × 2,048 × 131,072 = 17,179,869,184 KV bytes; 17.18 / 15.01 = 1.145.
        assert_eq!(c.kv_read_bytes, 17_179_869_184.0);
        assert_eq!(format!("{:.3}", c.kv_to_weight_ratio), "1.145");
    }

    #[test]
    fn the_crossover_batch_is_the_seeds_55_9_sequences_at_2048_tokens() {
        // Seed counting: r(B) = B · 2,048 · 131,072 ÷ 15,009,316,864, linear in B, so the
        // interpolation is exact: B* = 15,009,316,864 ÷ (2,048 · 131,072) = 55.915…
        let b = crossover_batch(&sc("seed", "1", "2048"), 2048).unwrap();
        assert!((b - 15_009_316_864.0 / (2048.0 * 131_072.0)).abs() < 1e-9, "{b}");
        // Full counting reads one embedding row per sequence too, so the weights grow a little with
        // the batch; the crossing still lies between 55 and 56.
        let f = crossover_batch(&sc("full", "1", "2048"), 2048).unwrap();
        assert!(f > 55.0 && f < 56.0, "{f}");
        // Twice the context, half the batch.
        let half = crossover_batch(&sc("seed", "1", "2048"), 4096).unwrap();
        assert!((half - b / 2.0).abs() < 1e-9);
        assert_eq!(crossover_batch(&sc("seed", "1", "2048"), 0), None);
    }

    #[test]
    fn a_moe_crossover_batch_is_where_its_side_flips() {
        let s = crate::testing::scenario(&[("model", "mixtral-8x7b"), ("ctx", "4096")]);
        let b = crossover_batch(&s, 4096).unwrap();
        let side = |n: u64| Crossover::of(&at_uniform(&s, n, 4096)).side;
        assert_eq!(side(b.floor() as u64), Side::Below, "{b}");
        assert_eq!(side(b.ceil() as u64), Side::Above, "{b}");
    }
}
