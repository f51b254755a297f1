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
    use llm_ledger_core::kernels::{attention_us, AttentionPhase, Engine, KernelGpu, Tables};
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
    let table = |query| attention_us(Tables::newest(KernelGpu::H100Sxm, Engine::Trtllm), &query).unwrap() * 1e-6;
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
    // Routed experts from the measured MoE table where it holds the model's shape (Mixtral's is
    // measured), the activation inside that kernel; skewed routing (the tables are uniform) and
    // a shape never measured on the fitted model.
    let experts = source(&[("model", "mixtral-8x7b")], OpKind::ExpertGate).unwrap();
    assert_eq!(experts.words(), "table:h100_sxm/trtllm/1.3.0rc20/moe");
    assert_eq!(source(&[("model", "mixtral-8x7b")], OpKind::ExpertAct), Some(TimeSource::Fused));
    let skewed = source(&[("model", "mixtral-8x7b"), ("zipf", "1.2")], OpKind::ExpertGate);
    assert_eq!(skewed, Some(TimeSource::Fitted(FittedKernel::GroupedGemm)));
    let unmeasured = source(&[("model", "deepseek-v2-lite")], OpKind::ExpertGate);
    assert_eq!(unmeasured, Some(TimeSource::Fitted(FittedKernel::GroupedGemm)));
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

/// The routed experts of one layer take the engine's measured fused-MoE kernel, split over the
/// expert GEMM rows by their weights. Mixtral 8x7B decoding 16 sequences on an H100 under
/// trtllm: AIConfigurator's table (`h100_sxm/trtllm/moe.bin`, kernel `moe_torch_flow_cutlass`,
/// bf16, 4096 × 14336, top-2 of 8, TP 1, EP 1) reads 962.1 µs at 16 tokens (the Python decoder's
/// dump). Physically: 16 tokens × top-2 touch all 8 experts, 8 × 3 × 4096 × 14336 × 2 B =
/// 2.82 GB of weights, 841 µs at 3.35 TB/s: the kernel streams them at 87 % of the peak.
#[test]
fn routed_experts_take_the_measured_moe_kernel() {
    use llm_ledger_core::kernels::{moe_us, Engine, KernelGpu, MoeQuery, Tables};
    use llm_ledger_core::ops::OpKind;
    use llm_ledger_core::Ledger;
    let q = llm_ledger_core::testing::mixtral_moe(16.0);
    let us = moe_us(Tables::newest(KernelGpu::H100Sxm, Engine::Trtllm), &q).unwrap();
    assert!((us / 962.1 - 1.0).abs() < 1e-3, "{us}");
    assert!(2.82e9 / 3.35e12 * 1e6 < us, "never faster than its weights at peak bandwidth");
    // A split the tables never ran is not interpolated.
    assert_eq!(moe_us(Tables::newest(KernelGpu::H100Sxm, Engine::Trtllm), &MoeQuery { tp: 3, ..q }), None);
    assert_eq!(moe_us(Tables::newest(KernelGpu::H100Sxm, Engine::Trtllm), &MoeQuery { experts: 16, ..q }), None);
    let sc = llm_ledger_core::testing::scenario(&[("model", "mixtral-8x7b"), ("batch", "16"), ("ctx", "512")]);
    let l = Ledger::build(&sc);
    let per_layer = |kind: OpKind| {
        let r = l.rows.iter().find(|r| r.op == kind).unwrap();
        r.timing.time_s / r.instances as f64
    };
    let gemms = per_layer(OpKind::ExpertGate) + per_layer(OpKind::ExpertUp) + per_layer(OpKind::ExpertDown);
    // The table's time, each row at least its bytes at the H100's achievable bandwidth (2.90
    // TB/s, a copy's): the kernel streams at 2.93 TB/s, so the floor lifts the rows by < 1 %.
    let lift = gemms / (us * 1e-6) - 1.0;
    assert!((0.0..0.01).contains(&lift), "{gemms} s vs {us} µs");
    // Gate and up each hold a third of the expert weights: the same time each.
    assert_eq!(per_layer(OpKind::ExpertGate), per_layer(OpKind::ExpertUp));
    // The activation runs inside the kernel: it adds no time of its own beyond its vector work.
    assert!(per_layer(OpKind::ExpertAct) < 1e-6);
}

