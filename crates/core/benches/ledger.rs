//! Speed of the core (the measured clock unless a name says roofline): one ledger, one allocation-free
//! summary, a 1,000-point batch × context grid, a MoE + MLA ledger, a 1M-line context histogram parsed
//! and resolved, the serving simulator, and the deployment searches. Run with `cargo bench -p llm-ledger-core`.

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
    // The default clock is the measured one (≤ 2 µs a decode ledger); the roofline for contrast.
    let roofline = decode.with_clock(llm_ledger_core::engine::Clock::ROOFLINE);
    c.bench_function("ledger decode llama-3-8b", |b| b.iter(|| Ledger::build(black_box(&decode))));
    c.bench_function("ledger decode llama-3-8b, roofline clock", |b| b.iter(|| Ledger::build(black_box(&roofline))));
    c.bench_function("summary decode llama-3-8b, roofline clock", |b| b.iter(|| summarise(black_box(&roofline))));
    c.bench_function("ledger prefill llama-3-8b", |b| b.iter(|| Ledger::build(black_box(&prefill))));
    c.bench_function("summary decode llama-3-8b", |b| b.iter(|| summarise(black_box(&decode))));
    c.bench_function("ledger decode deepseek-v3 (MoE + MLA)", |b| b.iter(|| Ledger::build(black_box(&moe))));
    // Tensor parallel: the all-reduce tables beside the GEMM and attention tables.
    let tp2 =
        llm_ledger_core::testing::scenario(&[("model", "llama-3-8b"), ("batch", "8"), ("ctx", "2048"), ("tp", "2")]);
    c.bench_function("ledger decode llama-3-8b tp 2 (all-reduce tables)", |b| {
        b.iter(|| Ledger::build(black_box(&tp2)))
    });

    c.bench_function("zoom tree with tiles, llama-3-8b decode", |b| {
        b.iter(|| llm_ledger_core::zoom::ZoomTree::build(black_box(&decode)))
    });
    c.bench_function("zoom tree with tiles, llama-3-8b prefill", |b| {
        b.iter(|| llm_ledger_core::zoom::ZoomTree::build(black_box(&prefill)))
    });
    c.bench_function("zoom tree with tiles, deepseek-v3 decode", |b| {
        b.iter(|| llm_ledger_core::zoom::ZoomTree::build(black_box(&moe)))
    });

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
    // The sweep engine itself: memory footprint per point, chunks evaluated in parallel (rayon).
    let sweep = llm_ledger_core::sweep::Sweep::new(
        decode.clone(),
        llm_ledger_core::sweep::Axis::parse("batch", "1..40", 1, 1 << 20).unwrap(),
        llm_ledger_core::sweep::Axis::parse("ctx", "512..12800:512", 0, 1 << 40).unwrap(),
        2e9,
    )
    .unwrap();
    group.bench_function("1000-point Sweep::run (all cores), llama-3-8b", |b| {
        b.iter(|| {
            let mut n = 0u32;
            sweep.run(|p| {
                n += p.fits as u32;
                std::ops::ControlFlow::Continue(())
            });
            black_box(n)
        })
    });
    group.finish();
}

/// A context histogram of 1,048,576 distinct lengths (one line each, about 14 MB), parsed and
/// resolved into a scenario: the issue-11 case that once took minutes (a quadratic bucket merge).
/// Must stay under a second.
fn histogram(c: &mut Criterion) {
    use llm_ledger_core::scenario::{parse_context_histogram, Catalog, ScenarioRequest};
    let lines = llm_ledger_core::limits::MAX_CONTEXT_BUCKETS as u64;
    let mut text = String::from("context,count\n");
    for i in 0..lines {
        // Distinct lengths in a scrambled order (a multiplicative permutation of 0..2^20).
        text.push_str(&format!("{},{}\n", (i * 769_957) % lines + 1, 1 + i % 3));
    }
    let catalog = Catalog::builtin();
    let mut group = c.benchmark_group("histogram");
    group.sample_size(10).throughput(Throughput::Elements(lines));
    group.bench_function("parse and resolve a 1M-line histogram", |b| {
        b.iter(|| {
            let mix = parse_context_histogram(black_box(&text)).unwrap();
            let req = ScenarioRequest { context_mix: Some(mix), ..Default::default() };
            black_box(req.resolve(&catalog).unwrap().workload.contexts.batch())
        })
    });
    group.finish();
}

