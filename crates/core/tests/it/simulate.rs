//! The continuous-batching simulator against the static latency model, queueing
//! theory and its own bookkeeping.

use llm_ledger_core::latency::Latency;
use llm_ledger_core::ledger::{summarise, summarise_each};
use llm_ledger_core::ops::OpKind;
use llm_ledger_core::simulate::budget::CHECK_STEPS;
use llm_ledger_core::simulate::rng::Pcg32;
use llm_ledger_core::simulate::stats::RELATIVE_ACCURACY;
use llm_ledger_core::simulate::workload::{Arrivals, Lengths, TraceRequest};
use llm_ledger_core::simulate::workload::{MAX_CV, MIN_CV};
use llm_ledger_core::simulate::{
    simulate, simulate_within, Budget, Deployment, SimConfig, SimSummary, Simulation, StepClock, MIN_RATE_PER_S,
};
use llm_ledger_core::testing::scenario;
use llm_ledger_core::workload::{Chunk, ContextBucket, Contexts, Phase, Workload};
use llm_ledger_core::Error;
use llm_ledger_core::Scenario;
use std::sync::atomic::{AtomicBool, Ordering};

fn llama() -> Scenario {
    scenario(&[])
}

fn run(sc: &Scenario, cfg: &SimConfig) -> Simulation {
    simulate(sc, cfg, |_| {}).unwrap()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    ((a - b) / b).abs() <= rel
}

fn fixed(cfg: SimConfig, requests: u64, prompt: u64, output: u64) -> SimConfig {
    SimConfig { requests, prompt: Lengths::Fixed(prompt), output: Lengths::Fixed(output), ..cfg }
}

#[test]
fn at_a_very_low_rate_ttft_and_tpot_equal_the_static_latency_model() {
    for (model, counting) in [("llama-3-8b", "full"), ("llama-3-8b", "seed"), ("gemma-2-9b", "full")] {
        let sc = scenario(&[("model", model), ("counting", counting)]);
        // One request every 1,000 s: never two in flight.
        let cfg = fixed(SimConfig::poisson(0.001), 5, 700, 40);
        let s = run(&sc, &cfg).summary;
        let stat = Latency::of(&sc, 1, 700, 40, cfg.reserve_bytes).unwrap();
        assert_eq!(s.max_batch, 1, "{model}");
        assert!(close(s.ttft_s.mean, stat.ttft_s, 1e-9), "{model}: {} vs {}", s.ttft_s.mean, stat.ttft_s);
        assert!(close(s.tpot_s.mean, stat.tpot_s.unwrap(), 1e-9), "{model}: {} vs {:?}", s.tpot_s.mean, stat.tpot_s);
        assert!(close(s.e2e_s.mean, stat.e2e_s, 1e-9));
    }
}

#[test]
fn a_closed_loop_of_equal_requests_matches_a_static_batch() {
    let sc = llama();
    for c in [1u64, 4, 16] {
        let cfg = SimConfig {
            arrivals: Arrivals::Closed { concurrency: c },
            ..fixed(SimConfig::poisson(1.0), 3 * c, 512, 64)
        };
        let s = run(&sc, &cfg).summary;
        let stat = Latency::of(&sc, c, 512, 64, cfg.reserve_bytes).unwrap();
        assert_eq!((s.completed, s.max_batch), (3 * c, c));
        assert!(close(s.ttft_s.mean, stat.ttft_s, 1e-9), "C={c}: {} vs {}", s.ttft_s.mean, stat.ttft_s);
        assert!(close(s.tpot_s.mean, stat.tpot_s.unwrap(), 1e-9), "C={c}");
        assert!(close(s.duration_s, 3.0 * stat.e2e_s, 1e-9), "C={c}");
    }
}

#[test]
fn littles_law_holds() {
    for (rate, cv) in [(5.0, 1.0), (20.0, 1.0), (10.0, 3.0)] {
        let arrivals = Arrivals::Gamma { rate_per_s: rate, cv };
        let cfg = SimConfig { arrivals, ..fixed(SimConfig::poisson(rate), 2000, 1024, 128) };
        let s = run(&llama(), &cfg).summary;
        let l = s.requests_per_s * s.mean_latency_s;
        // Measured as a time integral and as a sum over requests: equal up to the edges.
        assert!(close(s.mean_in_system, l, 0.01), "rate {rate} cv {cv}: L {} vs λW {l}", s.mean_in_system);
        // The mean gap of n gamma gaps has a relative standard error cv/√n: allow 3 of them.
        let tolerance = 3.0 * cv / (s.completed as f64).sqrt();
        assert!(close(s.arrival_rate_per_s, rate, tolerance), "{} vs {rate}", s.arrival_rate_per_s);
    }
}