/// The MoE tables' uniform routing spreads tokens so that N touch min(N·k, E) experts
/// (AIConfigurator's `balanced_logits`); independently routed tokens touch E·(1 − (1 − k/E)^N).
/// Mixtral's 4 decode tokens: the table's kernel streams all 8 experts, a step 5.47 of them, so
/// the step's experts take the table's time less 2.53 experts' weights at the achievable
/// bandwidth (hand-computed here from the shapes).
#[test]
fn routed_experts_do_not_pay_for_experts_the_step_leaves_untouched() {
    use llm_ledger_core::kernels::{moe_us, Engine, KernelGpu, Tables};
    use llm_ledger_core::ops::OpKind;
    use llm_ledger_core::Ledger;
    let q = llm_ledger_core::testing::mixtral_moe(4.0);
    let table_s = moe_us(Tables::newest(KernelGpu::H100Sxm, Engine::Trtllm), &q).unwrap() * 1e-6;
    // 8 × (1 − 0.75⁴) = 5.46875 experts touched; 8 − 5.46875 = 2.53125 experts of
    // 3 × 4096 × 14336 × 2 B = 352,321,536 B each, at 2.90 TB/s (the H100's copy bandwidth).
    let untouched_s: f64 = 2.53125 * 352_321_536.0 / 2.90e12;
    assert!((untouched_s / 307.53e-6 - 1.0).abs() < 1e-3, "{untouched_s}");
    let sc = llm_ledger_core::testing::scenario(&[("model", "mixtral-8x7b"), ("batch", "4"), ("ctx", "512")]);
    let l = Ledger::build(&sc);
    let per_layer = |kind: OpKind| {
        let r = l.rows.iter().find(|r| r.op == kind).unwrap();
        r.timing.time_s / r.instances as f64
    };
    let gemms = per_layer(OpKind::ExpertGate) + per_layer(OpKind::ExpertUp) + per_layer(OpKind::ExpertDown);
    // The table streamed 8 experts at 2.94 TB/s, a little faster than the copy bandwidth, so
    // the step's time lands on its rows' floor: the touched experts' weights (and the tokens'
    // activations) at 2.90 TB/s, 664.4 µs of weights — 0.2 µs of activations above it.
    let touched_weights_s = 5.46875 * 352_321_536.0 / 2.90e12;
    assert!(table_s - untouched_s < touched_weights_s);
    assert!((gemms / touched_weights_s - 1.0).abs() < 2e-3, "{gemms} s vs {touched_weights_s} s");
    assert!(gemms < table_s * 0.7, "{gemms} s vs the table's {table_s} s");
}

/// A table is read only inside the head groups it measured. Falcon-7B decodes 71 query heads on
/// one KV head: TensorRT-LLM's tables hold that group (64 and 96 heads on one KV head, the
/// masked multi-head attention kernel beyond XQA's 32, which reads the cache once per query head:
/// the row names it); SGLang's FlashAttention-3 tables hold groups of at most 8 on one KV head,
/// so its decode is the fitted model's.
#[test]
fn tables_are_read_inside_the_head_groups_they_measured() {
    use llm_ledger_core::kernels::{
        attention_us, AttentionPhase, AttentionQuery, AttnDtype, Engine, KernelGpu, Tables,
    };
    use llm_ledger_core::ops::OpKind;
    use llm_ledger_core::roofline::{FittedKernel, SlowCause, TimeSource};
    use llm_ledger_core::Ledger;
    let falcon = AttentionQuery {
        phase: AttentionPhase::Generation,
        dtype: AttnDtype::Bf16,
        kv_dtype: AttnDtype::Bf16,
        head_dim: 64,
        heads: 71.0,
        kv_heads: 1.0,
        window: 0,
        batch: 256.0,
        length: 1023.0,
    };
    let h200 = KernelGpu::H200Sxm;
    assert!(attention_us(Tables::newest(h200, Engine::Trtllm), &falcon).is_some());
    assert_eq!(attention_us(Tables::newest(h200, Engine::Sglang), &falcon), None);
    assert!(attention_us(Tables::newest(h200, Engine::Sglang), &AttentionQuery { heads: 8.0, ..falcon }).is_some());
    assert!(attention_us(
        Tables::newest(h200, Engine::Sglang),
        &AttentionQuery { heads: 64.0, kv_heads: 8.0, ..falcon }
    )
    .is_some());
    let row = |engine: &str| {
        let pairs = [("model", "falcon-7b"), ("gpu", "h200"), ("engine", engine), ("batch", "256"), ("ctx", "1024")];
        let sc = llm_ledger_core::testing::scenario(&pairs);
        Ledger::build(&sc).rows.into_iter().find(|r| r.op == OpKind::Attention).unwrap()
    };
    let trt = row("trtllm");
    assert!(matches!(trt.timing.source, Some(TimeSource::Table { .. })), "{:?}", trt.timing.source);
    assert_eq!(trt.timing.slow, Some(SlowCause::KvPerQueryHead));
    let sg = row("sglang");
    assert_eq!(sg.timing.source, Some(TimeSource::Fitted(FittedKernel::Attention)));
}