/// 10,000 requests of 1,024 + 256 tokens on Llama 3 8B / H100 (vLLM-like
/// defaults: 256 sequences, 8,192 tokens per step) at 20 requests/s, one core, in ≤ 0.5 s; and a
/// lightly loaded run (2 requests/s), where steps are many and small.
fn simulate(c: &mut Criterion) {
    use llm_ledger_core::engine::Engine;
    use llm_ledger_core::simulate::workload::{Arrivals, Conversations, Lengths};
    use llm_ledger_core::simulate::{simulate, SimConfig};
    let sc = scenario("llama-3-8b", "decode", 1, 2048);
    let mut group = c.benchmark_group("simulate");
    group.sample_size(10).throughput(Throughput::Elements(10_000));
    for rate in [20.0, 2.0] {
        let cfg = SimConfig {
            requests: 10_000,
            prompt: Lengths::Fixed(1024),
            output: Lengths::Fixed(256),
            ..SimConfig::poisson(rate)
        };
        group.bench_function(format!("10k requests 1024+256 llama-3-8b h100 at {rate}/s"), |b| {
            b.iter(|| black_box(simulate(black_box(&sc), &cfg, |_| {}).unwrap().summary.completed))
        });
    }
    // The engines' own schedulers: vLLM (1 % watermark, CUDA-graph padding, overlapped host
    // time) and TensorRT-LLM (guaranteed no-evict), and a block-level prefix cache over
    // conversations (5,000 conversations of 2 turns behind a 1,024-token system prompt).
    let base = SimConfig {
        requests: 10_000,
        prompt: Lengths::Fixed(1024),
        output: Lengths::Fixed(256),
        ..SimConfig::poisson(20.0)
    };
    for engine in [Engine::Vllm, Engine::Trtllm] {
        let cfg = base.clone().for_engine(engine, &sc.gpu);
        group.bench_function(
            format!("10k requests 1024+256 llama-3-8b h100 at 20/s, {} scheduler", engine.name()),
            |b| b.iter(|| black_box(simulate(black_box(&sc), &cfg, |_| {}).unwrap().summary.completed)),
        );
    }
    let conversations = Conversations {
        conversations: 5000,
        rate_per_s: 10.0,
        turns: 2,
        think_s: 30.0,
        system_tokens: 1024,
        user_tokens: 128,
        output_tokens: 256,
    };
    let trace = conversations.trace(0).unwrap();
    let cfg = SimConfig { arrivals: Arrivals::Trace(trace.into()), prefix_cache: true, ..base.clone() };
    group.bench_function("10k conversation turns llama-3-8b h100, prefix cache", |b| {
        b.iter(|| black_box(simulate(black_box(&sc), &cfg, |_| {}).unwrap().summary.completed))
    });
    group.finish();
    // 100,000 requests at 20/s.
    let mut group = c.benchmark_group("simulate 100k");
    group.sample_size(10).throughput(Throughput::Elements(100_000));
    let cfg = SimConfig { requests: 100_000, ..base };
    group.bench_function("100k requests 1024+256 llama-3-8b h100 at 20/s", |b| {
        b.iter(|| black_box(simulate(black_box(&sc), &cfg, |_| {}).unwrap().summary.completed))
    });
    group.finish();
}

/// `plan --rate`'s search: every layout of up to 8 H100s and its scheduler candidates simulated
/// in parallel on every core (rayon), 2,000 requests each, at 10 requests/s under 2 s TTFT and
/// 50 ms TPOT.
fn plan_rate(c: &mut Criterion) {
    use llm_ledger_core::plan_serving::{plan_serving, ServingPlanRequest, DEFAULT_SEARCH_REQUESTS};
    use llm_ledger_core::serving::{Price, PriceSource};
    use llm_ledger_core::simulate::SimConfig;
    let sc = scenario("llama-3-8b", "decode", 1, 2048);
    let req = ServingPlanRequest {
        rate_per_s: 10.0,
        ttft_bound_s: 2.0,
        tpot_bound_s: 0.05,
        max_gpus: 8,
        gpus_total: 8,
        price: Price { usd_per_hour: 2.0, source: PriceSource::User },
        sim: SimConfig { requests: DEFAULT_SEARCH_REQUESTS, ..SimConfig::poisson(10.0) },
    };
    let mut group = c.benchmark_group("plan --rate");
    group.sample_size(10);
    group.bench_function("plan --rate 10 llama-3-8b h100, up to 8 GPUs", |b| {
        b.iter(|| black_box(plan_serving(black_box(&sc), &req).unwrap().simulations))
    });
    group.finish();
}

/// `plan`'s search without a rate: every layout of up to 64 H100s (pipeline stages included),
/// each sized by its memory wall (`memory::max_batch`) and bisected for the largest batch under
/// 50 ms TPOT; and `plan --pareto`, every layout at batches 1, 2, 4 … up to its wall.
fn plan_static(c: &mut Criterion) {
    use llm_ledger_core::plan::{frontier, plan, PlanRequest};
    use llm_ledger_core::serving::{Price, PriceSource};
    let sc = scenario("llama-3-8b", "decode", 1, 2048);
    let req = PlanRequest {
        ctx: 2048,
        tpot_bound_s: 0.05,
        max_gpus: 64,
        price: Price { usd_per_hour: 2.0, source: PriceSource::User },
        reserve_bytes: 2e9,
        batches: None,
    };
    let mut group = c.benchmark_group("plan");
    group.sample_size(10);
    group.bench_function("plan --tpot-ms 50 llama-3-8b h100, up to 64 GPUs", |b| {
        b.iter(|| black_box(plan(black_box(&sc), &req).unwrap().ranked.len()))
    });
    let unbounded = PlanRequest { tpot_bound_s: f64::INFINITY, ..req };
    group.bench_function("plan --pareto llama-3-8b h100, up to 64 GPUs", |b| {
        b.iter(|| black_box(frontier(black_box(&sc), &unbounded).unwrap().deployments.len()))
    });
    group.finish();
}

criterion_group!(core, benches, histogram, simulate, plan_rate, plan_static);
criterion_main!(core);
