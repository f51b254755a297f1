//! The operators of this generation's mixers against numbers computed by hand from the real
//! configs' dimensions (the presets of `crates/core/data/models.toml`, from the configs in
//! `tests/data/configs/2026/`): Gated DeltaNet (Qwen3.5-27B), Mamba-2 (Nemotron 3 Nano), DeepSeek
//! Sparse Attention (DeepSeek-V3.2), hyper-connections (DeepSeek-V4-Flash) and chunked attention
//! (Llama 4 Scout). The conventions these sums use: an RMS/L2 norm costs 4 FLOPs a value, a gate
//! 8 (`conventions`).

use llm_ledger_core::ops::OpKind;
use llm_ledger_core::{Cost, Ledger, Scenario};

fn scenario(model: &str, phase: &str, batch: u64, ctx: u64) -> Scenario {
    let (b, c) = (batch.to_string(), ctx.to_string());
    llm_ledger_core::testing::scenario(&[("model", model), ("phase", phase), ("batch", &b), ("ctx", &c)])
}

/// The ledger row of `kind`: its instances and cost.
fn row(sc: &Scenario, kind: OpKind) -> (u64, Cost) {
    let ledger = Ledger::build(sc);
    let r =
        ledger.rows.iter().find(|r| r.op == kind).unwrap_or_else(|| panic!("{} has no {kind:?} row", sc.model.name));
    (r.instances, r.cost)
}

/// Gated DeltaNet decode, Qwen3.5-27B: 48 linear layers of 16 key heads and 48 value heads of
/// 128, a 4-tap convolution over q, k and v, an fp32 state.
#[test]
fn gated_deltanet_decode_reads_and_writes_its_state_whatever_the_context() {
    let sc = scenario("qwen3.5-27b", "decode", 4, 8192);
    // The delta rule per value head and token: decay d_k·d_v, Sᵀk 2·d_k·d_v, the update
    // 2·d_k·d_v, the read-out 2·d_k·d_v, β(v − Sᵀk) 2·d_v → 48 × (7·128·128 + 2·128) =
    // 5,517,312; the L2 norms of q and k 2 × 2,048 values × 4 and the decay and β per value
    // head 2 × 48 × 8: 17,152.
    let (n, rule) = row(&sc, OpKind::DeltaRule);
    assert_eq!(n, 48);
    assert_eq!(rule.flops, 48.0 * 4.0 * 5_534_464.0);
    // The state, 48 heads × 128 × 128 × 4 B = 3,145,728 B per layer and sequence, read and
    // written back.
    assert_eq!(rule.state_read_bytes, 48.0 * 4.0 * 3_145_728.0);
    assert_eq!(rule.state_write_bytes, rule.state_read_bytes);
    assert_eq!(rule.kv_bytes(), 0.0);
    // The convolution's last 3 inputs of 2,048 + 2,048 + 6,144 channels, bf16: 61,440 B.
    let (_, conv) = row(&sc, OpKind::ShortConv);
    assert_eq!(conv.state_read_bytes, 48.0 * 4.0 * 61_440.0);
    // in_proj: q, k (2 × 2,048), v and the output gate z (2 × 6,144), β and α (2 × 48) = 16,480
    // columns from 5,120.
    let (_, in_proj) = row(&sc, OpKind::InProj);
    assert_eq!(in_proj.flops, 48.0 * 4.0 * 2.0 * 5120.0 * 16_480.0);
    assert_eq!(in_proj.weight_bytes, 48.0 * 5120.0 * 16_480.0 * 2.0);
    // Eight times the context: the linear layers cost the same; attention's KV reads grow 8×.
    let long = scenario("qwen3.5-27b", "decode", 4, 65536);
    assert_eq!(row(&long, OpKind::DeltaRule).1, rule);
    assert_eq!(row(&long, OpKind::ShortConv).1, conv);
    let kv = |s: &Scenario| row(s, OpKind::Attention).1.kv_read_bytes;
    // 16 full layers × 4 KV heads × 256 × 2 (K, V) × 2 B = 65,536 B per cached token; each
    // sequence reads its context and its own new entry.
    assert_eq!(kv(&sc), 4.0 * 8193.0 * 65_536.0);
    assert_eq!(kv(&long), 4.0 * 65_537.0 * 65_536.0);
}