/// The per-query-head read is the grouped attention kernels' (XQA's limit, MMHA beyond it): MLA's
/// absorbed decode has 128 query heads on one latent stream, a group of 128, but runs on the MLA
/// kernels, which read each latent entry once. DeepSeek-V3.2's top-k MLA decode (fitted: the
/// sparse kernel has no table) on TensorRT-LLM reads its cache once: the same time as on SGLang,
/// within 3× its roofline, where reading it 128 times took 67× (51 ms of a 105 ms step).
#[test]
fn mla_decode_is_not_read_once_per_query_head() {
    use llm_ledger_core::ops::OpKind;
    use llm_ledger_core::Ledger;
    let row = |engine: &str| {
        let pairs =
            [("model", "deepseek-v3.2"), ("gpu", "h100-sxm"), ("engine", engine), ("batch", "16"), ("ctx", "1024")];
        Ledger::build(&llm_ledger_core::testing::scenario(&pairs))
            .rows
            .into_iter()
            .find(|r| r.op == OpKind::Attention)
            .unwrap()
    };
    let (trt, sg) = (row("trtllm"), row("sglang"));
    assert_ne!(trt.timing.slow, Some(llm_ledger_core::roofline::SlowCause::KvPerQueryHead));
    assert!(trt.timing.time_s < 3.0 * trt.timing.roofline_s, "{:?}", trt.timing);
    assert!((trt.timing.time_s / sg.timing.time_s - 1.0).abs() < 0.05, "{} vs {}", trt.timing.time_s, sg.timing.time_s);
}