/// Every request finishes, every output token is produced once, and the steps processed each
/// request's cache once plus what preemption threw away.
fn assert_conserved(s: &SimSummary, requests: u64, prompt: u64, output: u64, hit: u64) {
    assert!(s.drained);
    assert_eq!(s.completed, requests);
    assert_eq!(s.output_tokens, requests * output);
    assert_eq!(s.prompt_tokens, requests * prompt);
    assert_eq!(s.processed_tokens, requests * (prompt + output - 1 - hit) + s.recomputed_tokens);
    assert_eq!(s.ttft_s.count, requests);
    assert_eq!(s.itl_s.count, requests * (output - 1));
}

#[test]
fn tokens_are_conserved_and_preempted_work_is_redone() {
    // Plenty of KV: no preemption.
    let s = run(&llama(), &fixed(SimConfig::poisson(8.0), 300, 1000, 100)).summary;
    assert_eq!(s.preemptions, 0);
    assert_conserved(&s, 300, 1000, 100, 0);
    // Llama 3 70B in fp8 on one H100: a few GB of KV for long requests arriving fast.
    let sc = scenario(&[("model", "llama-3.1-70b"), ("weights", "fp8")]);
    let cfg = SimConfig { max_seqs: 64, ..fixed(SimConfig::poisson(50.0), 200, 2000, 400) };
    let s = run(&sc, &cfg).summary;
    assert!(s.preemptions > 0, "{s:?}");
    assert!(s.recomputed_tokens > 0);
    assert!(s.max_kv_utilisation > 0.9, "{}", s.max_kv_utilisation);
    assert_conserved(&s, 200, 2000, 400, 0);
    // A prefix cache: the hit tokens are never computed.
    let cfg = SimConfig { prefix_hit: 0.5, ..fixed(SimConfig::poisson(8.0), 100, 1000, 10) };
    let s = run(&llama(), &cfg).summary;
    assert_eq!(s.prefix_hit_tokens, 100 * 500);
    assert_conserved(&s, 100, 1000, 10, 500);
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let cfg = SimConfig {
        arrivals: Arrivals::Gamma { rate_per_s: 12.0, cv: 2.0 },
        prompt: Lengths::LogNormal { median: 800.0, sigma: 0.6 },
        output: Lengths::Uniform { min: 20, max: 300 },
        requests: 500,
        ..SimConfig::poisson(1.0)
    };
    let a = run(&llama(), &cfg).summary;
    let b = run(&llama(), &cfg).summary;
    assert_eq!(a, b);
    let c = run(&llama(), &SimConfig { seed: 1, ..cfg }).summary;
    assert_ne!(a.ttft_s, c.ttft_s);
}

#[test]
fn arrivals_above_capacity_grow_the_queue_and_still_drain() {
    let s = run(&llama(), &fixed(SimConfig::poisson(200.0), 3000, 1024, 256)).summary;
    assert!(s.drained);
    assert!(s.queue_growth_per_s > 50.0, "{}", s.queue_growth_per_s);
    assert!(s.max_queue > 1000);
    let ok = run(&llama(), &fixed(SimConfig::poisson(5.0), 3000, 1024, 256)).summary;
    assert!(ok.queue_growth_per_s < 1.0, "{}", ok.queue_growth_per_s);
}

