//! Invariants of the ledger over random valid models, GPUs and workloads (proptest).

use llm_ledger_core::model::{parse_config_json, WeightPrecisions};
use llm_ledger_core::moe::{expected_experts_touched, Routing};
use llm_ledger_core::scenario::Catalog;
use llm_ledger_core::workload::{Contexts, Counting, Workload};
use llm_ledger_core::{summarise, Efficiency, Ledger, ModelSpec, Precision, Scenario};
use proptest::prelude::*;
use serde_json::json;
use std::sync::Arc;

/// A random but valid config.json of one of several families.
fn model() -> impl Strategy<Value = ModelSpec> {
    (
        0usize..6,
        1u64..6,    // layers
        1u64..9,    // kv heads
        1u64..5,    // query heads per kv head
        1u64..5,    // head_dim / 32
        1u64..9,    // intermediate / 256
        1u64..5000, // vocab
        any::<bool>(),
    )
        .prop_map(|(family, layers, kv, group, hd32, i256, vocab, tied)| {
            let heads = kv * group;
            let hd = hd32 * 32;
            let hidden = heads * hd;
            let base = json!({
                "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
                "num_key_value_heads": kv, "head_dim": hd, "intermediate_size": i256 * 256,
                "vocab_size": vocab, "tie_word_embeddings": tied,
            });
            let mut v = base.as_object().unwrap().clone();
            let extra = match family {
                0 => json!({"model_type": "llama"}),
                1 => json!({"model_type": "qwen3"}),
                2 => json!({"model_type": "gemma2", "sliding_window": 64}),
                3 => json!({"model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 2}),
                4 => json!({"model_type": "qwen3_moe", "num_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 128}),
                _ => json!({"model_type": "deepseek_v3", "q_lora_rank": 64, "kv_lora_rank": 32, "qk_nope_head_dim": 32,
                    "qk_rope_head_dim": 16, "v_head_dim": 32, "n_routed_experts": 16, "n_shared_experts": 1,
                    "num_experts_per_tok": 4, "moe_intermediate_size": 64, "first_k_dense_replace": 1}),
            };
            v.extend(extra.as_object().unwrap().clone());
            parse_config_json(&serde_json::Value::Object(v).to_string(), "random").unwrap()
        })
}

fn scenario(model: ModelSpec, gpu: usize, prefill: bool, batch: u64, ctx: u64, flash: bool) -> Scenario {
    let c = Catalog::builtin();
    let gpu = c.gpus()[gpu % c.gpus().len()].clone();
    let mut w = if prefill { Workload::prefill(batch, ctx.max(1)) } else { Workload::decode(batch, ctx) }.unwrap();
    w.flash_attention = flash;
    Scenario::new(
        Arc::new(model),
        gpu,
        w,
        WeightPrecisions::uniform(Precision::Bf16),
        Efficiency::default(),
        Routing::Uniform,
    )
    .unwrap()
}

fn with_contexts(s: &Scenario, batch: u64, ctx: u64) -> Scenario {
    let mut w = s.workload.clone();
    w.contexts = Contexts::uniform(batch, ctx).unwrap();
    s.with_workload(w)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn flops_and_bytes_are_finite_non_negative_and_rows_sum_to_the_total(
        m in model(), gpu in 0usize..16, prefill in any::<bool>(), batch in 1u64..64, ctx in 0u64..5000, flash in any::<bool>()
    ) {
        let s = scenario(m, gpu, prefill, batch, ctx, flash);
        let l = Ledger::build(&s);
        for r in &l.rows {
            let c = r.cost;
            for v in [c.flops, c.weight_bytes, c.kv_read_bytes, c.kv_write_bytes, c.activation_bytes, r.timing.time_s] {
                prop_assert!(v.is_finite() && v >= 0.0, "{:?}: {v}", r.op);
            }
        }
        // The activation bytes written (an operator's output, the dataflow's tensors) are part of
        // its activation bytes.
        for r in &l.rows {
            let (w, a) = (r.cost.activation_written_bytes, r.cost.activation_bytes);
            prop_assert!(w.is_finite() && w >= 0.0 && w <= a * (1.0 + 1e-12), "{:?}: {w} written of {a}", r.op);
        }
        let flops: f64 = l.rows.iter().map(|r| r.cost.flops).sum();
        let bytes: f64 = l.rows.iter().map(|r| r.cost.bytes()).sum();
        prop_assert!((flops - l.summary.cost.flops).abs() <= 1e-9 * flops.max(1.0));
        prop_assert!((bytes - l.summary.cost.bytes()).abs() <= 1e-9 * bytes.max(1.0));
        // The allocation-free summary agrees with the ledger.
        let s2 = summarise(&s);
        prop_assert!((s2.timing.time_s - l.summary.timing.time_s).abs() <= 1e-12 * s2.timing.time_s);
    }

    #[test]
    fn more_batch_or_context_never_means_fewer_flops_or_bytes(
        m in model(), gpu in 0usize..16, prefill in any::<bool>(), batch in 1u64..32, ctx in 1u64..3000, db in 0u64..8, dc in 0u64..500
    ) {
        let s = scenario(m, gpu, prefill, batch, ctx, true);
        let base = summarise(&s);
        for bigger in [with_contexts(&s, batch + db, ctx), with_contexts(&s, batch, ctx + dc)] {
            let b = summarise(&bigger);
            prop_assert!(b.cost.flops >= base.cost.flops);
            prop_assert!(b.cost.bytes() >= base.cost.bytes());
            prop_assert!(b.timing.time_s >= base.timing.time_s * (1.0 - 1e-12));
        }
    }

    #[test]
    fn decode_weight_bytes_do_not_depend_on_batch_for_dense_models(
        m in model().prop_filter("a dense model", |m| !m.is_moe()), gpu in 0usize..16, batch in 1u64..64, ctx in 0u64..3000
    ) {
        let s = scenario(m, gpu, false, 1, ctx, true);
        // The embedding gather reads one row per sequence; everything else is independent of batch.
        let rows = |s: &Scenario| {
            let l = Ledger::build(s);
            l.summary.cost.weight_bytes - l.row(llm_ledger_core::ops::OpKind::Embedding).unwrap().cost.weight_bytes
        };
        prop_assert_eq!(rows(&s), rows(&with_contexts(&s, batch, ctx)));
    }

    #[test]
    fn narrower_weights_never_increase_time(m in model(), gpu in 0usize..16, prefill in any::<bool>(), batch in 1u64..64, ctx in 0u64..3000) {
        // The roofline's property: the measured clock charges weight-only kernels for dequantising
        // (W4A16 loses to bf16 at large batches, crate::clock::w4a16_crossover_batch).
        let s = scenario(m, gpu, prefill, batch, ctx, true).with_clock(llm_ledger_core::engine::Clock::ROOFLINE);
        let mut last = f64::INFINITY;
        for p in [Precision::Fp32, Precision::Bf16, Precision::Int8, Precision::Int4] {
            let mut q = s.clone();
            q.weights = WeightPrecisions::uniform(p);
            let t = summarise(&q).timing.time_s;
            prop_assert!(t <= last * (1.0 + 1e-12), "{p}: {t} > {last}");
            last = t;
        }
    }

    #[test]
    fn step_time_is_at_least_both_floors(m in model(), gpu in 0usize..16, prefill in any::<bool>(), batch in 1u64..64, ctx in 0u64..3000) {
        // The roofline's property: the measured clock's engine fusions keep some bytes on chip.
        let s = summarise(&scenario(m, gpu, prefill, batch, ctx, true).with_clock(llm_ledger_core::engine::Clock::ROOFLINE));
        prop_assert!(s.timing.time_s >= s.memory_floor_s && s.timing.time_s >= s.compute_floor_s);
        prop_assert!(s.timing.time_s >= s.timing.compute_s.max(s.timing.memory_s) * (1.0 - 1e-12));
    }

    #[test]
    fn seed_counting_never_exceeds_full_counting(m in model(), batch in 1u64..64, ctx in 0u64..3000) {
        let full = scenario(m, 2, false, batch, ctx, true);
        let mut seed = full.clone();
        seed.workload.counting = Counting::Seed;
        let (f, s) = (summarise(&full), summarise(&seed));
        prop_assert!(s.cost.flops <= f.cost.flops && s.cost.bytes() <= f.cost.bytes());
    }

    #[test]
    fn experts_touched_is_at_most_e_and_non_decreasing(e in 1u64..300, k_frac in 0.0f64..1.0, b in 1u64..500, zipf in 0.0f64..3.0) {
        let k = ((e as f64 * k_frac) as u64).clamp(1, e);
        let r = Routing::zipf(zipf).unwrap();
        let t1 = expected_experts_touched(e, k, b as f64, &r).unwrap();
        let t2 = expected_experts_touched(e, k, (b + 1) as f64, &r).unwrap();
        prop_assert!(t1 <= e as f64 + 1e-9 && t2 + 1e-9 >= t1);
        prop_assert!(t1 + 1e-9 >= k as f64, "at least k experts: {t1} < {k}");
    }
}