/// Gated DeltaNet's kernels from the linear-attention tables. The collectors keep the state in
/// bf16; Qwen3.5-27B declares fp32, so the decode row is the table's time plus the second half
/// of the state's bytes, read and written, at the H100's 2.90 TB/s. TensorRT-LLM's prompt
/// convolution rows (eager fallbacks) and a key-head shard the tables never ran are fitted.
#[test]
fn gated_deltanet_takes_the_measured_linear_attention_kernels() {
    use llm_ledger_core::kernels::{linear_us, AttentionPhase, Engine, KernelGpu, LinearKernel, LinearQuery, Tables};
    use llm_ledger_core::ops::OpKind;
    use llm_ledger_core::roofline::{FittedKernel, TimeSource};
    use llm_ledger_core::Ledger;
    // h100_sxm/trtllm/linear_attention.bin: fused_recurrent_gated_delta_rule, 16 key heads, 48
    // value heads of 128 × 128, batch 64: 107.3 µs.
    let q = LinearQuery {
        rule: llm_ledger_core::model::Recurrence::GatedDelta,
        kernel: LinearKernel::DeltaRule,
        phase: AttentionPhase::Generation,
        key_heads: 16.0,
        value_heads: 48.0,
        key_head_dim: 128.0,
        value_head_dim: 128.0,
        batch: 64.0,
        seq_len: 1.0,
    };
    let table_us = linear_us(Tables::newest(KernelGpu::H100Sxm, Engine::Trtllm), &q).unwrap();
    assert!((table_us / 107.3 - 1.0).abs() < 1e-3, "{table_us}");
    // A shard of 8 key heads was never run on TensorRT-LLM: no table.
    assert_eq!(
        linear_us(
            Tables::newest(KernelGpu::H100Sxm, Engine::Trtllm),
            &LinearQuery { key_heads: 8.0, value_heads: 24.0, ..q }
        ),
        None
    );
    let ledger = |engine: &str, tp: &str, phase: &str| {
        let pairs = [
            ("model", "qwen3.5-27b"),
            ("engine", engine),
            ("tp", tp),
            ("phase", phase),
            ("batch", if phase == "decode" { "64" } else { "1" }),
            ("ctx", "4096"),
        ];
        Ledger::build(&llm_ledger_core::testing::scenario(&pairs))
    };
    let row = |l: &Ledger, kind: OpKind| l.rows.iter().find(|r| r.op == kind).unwrap().clone();
    let decode = ledger("trtllm", "1", "decode");
    let scan = row(&decode, OpKind::DeltaRule);
    // 64 sequences × 48 heads × 128 × 128 × (4 − 2) B, read and written: 201,326,592 B at 2.90 TB/s.
    let extra_us = 201_326_592.0 / 2.90e12 * 1e6;
    let per_layer_us = scan.timing.time_s / scan.instances as f64 * 1e6;
    assert!((per_layer_us / (table_us + extra_us) - 1.0).abs() < 1e-3, "{per_layer_us} vs {table_us} + {extra_us}");
    assert!(matches!(scan.timing.source, Some(TimeSource::Table { .. })), "{:?}", scan.timing.source);
    let prefill = ledger("trtllm", "1", "prefill");
    assert_eq!(row(&prefill, OpKind::ShortConv).timing.source, Some(TimeSource::Fitted(FittedKernel::Vector)));
    assert!(matches!(row(&prefill, OpKind::DeltaRule).timing.source, Some(TimeSource::Table { .. })));
    let tp4 = ledger("trtllm", "4", "decode");
    assert_eq!(row(&tp4, OpKind::DeltaRule).timing.source, Some(TimeSource::Fitted(FittedKernel::Recurrence)));
    let vllm_tp4 = ledger("vllm", "4", "decode");
    assert!(matches!(row(&vllm_tp4, OpKind::DeltaRule).timing.source, Some(TimeSource::Table { .. })));
}

/// vLLM's fp8_block GEMM tables were timed without CUDA graphs (the host's dispatch included:
/// 150–640 µs for a 1 × 32 × 32 GEMM): a CUDA-graph clock does not read them.
#[test]
fn eagerly_timed_tables_are_not_read_by_a_graph_clock() {
    use llm_ledger_core::kernels::{gemm_us, Engine, GemmDtype, KernelGpu, Tables};
    use llm_ledger_core::ops::OpKind;
    use llm_ledger_core::roofline::{FittedKernel, TimeSource};
    use llm_ledger_core::Ledger;
    assert!(
        gemm_us(Tables::newest(KernelGpu::B200Sxm, Engine::Vllm), GemmDtype::Fp8Block, 1.0, 32.0, 32.0).unwrap()
            > 100.0
    );
    assert!(!GemmDtype::Fp8Block.timed_in_cuda_graphs(Engine::Vllm));
    assert!(GemmDtype::Fp8Block.timed_in_cuda_graphs(Engine::Sglang));
    let source = |engine: &str| {
        let sc = llm_ledger_core::testing::scenario(&[("model", "deepseek-v3"), ("gpu", "b200"), ("engine", engine)]);
        Ledger::build(&sc).rows.into_iter().find(|r| r.op == OpKind::QAProj).unwrap().timing.source
    };
    assert_eq!(source("vllm"), Some(TimeSource::Fitted(FittedKernel::Gemm)));
    assert_eq!(source("sglang").unwrap().words(), "table:b200_sxm/sglang/0.5.14/gemm");
}