#[test]
fn chunked_prefill_and_the_schedule_change_the_tails_as_engines_do() {
    let base = fixed(SimConfig::poisson(15.0), 1500, 4000, 200);
    let big = run(&llama(), &base).summary;
    let small = run(&llama(), &SimConfig { chunk_tokens: 512, max_batched_tokens: 512, ..base.clone() }).summary;
    // Small chunks interleave prefills with decodes: a gentler ITL tail, in more steps.
    assert!(small.itl_s.p99 < big.itl_s.p99, "{} vs {}", small.itl_s.p99, big.itl_s.p99);
    assert!(small.steps > big.steps);
    // Prefill-first serves prompts before the running decodes: in a 4,096-token step shared by a
    // 4,000-token prompt and the decodes, the decodes wait (a far longer ITL tail) and prompts
    // start no later (a TTFT tail no longer). Decode-first bounds every decode's wait by a step.
    let shared = |rate: f64| SimConfig {
        max_batched_tokens: 4096,
        chunk_tokens: 4096,
        ..fixed(SimConfig::poisson(rate), 1500, 4000, 200)
    };
    let prefill_first = |c: SimConfig| SimConfig { schedule: "prefill-first".parse().unwrap(), ..c };
    let df = run(&llama(), &shared(6.0)).summary;
    let pf = run(&llama(), &prefill_first(shared(6.0))).summary;
    assert!(pf.itl_s.p99 > 1.5 * df.itl_s.p99, "ITL p99 {} vs {}", pf.itl_s.p99, df.itl_s.p99);
    assert!(pf.ttft_s.p99 <= df.ttft_s.p99, "TTFT p99 {} vs {}", pf.ttft_s.p99, df.ttft_s.p99);
    assert!(pf.tpot_s.mean > df.tpot_s.mean);
    // Nearer capacity prefill-first admits prompts until the KV cache is full and then preempts
    // the running decodes, again and again, and its queue grows; decode-first hardly preempts.
    let df = run(&llama(), &shared(7.0)).summary;
    let pf = run(&llama(), &prefill_first(shared(7.0))).summary;
    assert!(df.preemptions < 10 && df.queue_growth_per_s < 0.1, "{} preemptions", df.preemptions);
    assert!(pf.preemptions > 1000 && pf.queue_growth_per_s > 1.0, "{} preemptions", pf.preemptions);
}

#[test]
fn a_trace_is_replayed_and_goodput_counts_the_slas() {
    let trace: Vec<TraceRequest> = (0..50)
        .map(|i| TraceRequest {
            arrival_s: i as f64 * 0.1,
            prompt_tokens: 100 + 10 * i,
            output_tokens: 20 + i,
            prefix: None,
        })
        .collect();
    let cfg = SimConfig { arrivals: Arrivals::Trace(trace.into()), ..SimConfig::poisson(1.0) };
    let s = run(&llama(), &cfg).summary;
    assert_eq!(s.completed, 50);
    assert_eq!(s.output_tokens, (0..50).map(|i| 20 + i).sum::<u64>());
    assert_eq!(s.goodput_per_s, s.requests_per_s);
    let strict = SimConfig { ttft_slo_s: Some(s.ttft_s.p50), ..cfg };
    let g = run(&llama(), &strict).summary;
    assert!(g.goodput_per_s < s.goodput_per_s && g.goodput_per_s > 0.0);
    assert!((0.4..=0.7).contains(&g.slo_attainment), "{}", g.slo_attainment);
}

#[test]
fn bad_inputs_are_refused_naming_the_field() {
    let sc = llama();
    let err = |cfg: SimConfig| simulate(&sc, &cfg, |_| {}).unwrap_err();
    let e = err(SimConfig::poisson(0.0));
    assert_eq!(e.field(), Some("rate"), "{e}");
    assert!(err(SimConfig::poisson(-3.0)).to_string().contains("a number in [1e-300, 1e6]"));
    let e = err(SimConfig { arrivals: Arrivals::Trace(Vec::new().into()), ..SimConfig::poisson(1.0) });
    assert!(e.to_string().contains("empty"), "{e}");
    let unsorted = vec![
        TraceRequest { arrival_s: 1.0, prompt_tokens: 5, output_tokens: 5, prefix: None },
        TraceRequest { arrival_s: 0.5, prompt_tokens: 5, output_tokens: 5, prefix: None },
    ];
    let e = err(SimConfig { arrivals: Arrivals::Trace(unsorted.into()), ..SimConfig::poisson(1.0) });
    assert!(e.to_string().contains("sorted"), "{e}");
    // 1M tokens of Llama 3 8B cache (131 kB each) do not fit an 80 GB GPU.
    let e = err(fixed(SimConfig::poisson(1.0), 1, 1_000_000, 10));
    assert_eq!(e.field(), Some("prompt"));
    assert!(e.to_string().contains("KV capacity"), "{e}");
    // A lognormal draw too long for the cache fails when drawn, naming the field.
    let cfg = SimConfig { prompt: Lengths::LogNormal { median: 300_000.0, sigma: 1.0 }, ..SimConfig::poisson(1.0) };
    assert!(err(cfg).to_string().contains("KV capacity"));
    assert_eq!(err(SimConfig { max_seqs: 0, ..SimConfig::poisson(1.0) }).field(), Some("max_seqs"));
    assert_eq!(err(SimConfig { prefix_hit: 1.0, ..SimConfig::poisson(1.0) }).field(), Some("prefix_hit"));
}

