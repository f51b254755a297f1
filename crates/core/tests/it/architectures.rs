//! Mixture of experts, latent attention and sliding windows: numbers computed by hand in each test.

use llm_ledger_core::model::{Attention, WeightPrecisions};
use llm_ledger_core::moe::{expected_experts_touched, routing_probabilities, Routing};
use llm_ledger_core::ops::OpKind;
use llm_ledger_core::workload::MlaForm;
use llm_ledger_core::{Contexts, Ledger, Precision, Scenario};

fn scenario(model: &str, phase: &str, batch: u64, ctx: u64) -> Scenario {
    let (b, c) = (batch.to_string(), ctx.to_string());
    llm_ledger_core::testing::scenario(&[("model", model), ("phase", phase), ("batch", &b), ("ctx", &c)])
}

/// SplitMix64: a small deterministic generator for the Monte Carlo test.
struct SplitMix(u64);
impl SplitMix {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One token picks exactly k distinct experts with inclusion probabilities p (Σp = k, p ≤ 1) by
/// Madow's systematic sampling: lay the p_i end to end on [0, k) and take the points u, u+1, …, u+k−1.
fn route_one_token(p: &[f64], rng: &mut SplitMix, touched: &mut [bool]) {
    let u = rng.next_f64();
    let (mut cum, mut next) = (0.0, u);
    for (i, pi) in p.iter().enumerate() {
        let end = cum + pi;
        while next < end {
            touched[i] = true;
            next += 1.0;
        }
        cum = end;
    }
}

#[test]
fn monte_carlo_routing_agrees_with_the_closed_form() {
    // Skewed routing (Zipf 1.2) over 64 experts, top-4, 16 tokens: simulate the actual routing
    // process (never using the (1 − p)^N formula) and compare means.
    let (experts, k, tokens, trials) = (64u64, 4u64, 16usize, 20_000usize);
    let routing = Routing::zipf(1.2).unwrap();
    let p = routing_probabilities(experts, k, &routing).unwrap();
    let exact = expected_experts_touched(experts, k, tokens as f64, &routing).unwrap();
    let mut rng = SplitMix(0x5EED);
    let (mut sum, mut sum_sq) = (0.0, 0.0);
    for _ in 0..trials {
        let mut touched = vec![false; experts as usize];
        for _ in 0..tokens {
            route_one_token(&p, &mut rng, &mut touched);
        }
        let n = touched.iter().filter(|t| **t).count() as f64;
        sum += n;
        sum_sq += n * n;
    }
    let mean = sum / trials as f64;
    let stderr = ((sum_sq / trials as f64 - mean * mean) / trials as f64).sqrt();
    assert!((mean - exact).abs() < 4.0 * stderr, "Monte Carlo {mean} ± {stderr}, closed form {exact}");
    // Each sampled token touches exactly k experts, so with one token the union is k.
    assert_eq!(expected_experts_touched(experts, k, 1.0, &routing).unwrap().round(), 4.0);
}

#[test]
fn deepseek_v3_caches_576_latent_values_per_token_per_layer() {
    // kv_lora_rank 512 + qk_rope_head_dim 64 = 576 values; × 2 B × 61 layers = 70,272 B (68.6 KiB),
    // against 61 · 2 · 128 · (192 + 128)/2 … if K and V were expanded.
    let s = scenario("deepseek-v3", "decode", 1, 0);
    assert_eq!(s.model.kv_elements_per_token(), 61 * 576);
    assert_eq!(2 * s.model.kv_elements_per_token(), 70_272);
}

#[test]
fn mla_absorbed_decode_reads_the_latent_and_naive_expands_it() {
    let (b, c) = (4u64, 1000u64);
    let mut absorbed = scenario("deepseek-v3", "decode", b, c);
    absorbed.workload.mla = MlaForm::Absorbed;
    let l = Ledger::build(&absorbed);
    let positions = (b * (c + 1)) as f64;
    // Attention reads 576 bf16 values per attended position per layer.
    assert_eq!(l.row(OpKind::Attention).unwrap().cost.kv_read_bytes, positions * 576.0 * 2.0 * 61.0);
    // QKᵀ over the 576-wide latent and P·V over the 512-wide latent for 128 heads.
    assert_eq!(l.row(OpKind::Attention).unwrap().cost.flops, 2.0 * 128.0 * (576.0 + 512.0) * positions * 61.0);
    assert!(l.row(OpKind::KvBProj).is_none());

    let mut naive = absorbed.clone();
    naive.workload.mla = MlaForm::Naive;
    let n = Ledger::build(&naive);
    // kv_b_proj expands every attended position: 2 · positions · 512 · 128 · (128 + 128) per layer.
    assert_eq!(n.row(OpKind::KvBProj).unwrap().cost.flops, 2.0 * positions * 512.0 * 128.0 * 256.0 * 61.0);
    // Naive attention: QKᵀ at 192 per head and P·V at 128.
    assert_eq!(n.row(OpKind::Attention).unwrap().cost.flops, 2.0 * 128.0 * (192.0 + 128.0) * positions * 61.0);
    assert!(n.summary.cost.flops > l.summary.cost.flops);
    // The default (auto) is absorbed in decode.
    let auto = Ledger::build(&scenario("deepseek-v3", "decode", b, c));
    assert_eq!(auto.summary.cost, l.summary.cost);
}

#[test]
fn gemma3_reads_the_window_on_local_layers_and_the_full_context_on_global_ones() {
    // gemma-3-27b: 52 sliding layers (window 1024) and 10 global; kv 16 heads × hd 128.
    // Decode at 32,768 cached tokens: each sequence attends to 32,769 positions, capped at 1024 on
    // local layers. K and V per position per layer: 2 · 16 · 128 · 2 B = 8,192 B.
    let b = 2u64;
    let l = Ledger::build(&scenario("gemma-3-27b", "decode", b, 32_768));
    let per_pos = 2.0 * 16.0 * 128.0 * 2.0;
    let expected = b as f64 * per_pos * (52.0 * 1024.0 + 10.0 * 32_769.0);
    assert_eq!(l.row(OpKind::Attention).unwrap().cost.kv_read_bytes, expected);
    // 6× less than a naive 62 × 32,769 positions.
    let naive = b as f64 * per_pos * 62.0 * 32_769.0;
    assert!(naive / expected > 5.0);
}

#[test]
fn mistral_window_caps_decode_attention() {
    // Mistral 7B v0.1: window 4096 on every layer; at 8192 cached tokens each layer attends 4096.
    let l = Ledger::build(&scenario("mistral-7b", "decode", 1, 8192));
    let flops = l.row(OpKind::Attention).unwrap().cost.flops;
    assert_eq!(flops, 4.0 * 32.0 * 128.0 * 4096.0 * 32.0);
}

#[test]
fn moe_weight_bytes_rise_with_batch_towards_all_experts() {
    // Mixtral 8x7B: one expert is 3 · 4096 · 14336 bf16 weights = 352,321,536 B; 32 MoE layers.
    let expert_bytes = 3.0 * 4096.0 * 14336.0 * 2.0;
    let mut last = 0.0;
    for b in [1u64, 2, 4, 8, 16, 64] {
        let l = Ledger::build(&scenario("mixtral-8x7b", "decode", b, 1024));
        let w: f64 = [OpKind::ExpertGate, OpKind::ExpertUp, OpKind::ExpertDown]
            .iter()
            .map(|k| l.row(*k).unwrap().cost.weight_bytes)
            .sum();
        // E·(1 − (1 − k/E)^B) experts touched per layer.
        let touched = 8.0 * (1.0 - (1.0f64 - 2.0 / 8.0).powi(b as i32));
        assert!((w - touched * expert_bytes * 32.0).abs() / w < 1e-12, "batch {b}");
        assert!(w > last, "weight bytes must rise with batch");
        last = w;
    }
    assert!((last / (8.0 * expert_bytes * 32.0) - 1.0).abs() < 1e-7, "batch 64 reads (almost) every expert");
    // Batch 1 reads exactly top-2.
    let one = Ledger::build(&scenario("mixtral-8x7b", "decode", 1, 1024));
    assert!((one.row(OpKind::ExpertUp).unwrap().cost.weight_bytes - 2.0 * expert_bytes / 3.0 * 32.0).abs() < 1.0);
}

#[test]
fn moe_prefill_counts_tokens_not_sequences_in_the_union() {
    // One sequence of 64 prompt tokens touches as many experts as 64 decode sequences.
    let p = Ledger::build(&scenario("qwen3-30b-a3b", "prefill", 1, 64));
    let d = Ledger::build(&scenario("qwen3-30b-a3b", "decode", 64, 64));
    let w = |l: &Ledger| l.row(OpKind::ExpertUp).unwrap().cost.weight_bytes;
    assert_eq!(w(&p), w(&d));
    // 128 experts, top-8, 64 tokens: 128·(1 − (120/128)^64) = 125.94 experts × 2048·768·2 B × 48 layers.
    let touched = 128.0 * (1.0 - (120.0f64 / 128.0).powi(64));
    assert!((w(&p) - touched * 2048.0 * 768.0 * 2.0 * 48.0).abs() < 1.0);
}

#[test]
fn skewed_routing_reads_fewer_expert_weights() {
    let uniform = scenario("qwen3-30b-a3b", "decode", 16, 1024);
    let mut skewed = uniform.clone();
    skewed.routing = Routing::zipf(1.0).unwrap();
    let w = |s: &Scenario| Ledger::build(s).row(OpKind::ExpertUp).unwrap().cost.weight_bytes;
    assert!(w(&skewed) < w(&uniform));
    // FLOPs do not depend on routing: every token still runs k experts.
    assert_eq!(Ledger::build(&skewed).summary.cost.flops, Ledger::build(&uniform).summary.cost.flops);
}

#[test]
fn gpt_oss_checkpoint_stores_experts_in_mxfp4() {
    // gpt-oss-20b: 32 experts of gate_up [2880 → 2·2880] and down [2880 → 2880] at 17/32 byte.
    let s = scenario("gpt-oss-20b", "decode", 64, 1024);
    assert_eq!(s.weights.experts, Precision::MxFp4);
    let l = Ledger::build(&s);
    let touched = 32.0 * (1.0 - (1.0f64 - 4.0 / 32.0).powi(64));
    let down = touched * (2880.0 * 2880.0 * 17.0 / 32.0 + 2880.0 * 2.0) * 24.0;
    assert!((l.row(OpKind::ExpertDown).unwrap().cost.weight_bytes - down).abs() / down < 1e-12);
    // Overriding the weights applies bf16 everywhere.
    let mut bf16 = s.clone();
    bf16.weights = WeightPrecisions::uniform(Precision::Bf16);
    assert!(Ledger::build(&bf16).summary.cost.weight_bytes > l.summary.cost.weight_bytes * 2.0);
}

#[test]
fn qwen_sliding_window_is_inert_unless_enabled() {
    let s = scenario("qwen2.5-7b", "decode", 1, 200_000);
    assert!(s.model.layers().iter().all(|l| l.attention.window().is_none()));
    assert!(matches!(s.model.layers()[0].attention, Attention::Standard(_)));
    assert_eq!(s.workload.contexts, Contexts::Uniform { batch: 1, tokens: 200_000 });
}