/// Kimi Delta Attention's kernels from the `kda` tables. SGLang measured them at 0.5.16 alone
/// (the kimi-k3 branch build: `collector/sglang/collect_kda.py`, "KDA kernels do not exist in
/// stock sglang releases"), so the default 0.5.14 reads that first version holding them, and
/// says so. On Kimi-K3's TP 8 shard (12 heads) the decode is one fused kernel,
/// `kda_fused_decode` (b200_sxm/kda/sglang/0.5.16/kda_perf.parquet, batch 16: 8.6816 µs): the
/// delta-rule row is that kernel and the convolution runs inside it. vLLM's KDA measurement is
/// a source build outside the release order (not embedded): fitted.
#[test]
fn kimi_delta_attention_takes_the_measured_kda_kernels() {
    use llm_ledger_core::kernels::{Engine, KernelGpu, KernelTable, Tables};
    use llm_ledger_core::ops::OpKind;
    use llm_ledger_core::roofline::{FittedKernel, TimeSource};
    use llm_ledger_core::Ledger;
    let sglang = Tables::newest(KernelGpu::B200Sxm, Engine::Sglang);
    assert_eq!((sglang.version, sglang.version_of(KernelTable::Kda)), ("0.5.14", Some("0.5.16")));
    let ledger = |engine: &str, tp: &str| {
        let pairs = [
            ("model", "kimi-k3"),
            ("gpu", "b200"),
            ("engine", engine),
            ("tp", tp),
            ("phase", "decode"),
            ("batch", "16"),
            ("ctx", "2048"),
        ];
        Ledger::build(&llm_ledger_core::testing::scenario(&pairs))
    };
    let row = |l: &Ledger, kind: OpKind| l.rows.iter().find(|r| r.op == kind).unwrap().clone();
    let tp8 = ledger("sglang", "8");
    let scan = row(&tp8, OpKind::DeltaRule);
    let kda = TimeSource::Table {
        gpu: KernelGpu::B200Sxm,
        engine: Some(Engine::Sglang),
        version: "0.5.16",
        table: KernelTable::Kda,
    };
    assert_eq!(scan.timing.source, Some(kda));
    let per_layer_us = scan.timing.time_s / scan.instances as f64 * 1e6;
    assert!((per_layer_us / 8.6816 - 1.0).abs() < 1e-3, "{per_layer_us}");
    assert_eq!(row(&tp8, OpKind::ShortConv).timing.source, Some(TimeSource::Fused));
    // TP 4 (24 heads): the separate convolution and packed recurrence kernels, both measured.
    let tp4 = ledger("sglang", "4");
    assert_eq!(row(&tp4, OpKind::ShortConv).timing.source, Some(kda));
    assert_eq!(row(&tp4, OpKind::DeltaRule).timing.source, Some(kda));
    let vllm = ledger("vllm", "8");
    assert_eq!(row(&vllm, OpKind::DeltaRule).timing.source, Some(TimeSource::Fitted(FittedKernel::Recurrence)));
}

/// Mamba-2's short convolution from the `mamba2` tables (TensorRT-LLM; the tables hold no scan
/// kernel, so the scan stays fitted). Nemotron 3 Nano (8 groups of 128, 64 heads of 64) on the
/// H100, batch 64: `causal_conv1d_update` measured for two models of this shape, 5.2512 and
/// 5.1360 µs (h100_sxm/linear_attention/trtllm/1.3.0rc20/mamba2_perf.parquet), averaged. The
/// prompt convolution of TensorRT-LLM's table (a padded benchmark) is not read.
#[test]
fn mamba2_takes_the_measured_convolution_and_a_fitted_scan() {
    use llm_ledger_core::kernels::{Engine, KernelGpu, KernelTable};
    use llm_ledger_core::ops::OpKind;
    use llm_ledger_core::roofline::{FittedKernel, TimeSource};
    use llm_ledger_core::Ledger;
    let ledger = |phase: &str, batch: &str| {
        let pairs = [
            ("model", "nemotron-3-nano-30b-a3b"),
            ("gpu", "h100-sxm"),
            ("engine", "trtllm"),
            ("phase", phase),
            ("batch", batch),
            ("ctx", "2048"),
        ];
        Ledger::build(&llm_ledger_core::testing::scenario(&pairs))
    };
    let row = |l: &Ledger, kind: OpKind| l.rows.iter().find(|r| r.op == kind).unwrap().clone();
    let decode = ledger("decode", "64");
    let conv = row(&decode, OpKind::ShortConv);
    let mamba2 = TimeSource::Table {
        gpu: KernelGpu::H100Sxm,
        engine: Some(Engine::Trtllm),
        version: "1.3.0rc20",
        table: KernelTable::Mamba2,
    };
    assert_eq!(conv.timing.source, Some(mamba2));
    let per_layer_us = conv.timing.time_s / conv.instances as f64 * 1e6;
    let measured_us = (5.2512 + 5.1360) / 2.0;
    assert!((per_layer_us / measured_us - 1.0).abs() < 1e-3, "{per_layer_us} vs {measured_us}");
    assert_eq!(row(&decode, OpKind::SsmScan).timing.source, Some(TimeSource::Fitted(FittedKernel::Recurrence)));
    let prefill = ledger("prefill", "1");
    assert_eq!(row(&prefill, OpKind::ShortConv).timing.source, Some(TimeSource::Fitted(FittedKernel::Vector)));
}