/// A step's time is the ledger's to the last bit whether the clock times every operator (the
/// first step of its sequences and new tokens) or only attention's core for new chunks (every
/// later one), for decodes and for steps with prompt chunks:
/// dense, GQA, sliding windows with sinks, MLA, MoE, unfused attention, tensor parallelism, every
/// kind of engine (fused epilogues, merged GEMMs, eager launches, host time) and both clocks.
#[test]
fn a_step_timed_from_its_sizes_parts_is_the_ledgers_to_the_bit() {
    let cases: &[&[(&str, &str)]] = &[
        &[("model", "llama-3-8b")],
        &[("model", "llama-3-8b"), ("engine", "vllm@0.6")],
        &[("model", "llama-3-8b"), ("engine", "eager"), ("flash", "off")],
        &[("model", "llama-3-8b"), ("engine", "gpt-fast"), ("tp", "2")],
        &[("model", "llama-3-8b"), ("time_model", "roofline")],
        &[("model", "gemma-2-9b"), ("engine", "sglang")],
        &[("model", "gpt-oss-20b")],
        &[("model", "deepseek-v2-lite"), ("kv", "fp8")],
        &[("model", "mixtral-8x7b"), ("tp", "2"), ("weights", "fp8"), ("gemm_activations", "fp8")],
        &[("model", "qwen3-30b-a3b"), ("ep", "2")],
    ];
    let mut rng = Pcg32::new(7, 7);
    for pairs in cases {
        let sc = scenario(pairs);
        let mut clock = StepClock::new(&sc);
        for b in [1usize, 3, 16, 64] {
            for _ in 0..4 {
                let decodes: Vec<Chunk> =
                    (0..b).map(|_| Chunk { new_tokens: 1, cached_tokens: rng.range(0, 40_000) }).collect();
                let want = clock.ledger_step_s(&decodes);
                assert_eq!(clock.step_s(&decodes).to_bits(), want.to_bits(), "{pairs:?} batch {b}: {decodes:?}");
            }
            // Steps with prompt chunks of the same sequences and new tokens, split differently.
            for _ in 0..4 {
                let mut chunks: Vec<Chunk> =
                    (0..b).map(|_| Chunk { new_tokens: 1, cached_tokens: rng.range(0, 40_000) }).collect();
                let moved = rng.range(0, 1024);
                chunks[0].new_tokens += 2048 - moved;
                chunks[b - 1].new_tokens += moved;
                chunks[b - 1].cached_tokens = rng.range(0, 4096);
                let want = clock.ledger_step_s(&chunks);
                assert_eq!(clock.step_s(&chunks).to_bits(), want.to_bits(), "{pairs:?} mixed {b}: {chunks:?}");
            }
        }
    }
}

