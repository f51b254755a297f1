//! The measured clock reads the measured kernel tables where they cover an operator:
//! The whole decode step on a catalogue GPU against AIConfigurator's own estimate.

use llm_ledger_core::{summarise, Catalog, ScenarioRequest};

fn step_ms(gpu: &str, engine: &str) -> f64 {
    let s = ScenarioRequest {
        model: Some("llama-3.1-8b".into()),
        gpu: Some(gpu.into()),
        phase: Some("decode".into()),
        batch: Some("1".into()),
        ctx: Some("2048".into()),
        engine: Some(engine.into()),
        ..Default::default()
    }
    .resolve(&Catalog::builtin())
    .unwrap();
    summarise(&s).step_time_s() * 1e3
}

#[test]
fn llama_8b_decode_step_on_h100_is_within_10_percent_of_aiconfigurators_breakdown() {
    // AIConfigurator 0.12.0, Llama-3.1-8B on h100_sxm, trtllm, TP 1, static batch 1, isl 2048:
    // generation phase total 6.616 ms (qkv 0.707, attention 0.444, proj 0.530, gate/up 2.783,
    // down 1.483, logits 0.377, norms and activation 0.292: `aiconfigurator cli` 0.12.0, static
    // batch 1, isl 2048, osl 2, SILICON database). Its GEMMs are read from
    // the tables our clock now reads.
    let ms = step_ms("h100-sxm", "trtllm");
    let err = ms / 6.616 - 1.0;
    assert!(err.abs() <= 0.10, "{ms:.3} ms vs 6.616 ms ({:+.1} %)", err * 100.0);
}

/// FlashAttention takes the engine's measured attention kernel: Llama 3 8B decoding 8 sequences of
/// 2,048 cached tokens on an H100 under trtllm is, per layer, the table's generation kernel for 32
/// query heads over 8 KV heads of 128 dimensions, batch 8, 2,048 cached tokens; a 4,096-token
/// prefill its context kernel at length 4,096.
#[test]
fn flash_attention_takes_the_measured_attention_kernel() {
    use llm_ledger_core::kernels::{attention_us, AttentionPhase, Engine, KernelGpu};
    use llm_ledger_core::ops::OpKind;
    let attention_s = |phase: &str, batch: &str, ctx: &str| {
        let s = ScenarioRequest {
            model: Some("llama-3-8b".into()),
            gpu: Some("h100-sxm".into()),
            phase: Some(phase.into()),
            batch: Some(batch.into()),
            ctx: Some(ctx.into()),
            ..Default::default()
        }
        .resolve(&Catalog::builtin())
        .unwrap();
        let l = llm_ledger_core::Ledger::build(&s);
        let r = l.rows.iter().find(|r| r.op == OpKind::Attention).unwrap();
        r.timing.time_s / r.instances as f64
    };
    let q = llm_ledger_core::testing::llama_attention;
    let table = |query| attention_us(KernelGpu::H100Sxm, Engine::Trtllm, &query).unwrap() * 1e-6;
    let decode = table(q(AttentionPhase::Generation, 8.0, 2048.0));
    // Never below its HBM bytes (8 × 2,049 positions × 8 KV heads × 128 × 2 × 2 B) at the peak.
    let floor = 8.0 * 2049.0 * 8.0 * 128.0 * 4.0 / 3.35e12;
    assert!((attention_s("decode", "8", "2048") - decode.max(floor)).abs() < 1e-12);
    let prefill = table(q(AttentionPhase::Context, 1.0, 4096.0));
    assert!((attention_s("prefill", "1", "4096") / prefill - 1.0).abs() < 1e-9);
}

/// Every row says where its time came from: the tables it was read from (GPU, engine, version,
/// table), the fitted model of its kind of kernel where no table holds it, the kernel it is fused
/// into, or the roofline.
#[test]
fn every_row_names_the_source_of_its_time() {
    use llm_ledger_core::ops::OpKind;
    use llm_ledger_core::roofline::{FittedKernel, KernelTable, TimeSource};
    use llm_ledger_core::Ledger;
    let source = |pairs: &[(&str, &str)], kind: OpKind| {
        let sc = llm_ledger_core::testing::scenario(pairs);
        Ledger::build(&sc).rows.iter().find(|r| r.op == kind).and_then(|r| r.timing.source)
    };
    let gemm = source(&[], OpKind::QProj).unwrap();
    assert!(matches!(gemm, TimeSource::Table { table: KernelTable::Gemm, .. }), "{gemm:?}");
    assert_eq!(gemm.words(), "table:h100_sxm/trtllm/1.3.0rc20/gemm");
    assert_eq!(source(&[], OpKind::Attention).unwrap().words(), "table:h100_sxm/trtllm/1.3.0rc20/attention");
    assert_eq!(source(&[], OpKind::Softmax), Some(TimeSource::Fused));
    assert_eq!(source(&[], OpKind::Act), Some(TimeSource::Fitted(FittedKernel::Vector)));
    let experts = source(&[("model", "mixtral-8x7b")], OpKind::ExpertGate);
    assert_eq!(experts, Some(TimeSource::Fitted(FittedKernel::GroupedGemm)));
    // A GPU without tables: the fitted model; the roofline clock: the roofline.
    assert_eq!(source(&[("gpu", "mi300x")], OpKind::QProj), Some(TimeSource::Fitted(FittedKernel::Gemm)));
    assert_eq!(source(&[("time_model", "roofline")], OpKind::QProj), Some(TimeSource::Roofline));
    // Collectives: the engine's all-reduce table, or the link model past the tables' eight GPUs.
    let ar = source(&[("tp", "2")], OpKind::AllReduceAttn).unwrap();
    assert_eq!(ar.words(), "table:h100_sxm/trtllm/1.3.0rc20/custom_allreduce");
    // The total mixes them.
    let sc = llm_ledger_core::testing::scenario(&[]);
    assert_eq!(Ledger::build(&sc).summary.timing.source, Some(TimeSource::Mixed));
}