/// DeepSeek-V4's hyper-connections from the `mhc` tables: one site's mixing kernel, the source's
/// row over a decoder layer's two sites halved (b200_sxm/mhc/sglang/0.5.14/mhc_module_perf.parquet,
/// hidden 4096, 4 streams, 16 tokens: `pre` 0.0187 ms and `post` 0.0064 ms for both sites). The
/// final collapse was not measured (fitted), nor is anything on a GPU without the table.
#[test]
fn hyper_connections_take_the_measured_mhc_kernels() {
    use llm_ledger_core::kernels::{Engine, KernelGpu, KernelTable};
    use llm_ledger_core::ops::OpKind;
    use llm_ledger_core::roofline::{FittedKernel, TimeSource};
    use llm_ledger_core::Ledger;
    let ledger = |gpu: &str| {
        let pairs = [
            ("model", "deepseek-v4-flash"),
            ("gpu", gpu),
            ("engine", "sglang"),
            ("phase", "decode"),
            ("batch", "16"),
            ("ctx", "2048"),
        ];
        Ledger::build(&llm_ledger_core::testing::scenario(&pairs))
    };
    let row = |l: &Ledger, kind: OpKind| l.rows.iter().find(|r| r.op == kind).unwrap().clone();
    let b200 = ledger("b200");
    let mhc = TimeSource::Table {
        gpu: KernelGpu::B200Sxm,
        engine: Some(Engine::Sglang),
        version: "0.5.14",
        table: KernelTable::Mhc,
    };
    for (kind, both_sites_ms) in [
        (OpKind::AttnHcPre, 0.0187),
        (OpKind::MlpHcPre, 0.0187),
        (OpKind::AttnHcPost, 0.0064),
        (OpKind::MlpHcPost, 0.0064),
    ] {
        let r = row(&b200, kind);
        assert_eq!(r.timing.source, Some(mhc), "{kind:?}");
        let per_site_us = r.timing.time_s / r.instances as f64 * 1e6;
        assert!((per_site_us / (both_sites_ms * 1e3 / 2.0) - 1.0).abs() < 2e-3, "{kind:?}: {per_site_us}");
    }
    assert_eq!(row(&b200, OpKind::HcHead).timing.source, Some(TimeSource::Fitted(FittedKernel::Vector)));
    let a100 = ledger("a100-80gb-sxm");
    assert_eq!(row(&a100, OpKind::AttnHcPre).timing.source, Some(TimeSource::Fitted(FittedKernel::Vector)));
}

/// The table families a model's operators can read, for the footer's list of families read from
/// another version: Llama 3 8B reads GEMMs, attention and the collectives only; each 2026 family
/// its own.
#[test]
fn a_model_reads_the_tables_of_its_own_operators() {
    use llm_ledger_core::clock::model_reads;
    use llm_ledger_core::kernels::KernelTable;
    let reads = |model: &str| -> Vec<&'static str> {
        let sc = llm_ledger_core::testing::scenario(&[("model", model)]);
        KernelTable::ALL.into_iter().filter(|&t| model_reads(&sc.model, t)).map(KernelTable::name).collect()
    };
    assert_eq!(reads("llama-3-8b"), ["gemm", "attention", "custom_allreduce", "nccl"]);
    assert_eq!(reads("deepseek-v3"), ["gemm", "mla", "mla_bmm", "custom_allreduce", "nccl", "moe"]);
    assert!(reads("kimi-k3").contains(&"kda") && reads("kimi-k3").contains(&"mla"));
    assert!(reads("nemotron-3-nano-30b-a3b").contains(&"mamba2"));
    assert!(reads("qwen3.5-27b").contains(&"linear_attention"));
    assert!(reads("deepseek-v4-flash").contains(&"mhc"));
    assert!(!reads("kimi-k3").contains(&"mhc"));
}