/// Gated DeltaNet's chunked prefill (chunks of 64): per value head and token `6·C·d_k + 4·C·d_v
/// + 6·d_k·d_v + ⅔·C²`; the state read and written once per sequence.
#[test]
fn gated_deltanet_prefill_runs_the_chunked_algorithm() {
    let sc = scenario("qwen3.5-27b", "prefill", 2, 4096);
    let (_, rule) = row(&sc, OpKind::DeltaRule);
    let per_head = 6.0 * 64.0 * 128.0 + 4.0 * 64.0 * 128.0 + 6.0 * 128.0 * 128.0 + 2.0 / 3.0 * 64.0 * 64.0;
    let per_token = 48.0 * per_head + 17_152.0;
    let expected = 48.0 * 2.0 * 4096.0 * per_token;
    assert!((rule.flops - expected).abs() <= 1e-9 * expected, "{} vs {expected}", rule.flops);
    assert_eq!(rule.state_read_bytes, 48.0 * 2.0 * 3_145_728.0);
}

/// Mamba-2, Nemotron 3 Nano: 23 Mamba layers of 64 heads of 64 with 8 groups of state 128,
/// fp32 state, a 4-tap convolution with a bias over x, B and C.
#[test]
fn mamba2_decode_updates_its_state() {
    let sc = scenario("nemotron-3-nano-30b-a3b", "decode", 2, 4096);
    // h ← e^{ΔA}·h + Δ·x·Bᵀ (3·P·N), y = h·C (2·P·N), + D·x (2·P) per head; Δ and e^{ΔA} per
    // head at 8: 64 × (5·64·128 + 2·64) + 64 × 8 = 2,630,144.
    let (n, scan) = row(&sc, OpKind::SsmScan);
    assert_eq!(n, 23);
    assert_eq!(scan.flops, 23.0 * 2.0 * 2_630_144.0);
    // The state: 64 × 64 × 128 × 4 B = 2,097,152 B per layer and sequence.
    assert_eq!(scan.state_read_bytes, 23.0 * 2.0 * 2_097_152.0);
    // The convolution's last 3 inputs of 4,096 + 2 × 8 × 128 channels at bf16: 36,864 B.
    assert_eq!(row(&sc, OpKind::ShortConv).1.state_read_bytes, 23.0 * 2.0 * 36_864.0);
    // in_proj: z and x (2 × 4,096), B and C (2 × 1,024), Δ (64) = 10,304 columns from 2,688.
    assert_eq!(row(&sc, OpKind::InProj).1.flops, 23.0 * 2.0 * 2.0 * 2688.0 * 10_304.0);
    // A sequence holds 23 × (2,097,152 + 36,864) B whatever its length.
    assert_eq!(sc.model.state_bytes_per_sequence(sc.workload.activations), 23.0 * 2_134_016.0);
}

/// DeepSeek Sparse Attention, DeepSeek-V3.2 decode: the indexer (64 heads of 128, fp8 keys with
/// one 4-byte scale per 128: 132 B a position) scores every cached position; MLA then reads the
/// top 2,048 latents (512 + 64 values at bf16: 1,152 B).
#[test]
fn sparse_mla_reads_its_top_k_and_the_indexer_every_key() {
    let at = |ctx: u64| scenario("deepseek-v3.2", "decode", 1, ctx);
    for ctx in [2048u64, 65536] {
        let sc = at(ctx);
        let seen = (ctx + 1) as f64;
        let (n, indexer) = row(&sc, OpKind::Indexer);
        assert_eq!(n, 61);
        assert_eq!(indexer.kv_read_bytes, 61.0 * seen * 132.0, "ctx {ctx}");
        // 2·d_I FLOPs a head for the dot product, 3 for ReLU, weight and sum.
        assert_eq!(indexer.flops, 61.0 * seen * 64.0 * (2.0 * 128.0 + 3.0), "ctx {ctx}");
        let attention = row(&sc, OpKind::Attention).1;
        assert_eq!(attention.kv_read_bytes, 61.0 * seen.min(2048.0) * 1152.0, "ctx {ctx}");
    }
    // From 2,048 to 65,536 cached tokens (32×), attention and indexer reads grow about 4×,
    // where dense MLA's grow 32×.
    let reads = |sc: &Scenario| row(sc, OpKind::Attention).1.kv_read_bytes + row(sc, OpKind::Indexer).1.kv_read_bytes;
    let growth = reads(&at(65536)) / reads(&at(2048));
    assert!((3.0..6.0).contains(&growth), "{growth}");
    let dense = |ctx| row(&scenario("deepseek-v3", "decode", 1, ctx), OpKind::Attention).1.kv_read_bytes;
    assert!((dense(65536) / dense(2048) - 32.0).abs() < 0.1);
}

