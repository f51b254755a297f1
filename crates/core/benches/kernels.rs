//! Speed of the measured-kernel lookups (`core::kernels`), one case or more per kernel family:
//! GEMMs (the raw table, and the envelope the clock reads, which keeps each shape's curve in m),
//! attention in decode and prefill, MLA and its batched matmuls, the fused MoE kernel, the
//! all-reduce and NCCL's other collectives; on and between grid points. The files are parsed before timing (the first lookup
//! of a file parses its header once). Run with `cargo bench -p llm-ledger-core --bench kernels`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use llm_ledger_core::kernels::{
    allreduce_us, attention_us, gemm_envelope_us, gemm_us, mla_bmm_us, mla_us, moe_us, nccl_us, AttentionPhase,
    AttentionQuery, AttnDtype, Collective, Engine, GemmDtype, KernelGpu, MlaBmm, MlaQuery, Tables,
};

fn benches(c: &mut Criterion) {
    let (gpu, engine, bf16) = (KernelGpu::H100Sxm, Engine::Trtllm, GemmDtype::Bf16);
    let decode = llm_ledger_core::testing::llama_attention(AttentionPhase::Generation, 8.0, 2047.0);
    // Off-grid everywhere: batch 24, length 3000, 36 heads over 6 KV heads.
    let between = AttentionQuery { batch: 24.0, length: 3000.0, heads: 36.0, kv_heads: 6.0, ..decode };
    let prefill = AttentionQuery { phase: AttentionPhase::Context, batch: 4.0, length: 3000.0, ..decode };
    // Parse the files outside the timing.
    assert!(gemm_us(Tables::newest(gpu, engine), bf16, 1.0, 1.0, 1.0).is_some());
    assert!(attention_us(Tables::newest(gpu, engine), &decode).is_some());
    assert!(attention_us(Tables::newest(gpu, engine), &prefill).is_some());
    assert!(allreduce_us(Tables::newest(gpu, engine), 8, 1e6).is_some());
    let mla = MlaQuery {
        phase: AttentionPhase::Generation,
        dtype: AttnDtype::Bf16,
        kv_dtype: AttnDtype::Bf16,
        heads: 16.0,
        batch: 24.0,
        length: 3000.0,
    };
    assert!(mla_us(Tables::newest(gpu, engine), &mla).is_some());
    assert!(mla_bmm_us(Tables::newest(gpu, engine), MlaBmm::Pre, AttnDtype::Bf16, 16.0, 24.0).is_some());
    assert!(nccl_us(gpu, Collective::AllGather, 4, 1e6).is_some());
    // Mixtral 8x7B's experts between measured token counts (24: between 16 and 32).
    let moe = llm_ledger_core::testing::mixtral_moe(24.0);
    assert!(moe_us(Tables::newest(gpu, engine), &moe).is_some());

    let mut g = c.benchmark_group("kernels");
    g.bench_function("gemm on grid (4096, 4096, 4096)", |b| {
        b.iter(|| gemm_us(Tables::newest(gpu, engine), bf16, black_box(4096.0), black_box(4096.0), black_box(4096.0)))
    });
    g.bench_function("gemm between grid points (3000, 28672, 4096)", |b| {
        b.iter(|| gemm_us(Tables::newest(gpu, engine), bf16, black_box(3000.0), black_box(28672.0), black_box(4096.0)))
    });
    g.bench_function("gemm envelope, the clock's lookup (4096 rows × 14336 × 4096)", |b| {
        b.iter(|| {
            gemm_envelope_us(
                Tables::newest(gpu, engine),
                bf16,
                black_box(4096.0),
                black_box(14336.0),
                black_box(4096.0),
            )
        })
    });
    g.bench_function("gemm envelope, rows changing (decode batches 1..64, 6144 × 4096)", |b| {
        let mut m = 0.0;
        b.iter(|| {
            m = if m >= 64.0 { 1.0 } else { m + 1.0 };
            gemm_envelope_us(Tables::newest(gpu, engine), bf16, black_box(m), black_box(6144.0), black_box(4096.0))
        })
    });
    // The clock keeps the attention lookup it answered last: each benchmark asks two queries in
    // turn (the second one token longer), so that every call is looked up.
    let turns = |q: AttentionQuery| [q, AttentionQuery { length: q.length + 1.0, ..q }];
    let mut bench_attention = |name: &str, gpu: KernelGpu, engine: Engine, q: AttentionQuery| {
        let (qs, mut i) = (turns(q), 0);
        g.bench_function(format!("{name} (two lengths in turn)"), |b| {
            b.iter(|| {
                i ^= 1;
                attention_us(Tables::newest(gpu, engine), black_box(&qs[i]))
            })
        });
    };
    bench_attention("attention decode on grid", gpu, engine, decode);
    bench_attention("attention decode between everything", gpu, engine, between);
    bench_attention("attention prefill between grid points", gpu, engine, prefill);
    bench_attention("attention sglang (default kernel fa3)", gpu, Engine::Sglang, between);
    bench_attention("attention b200 vllm (fastest of the kernels)", KernelGpu::B200Sxm, Engine::Vllm, between);
    g.bench_function("mla decode between grid points", |b| {
        b.iter(|| mla_us(Tables::newest(gpu, engine), black_box(&mla)))
    });
    g.bench_function("mla batched matmul (absorption)", |b| {
        b.iter(|| {
            mla_bmm_us(Tables::newest(gpu, engine), MlaBmm::Pre, AttnDtype::Bf16, black_box(16.0), black_box(24.0))
        })
    });
    g.bench_function("moe between token counts (mixtral-8x7b, 24 tokens)", |b| {
        b.iter(|| moe_us(Tables::newest(gpu, engine), black_box(&moe)))
    });
    g.bench_function("all-reduce 8 GPUs 3 MB", |b| {
        b.iter(|| allreduce_us(Tables::newest(gpu, engine), 8, black_box(3e6)))
    });
    g.bench_function("nccl all-gather 4 GPUs 1 MB", |b| {
        b.iter(|| nccl_us(gpu, Collective::AllGather, 4, black_box(1e6)))
    });
    g.finish();
}

criterion_group!(kernel_benches, benches);
criterion_main!(kernel_benches);