/// The step clock goes through the ledger: a step of chunks equals the ledger of the same
/// batch where the ledger can express it (all prompts from zero, or all decodes), and a mixed
/// step decomposes into the per-token part (every operator but attention, a function of the
/// step's tokens and sequences) and the attention part (additive over chunks).
#[test]
fn a_step_of_chunks_is_the_ledger_of_that_batch() {
    let mut rng = Pcg32::new(3, 3);
    for model in ["llama-3-8b", "gemma-2-9b", "qwen3-30b-a3b"] {
        let sc = scenario(&[("model", model)]);
        let mut clock = StepClock::new(&sc);
        for _ in 0..20 {
            let n = rng.range(1, 40) as usize;
            let lens: Vec<u64> = (0..n).map(|_| rng.range(1, 6000)).collect();
            let mix = Contexts::mix(lens.iter().map(|&t| ContextBucket { tokens: t, count: 1 })).unwrap();
            // All prompts from zero: the ledger's prefill of that mix.
            let prefills: Vec<Chunk> = lens.iter().map(|&t| Chunk { new_tokens: t, cached_tokens: 0 }).collect();
            let want = summarise(&sc.with_workload(Workload {
                phase: Phase::Prefill,
                contexts: mix.clone(),
                ..sc.workload.clone()
            }));
            assert!(close(clock.step_s(&prefills), want.step_time_s(), 1e-12), "{model} prefill {lens:?}");
            // All decodes: the ledger's decode of that mix.
            let decodes: Vec<Chunk> = lens.iter().map(|&t| Chunk { new_tokens: 1, cached_tokens: t }).collect();
            let want =
                summarise(&sc.with_workload(Workload { phase: Phase::Decode, contexts: mix, ..sc.workload.clone() }));
            assert!(close(clock.step_s(&decodes), want.step_time_s(), 1e-12), "{model} decode {lens:?}");
            // A mix: per-token part equals a prefill of the same tokens and sequences.
            let mixed: Vec<Chunk> = lens
                .iter()
                .enumerate()
                .map(|(i, &t)| {
                    if i % 2 == 0 {
                        Chunk { new_tokens: 1, cached_tokens: t }
                    } else {
                        Chunk { new_tokens: t.min(512), cached_tokens: t / 3 }
                    }
                })
                .collect();
            let step = sc.with_workload(sc.workload.with_chunks(mixed.clone().into()));
            let attention =
                |k: OpKind| matches!(k, OpKind::Attention | OpKind::Softmax | OpKind::AttnScores | OpKind::AttnValues);
            let parts = |s: &Scenario| {
                let (mut per_token, mut attn) = (0.0, 0.0);
                let total =
                    summarise_each(s, |k, _, t| if attention(k) { attn += t.time_s } else { per_token += t.time_s });
                (per_token, attn, total.step_time_s())
            };
            let (per_token, attn, total) = parts(&step);
            let same_tokens = sc.with_workload(Workload {
                phase: Phase::Prefill,
                contexts: step.workload.contexts.clone(),
                ..sc.workload.clone()
            });
            assert!(close(per_token, parts(&same_tokens).0, 1e-12), "{model}");
            assert!(close(per_token + attn, total, 1e-12));
            assert!(close(clock.step_s(&mixed), total, 1e-12));
            // Decodes with the same count and total context take the same time on a model without
            // windows (the clock's memo key), and the memo returns the ledger's time.
            if model != "gemma-2-9b" && n >= 2 {
                let mut moved = decodes.clone();
                let shift = moved[0].cached_tokens.min(moved[1].cached_tokens) / 2;
                moved[0].cached_tokens -= shift;
                moved[1].cached_tokens += shift;
                assert!(close(clock.ledger_step_s(&moved), clock.ledger_step_s(&decodes), 1e-12), "{model}");
                assert!(close(clock.step_s(&moved), clock.ledger_step_s(&moved), 1e-12));
            }
            // Attention work adds up over chunks.
            let g = step.workload.attention_geometry(llm_ledger_core::model::Reach::All);
            let sum: f64 =
                mixed.iter().map(|c| c.geometry(llm_ledger_core::model::Reach::All, step.workload.causal).pairs).sum();
            assert!(close(g.pairs, sum, 1e-12));
        }
    }
}

/// Every per-request duration of `s` equals the static model's for one request alone (means
/// exact to 10⁻⁹, quantiles within the sketch's accuracy).
fn assert_alone(s: &SimSummary, stat: &Latency, what: &str) {
    for (name, q, want) in
        [("TTFT", s.ttft_s, stat.ttft_s), ("TPOT", s.tpot_s, stat.tpot_s.unwrap()), ("e2e", s.e2e_s, stat.e2e_s)]
    {
        assert!(close(q.mean, want, 1e-9), "{what}: {name} mean {} vs {want}", q.mean);
        for p in [q.p50, q.p99, q.max] {
            assert!(close(p, want, RELATIVE_ACCURACY), "{what}: {name} quantile {p} vs {want}");
        }
    }
}

