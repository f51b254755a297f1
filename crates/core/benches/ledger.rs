//! Speed of the core: one ledger, one allocation-free summary, a 1,000-point batch × context grid,
//! and a MoE + MLA ledger. Run with `cargo bench -p llm-ledger-core`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use llm_ledger_core::workload::Contexts;
use llm_ledger_core::{summarise, Ledger, Scenario};

fn scenario(model: &str, phase: &str, batch: u64, ctx: u64) -> Scenario {
    let (b, c) = (batch.to_string(), ctx.to_string());
    llm_ledger_core::testing::scenario(&[("model", model), ("phase", phase), ("batch", &b), ("ctx", &c)])
}

fn benches(c: &mut Criterion) {
    let decode = scenario("llama-3-8b", "decode", 1, 2048);
    let prefill = scenario("llama-3-8b", "prefill", 1, 2048);
    let moe = scenario("deepseek-v3", "decode", 64, 4096);
    c.bench_function("ledger decode llama-3-8b", |b| b.iter(|| Ledger::build(black_box(&decode))));
    c.bench_function("ledger prefill llama-3-8b", |b| b.iter(|| Ledger::build(black_box(&prefill))));
    c.bench_function("summary decode llama-3-8b", |b| b.iter(|| summarise(black_box(&decode))));
    c.bench_function("ledger decode deepseek-v3 (MoE + MLA)", |b| b.iter(|| Ledger::build(black_box(&moe))));

    // 1,000 points: batch 1..=40 × 25 contexts, summarised (the sweep hot path), on one core.
    let mut group = c.benchmark_group("sweep");
    group.throughput(Throughput::Elements(1000));
    group.bench_function("1000-point batch x ctx grid, llama-3-8b", |b| {
        b.iter(|| {
            let mut s = decode.clone();
            let mut acc = 0.0;
            for batch in 1..=40u64 {
                for i in 0..25u64 {
                    s.workload.contexts = Contexts::Uniform { batch, tokens: 512 * (i + 1) };
                    acc += summarise(&s).timing.time_s;
                }
            }
            black_box(acc)
        })
    });
    group.finish();
}

criterion_group!(core, benches);
criterion_main!(core);
