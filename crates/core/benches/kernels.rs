//! Speed of the measured-kernel lookups (`core::kernels`): one GEMM and one attention lookup, on
//! and between grid points. The files are parsed before timing (the first lookup of a file
//! parses its header once). Run with `cargo bench -p llm-ledger-core --bench kernels`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use llm_ledger_core::kernels::{
    allreduce_us, attention_us, gemm_us, AttentionPhase, AttentionQuery, AttnDtype, Engine, GemmDtype, KernelGpu,
};

fn benches(c: &mut Criterion) {
    let (gpu, engine, bf16) = (KernelGpu::H100Sxm, Engine::Trtllm, GemmDtype::Bf16);
    let decode = AttentionQuery {
        phase: AttentionPhase::Generation,
        dtype: AttnDtype::Bf16,
        kv_dtype: AttnDtype::Bf16,
        head_dim: 128,
        heads: 32.0,
        kv_heads: 8.0,
        window: 0,
        batch: 8.0,
        length: 2047.0,
    };
    // Off-grid everywhere: batch 24, length 3000, 36 heads over 6 KV heads.
    let between = AttentionQuery { batch: 24.0, length: 3000.0, heads: 36.0, kv_heads: 6.0, ..decode };
    let prefill = AttentionQuery { phase: AttentionPhase::Context, batch: 4.0, length: 3000.0, ..decode };
    // Parse the files outside the timing.
    assert!(gemm_us(gpu, engine, bf16, 1.0, 1.0, 1.0).is_some());
    assert!(attention_us(gpu, engine, &decode).is_some());
    assert!(attention_us(gpu, engine, &prefill).is_some());
    assert!(allreduce_us(gpu, engine, 8, 1e6).is_some());

    let mut g = c.benchmark_group("kernels");
    g.bench_function("gemm on grid (4096, 4096, 4096)", |b| {
        b.iter(|| gemm_us(gpu, engine, bf16, black_box(4096.0), black_box(4096.0), black_box(4096.0)))
    });
    g.bench_function("gemm between grid points (3000, 28672, 4096)", |b| {
        b.iter(|| gemm_us(gpu, engine, bf16, black_box(3000.0), black_box(28672.0), black_box(4096.0)))
    });
    g.bench_function("attention decode on grid", |b| b.iter(|| attention_us(gpu, engine, black_box(&decode))));
    g.bench_function("attention decode between everything", |b| {
        b.iter(|| attention_us(gpu, engine, black_box(&between)))
    });
    g.bench_function("attention prefill between grid points", |b| {
        b.iter(|| attention_us(gpu, engine, black_box(&prefill)))
    });
    g.bench_function("attention sglang (default kernel fa3)", |b| {
        b.iter(|| attention_us(gpu, Engine::Sglang, black_box(&between)))
    });
    g.bench_function("attention b200 vllm (fastest of the kernels)", |b| {
        b.iter(|| attention_us(KernelGpu::B200Sxm, Engine::Vllm, black_box(&between)))
    });
    g.bench_function("all-reduce 8 GPUs 3 MB", |b| b.iter(|| allreduce_us(gpu, engine, 8, black_box(3e6))));
    g.finish();
}

criterion_group!(kernel_benches, benches);
criterion_main!(kernel_benches);