/// DeepSeek-V4-Flash's hyper-connections (4 streams of 4,096) before each attention block:
/// normalise the streams (4·S), project them to (2 + 4)·4 = 24 mixing weights (2·S·24), 20
/// Sinkhorn iterations of 3·(16 + 8), the weighted sum (2·S), with S = 16,384; fp32 weights.
#[test]
fn hyper_connections_mix_the_streams() {
    let sc = scenario("deepseek-v4-flash", "decode", 8, 4096);
    let s = 16_384.0;
    let per_token = 4.0 * s + 2.0 * s * 24.0 + 3.0 * 24.0 * 20.0 + 2.0 * s;
    let (n, pre) = row(&sc, OpKind::AttnHcPre);
    assert_eq!(n, 43);
    assert_eq!(pre.flops, 43.0 * 8.0 * per_token);
    assert_eq!(pre.weight_bytes, 43.0 * 24.0 * s * 4.0);
    // After the block: each stream mixes the others and takes its share, 2·4·S + 2·S.
    assert_eq!(row(&sc, OpKind::AttnHcPost).1.flops, 43.0 * 8.0 * (8.0 * s + 2.0 * s));
}

/// Llama 4 Scout: 36 layers attend within their chunk of 8,192, every fourth layer (12) to all.
#[test]
fn chunked_attention_reads_its_own_chunk() {
    // Decode at 20,000 cached tokens: the new token (position 20,000) sits in the chunk from
    // 16,384 and reads 3,617 positions; a global layer reads 20,001. 8 KV heads × 128 × 2 × 2 B
    // = 4,096 B a position.
    let sc = scenario("llama-4-scout", "decode", 1, 20_000);
    let kv = row(&sc, OpKind::Attention).1.kv_read_bytes;
    assert_eq!(kv, (36.0 * 3617.0 + 12.0 * 20_001.0) * 4096.0);
    // Prefill of 20,000: the chunk layers score two triangles of 8,192 and one of 3,616; the
    // global layers one of 20,000; 4 FLOPs a pair, head (40) and dimension (128).
    let sc = scenario("llama-4-scout", "prefill", 1, 20_000);
    let tri = |p: f64| p * (p + 1.0) / 2.0;
    let pairs = 36.0 * (2.0 * tri(8192.0) + tri(3616.0)) + 12.0 * tri(20_000.0);
    assert_eq!(row(&sc, OpKind::Attention).1.flops, pairs * 4.0 * 40.0 * 128.0);
}

/// Qwen3.5-27B holds 65,536 B of KV per cached token and 153,944,064 B of state per sequence
/// (48 × (3,145,728 + 61,440)): the memory wall, the crossover and the simulator's blocks count
/// both.
#[test]
fn a_hybrids_state_counts_in_memory_the_crossover_and_the_simulator() {
    use llm_ledger_core::crossover::Crossover;
    use llm_ledger_core::memory::{state_tokens_per_sequence, Fit};
    use llm_ledger_core::simulate::workload::{Arrivals, Lengths};
    use llm_ledger_core::simulate::{simulate, SimConfig};
    let state = 153_944_064.0;
    let sc = scenario("qwen3.5-27b", "decode", 8, 8192);
    let fit = Fit::step(&sc, 2e9);
    // Each sequence after the step: 8,193 positions of KV and its state.
    assert_eq!(fit.footprint.state_bytes, 8.0 * state);
    assert_eq!(fit.footprint.kv_cache_bytes, 8.0 * (8193.0 * 65_536.0 + state));
    // The largest batch fits and one more does not; without the state it would be larger.
    let max = fit.max_batch.unwrap();
    let at = |b: u64| Fit::step(&scenario("qwen3.5-27b", "decode", b, 8192), 2e9).footprint.fits;
    assert!(at(max) && !at(max + 1), "{max}");
    let room = fit.footprint.available_bytes - fit.footprint.weight_bytes;
    assert!((max as f64) < room / (8193.0 * 65_536.0) - 1.0, "{max}");
    // The crossover: the weights against the KV and the state read per step.
    let c = Crossover::of(&sc);
    assert_eq!(c.state_read_bytes, 8.0 * 48.0 * (3_145_728.0 + 61_440.0));
    assert_eq!(c.crossover_tokens, (c.weight_bytes - c.state_read_bytes) / 65_536.0);
    // The simulator: a sequence's state takes ⌈153,944,064 ÷ 65,536⌉ = 2,349 tokens' worth of
    // blocks (147 of 16) beside its KV blocks, so fewer sequences run at once.
    assert_eq!(state_tokens_per_sequence(&sc), 2349);
    let cfg = SimConfig {
        arrivals: Arrivals::Closed { concurrency: 64 },
        requests: 64,
        prompt: Lengths::Fixed(8192),
        output: Lengths::Fixed(256),
        ..SimConfig::poisson(1.0)
    };
    let s = simulate(&sc, &cfg, |_| {}).unwrap().summary;
    let blocks = s.kv_capacity_tokens / 16;
    // A sequence holds its prompt's 512 blocks (528 by its last token) and its state's 147; one
    // part-way through its prompt holds only its chunks' blocks, so one more can share a step.
    let (most, least) = (blocks / (512 + 147) + 1, blocks / (528 + 147));
    assert!((least..=most).contains(&s.max_batch), "{} of {blocks}: {s:?}", s.max_batch);
    // Counting KV alone, 41 would fit.
    assert!(blocks / 512 >= most + 8);
    assert_eq!(s.completed, 64);
}