/// Durations are exact at any time scale: one request every 10¹⁵ s (an absolute clock near 10¹⁶ s
/// has a 2 s step, and used to report TTFT 0), the lowest rate taken, and a trace whose requests
/// arrive at 10³⁰⁰ s all give the static answer of one request alone.
#[test]
fn per_request_durations_are_exact_at_any_time_scale() {
    let sc = llama();
    let stat = Latency::of(&sc, 1, 700, 40, SimConfig::poisson(1.0).reserve_bytes).unwrap();
    for rate in [1e-15, MIN_RATE_PER_S] {
        let s = run(&sc, &fixed(SimConfig::poisson(rate), 20, 700, 40)).summary;
        assert_eq!((s.completed, s.max_batch), (20, 1));
        assert_alone(&s, &stat, &format!("rate {rate}"));
        assert!(s.duration_s.is_finite() && s.duration_s > 1.0 / rate, "{}", s.duration_s);
    }
    // The last two are one step of an f64 apart: 4·10²⁸⁴ s, still a long idle gap.
    let trace: Vec<TraceRequest> = [0.0, 1e300, 2e300, 2e300 * (1.0 + f64::EPSILON)]
        .iter()
        .map(|&t| TraceRequest { arrival_s: t, prompt_tokens: 700, output_tokens: 40, prefix: None })
        .collect();
    let cfg = SimConfig { arrivals: Arrivals::Trace(trace.into()), ..SimConfig::poisson(1.0) };
    let sim = run(&sc, &cfg);
    let s = &sim.summary;
    assert_eq!((s.completed, s.max_batch), (4, 1));
    assert_alone(s, &stat, "a trace at 1e300 s");
    assert!(s.duration_s >= 2e300 && s.duration_s.is_finite());
    assert!(sim.series.iter().all(|p| p.t_s.is_finite()));
}

/// The gamma sampler's range: at both ends of `cv` a run ends with every request served (shape
/// 10⁸ and 10⁻⁴), and just past them the value is refused naming `cv` and the range.
#[test]
fn the_gamma_sampler_terminates_at_both_ends_of_its_range() {
    let sc = llama();
    for cv in [MIN_CV, MAX_CV] {
        let cfg = fixed(
            SimConfig { arrivals: Arrivals::Gamma { rate_per_s: 5.0, cv }, ..SimConfig::poisson(1.0) },
            50,
            64,
            8,
        );
        let s = run(&sc, &cfg).summary;
        assert_eq!(s.completed, 50, "cv {cv}");
    }
    for cv in [1e-160, MIN_CV / 2.0, MAX_CV * 1.01, f64::NAN] {
        let cfg = SimConfig { arrivals: Arrivals::Gamma { rate_per_s: 5.0, cv }, ..SimConfig::poisson(1.0) };
        let e = simulate(&sc, &cfg, |_| {}).unwrap_err();
        assert_eq!(e.field(), Some("cv"), "{e}");
        assert!(e.to_string().contains("a number in [1e-4, 100]"), "{e}");
    }
    // The smallest rate float is refused: every gap would be infinite.
    let e = simulate(&sc, &SimConfig::poisson(5e-324), |_| {}).unwrap_err();
    assert_eq!(e.to_string(), "invalid `rate`: 5e-324 (a number in [1e-300, 1e6])");
}

/// A long run: 200 requests of 64 + 20,000 tokens, one sequence per step (4·10⁶ steps).
fn long_run() -> SimConfig {
    SimConfig { max_seqs: 1, ..fixed(SimConfig::poisson(1000.0), 200, 64, 20_000) }
}

/// A run stops within one check of its cancellation flag being set, and within one check of
/// passing its step budget, with the error that says which.
#[test]
fn a_run_stops_when_cancelled_or_past_its_budget() {
    let sc = llama();
    let cancel = AtomicBool::new(false);
    let budget = Budget::new(u64::MAX, Some(&cancel));
    let mut steps = 0u64;
    let e = simulate_within(&sc, &long_run(), &Deployment::SINGLE, &budget, |_| {
        steps += 1;
        if steps == 5000 {
            cancel.store(true, Ordering::Relaxed);
        }
    })
    .unwrap_err();
    assert_eq!(e, Error::Cancelled);
    assert!((5000..=5000 + CHECK_STEPS).contains(&steps), "{steps} steps");

    let budget = Budget::new(10_000, None);
    let mut steps = 0u64;
    let e = simulate_within(&sc, &long_run(), &Deployment::SINGLE, &budget, |_| steps += 1).unwrap_err();
    assert!(matches!(e, Error::OverBudget { .. }), "{e}");
    assert_eq!(e.field(), Some("max_steps"));
    assert!((10_000..=10_000 + CHECK_STEPS).contains(&steps), "{steps} steps");
    // The estimate refuses it before it starts: 200 × 20,000 steps at one sequence per step.
    assert!(budget.admit([&long_run()]).unwrap_err().to_string().contains("needs about 4e6 engine steps"));
    // A run within its budget is charged its steps exactly.
    let budget = Budget::new(1_000_000, None);
    let s = simulate_within(&sc, &fixed(SimConfig::poisson(10.0), 20, 64, 8), &Deployment::SINGLE, &budget, |_| {})
        .unwrap()
        .summary;
    assert_eq!(budget.used_steps(), s.steps);
}