/// Kimi Delta Attention, Kimi-K3: 69 KDA layers of 96 heads of 128, a full-rank output gate, a
/// decay per key channel from a bottleneck of 128, an fp32 state.
#[test]
fn kimi_delta_attention_decodes_with_a_decay_per_channel() {
    let sc = scenario("kimi-k3", "decode", 2, 4096);
    // The delta rule: 96 × (7·128·128 + 2·128) = 11,034,624; the L2 norms of q and k, 2 ×
    // 12,288 values × 4 = 98,304; a decay per key channel and β per head, (12,288 + 96) × 8 =
    // 99,072.
    let (n, rule) = row(&sc, OpKind::DeltaRule);
    assert_eq!(n, 69);
    assert_eq!(rule.flops, 69.0 * 2.0 * 11_232_000.0);
    assert_eq!(rule.state_read_bytes, 69.0 * 2.0 * 96.0 * 128.0 * 128.0 * 4.0);
    // in_proj: q, k (2 × 12,288), v (12,288), β (96), the decay's bottleneck (128) and the
    // full-rank output gate (12,288) = 49,376 columns from 7,168; the decay's expansion 128 →
    // 12,288 after it.
    assert_eq!(row(&sc, OpKind::InProj).1.flops, 69.0 * 2.0 * 2.0 * 7168.0 * 49_376.0);
    assert_eq!(row(&sc, OpKind::GateBProj).1.flops, 69.0 * 2.0 * 2.0 * 128.0 * 12_288.0);
    // Per sequence: 69 × (96 × 128 × 128 × 4 B + 3 × 36,864 channels × 2 B).
    assert_eq!(sc.model.state_bytes_per_sequence(sc.workload.activations), 69.0 * (6_291_456.0 + 221_184.0));
}

/// DeepSeek-V4-Flash's cache for a sequence of 8,193 positions (bf16): 2 sliding layers hold
/// their window of 128 latents of 512; 21 ratio-4 layers the window, 2,048 pooled entries and
/// 2,048 indexer keys of 132 B, and their compressors' fp32 state (2 × 4 rows of 2 × 2 × 512 and
/// the indexer's 8 rows of 4 × 128); 20 ratio-128 layers the window, 64 pooled entries and a
/// state of 128 rows of 2 × 512.
#[test]
fn compressed_attention_holds_its_window_its_pooled_entries_and_their_state() {
    let sc = scenario("deepseek-v4-flash", "decode", 1, 8192);
    let window = 128.0 * 512.0 * 2.0;
    let ratio4 = window + 2048.0 * 1024.0 + 2048.0 * 132.0 + (16_384.0 + 4096.0) * 4.0;
    let ratio128 = window + 64.0 * 1024.0 + 131_072.0 * 4.0;
    let fp = llm_ledger_core::memory::Fit::step(&sc, 2e9).footprint;
    assert_eq!(fp.kv_cache_bytes, 2.0 * window + 21.0 * ratio4 + 20.0 * ratio128);
    assert_eq!(fp.state_bytes, 21.0 * 81_920.0 + 20.0 * 524_288.0);
}
