//! The reference calculator's figures about time, memory and money, through the public API: the batch sweep and
//! its memory wall, the long-context equivalence, the crossover, the levers.

use llm_ledger_core::crossover::{Crossover, Side};
use llm_ledger_core::levers::{Lever, LeverSet};
use llm_ledger_core::limits::{MAX_BATCH, MAX_CONTEXT};
use llm_ledger_core::memory::{kv_cache_bytes, Footprint};
use llm_ledger_core::scenario::parse_contexts;
use llm_ledger_core::sweep::{Axis, Sweep, SweepPoint};
use llm_ledger_core::{summarise, Catalog, Scenario, ScenarioRequest};
use std::ops::ControlFlow;

fn seed() -> Scenario {
    ScenarioRequest { counting: Some("seed".into()), ..Default::default() }.resolve(&Catalog::builtin()).unwrap()
}

fn sweep(base: Scenario, batch: &str, ctx: &str) -> Vec<SweepPoint> {
    let b = Axis::parse("batch", batch, 1, MAX_BATCH).unwrap();
    let c = Axis::parse("ctx", ctx, 0, MAX_CONTEXT).unwrap();
    let mut out = Vec::new();
    Sweep::new(base, b, c, 2e9).unwrap().run(|p| {
        out.push(*p);
        ControlFlow::Continue(())
    });
    out
}

#[test]
fn seed_batch_sweep_and_memory_wall() {
    // "for b in [1, 8, 32, 64, 128]" at 2,048 tokens, plus batch 256 past the wall.
    let pts = sweep(seed(), "1,8,32,64,128,256", "2048");
    let row = |p: &SweepPoint| format!("{} {:.1} ms {:.0} tok/s", p.batch, p.step_time_s * 1e3, p.tokens_per_s);
    // The reference calculator's printed sweep (golden/seed004_report.txt) rounds to 2 decimals.
    assert_eq!(row(&pts[0]), "1 5.7 ms 175 tok/s");
    assert_eq!(format!("{:.1}", pts[3].step_time_s * 1e3), "12.0");
    assert_eq!(format!("{:.1}", pts[4].step_time_s * 1e3), "18.4");
    // "throughput … to about 6,900 tokens per second".
    assert_eq!((pts[4].tokens_per_s / 100.0).round() * 100.0, 6900.0);
    // "From batch 1 to 8, throughput rises about sevenfold for a 12 percent increase in step time".
    assert_eq!(format!("{:.0}", pts[1].tokens_per_s / pts[0].tokens_per_s), "7");
    assert_eq!(format!("{:.0}", (pts[1].step_time_s / pts[0].step_time_s - 1.0) * 100.0), "12");
    // "From 64 to 128, doubling the batch buys only 30 percent more".
    assert_eq!(format!("{:.0}", (pts[4].tokens_per_s / pts[3].tokens_per_s - 1.0) * 100.0), "30");
    // "Batch 256 … would need about 84 GB … does not fit on an 80 GB card": shown and marked.
    assert_eq!(pts.len(), 6);
    assert_eq!(pts[5].batch, 256);
    assert_eq!(format!("{:.0}", pts[5].memory_bytes / 1e9), "84");
    assert!(!pts[5].fits);
    assert!(pts[..5].iter().all(|p| p.fits));
    // "at batch 64 … attention … now the largest single item".
    assert_eq!(pts[3].largest_op.name(), "attention");
    assert_eq!(pts[0].largest_op.name(), "mlp");
}

#[test]
fn the_sweep_agrees_with_the_ledger_point_by_point() {
    for p in sweep(seed(), "1..40:13", "0,1..8192*4,3000") {
        let mut s = seed();
        s.workload.contexts = llm_ledger_core::Contexts::uniform(p.batch, p.ctx).unwrap();
        let l = summarise(&s);
        assert_eq!(p.step_time_s, l.step_time_s());
        assert_eq!(p.bytes, l.cost.bytes());
        assert_eq!(p.memory_bytes, Footprint::of(&s, 2e9).memory_bytes);
    }
}

#[test]
fn more_batch_never_means_less_time_or_memory() {
    // Both clocks: a bigger batch never takes less time or memory. Throughput never falls on the
    // roofline; on the measured clock it may dip where a GEMM's tiles spill into another wave
    // (wave quantisation, crate::clock::gemm_shape_efficiency), as on real GPUs.
    for time_model in ["measured", "roofline"] {
        let req = ScenarioRequest { time_model: Some(time_model.into()), ..ScenarioRequest::default() };
        let pts = sweep(req.resolve(&Catalog::builtin()).unwrap(), "1..300:7", "4096");
        for w in pts.windows(2) {
            assert!(w[1].step_time_s >= w[0].step_time_s && w[1].memory_bytes > w[0].memory_bytes, "{time_model}");
            if time_model == "roofline" {
                assert!(w[1].tokens_per_s >= w[0].tokens_per_s);
            }
        }
    }
}

#[test]
fn long_context_equivalence() {
    // "Batch 8 at 32,768 tokens holds exactly as many cached tokens as batch 128 at 2,048: the step
    // reads the same 49.4 GB and takes the same 18.4 ms … from about 6,900 to about 430 tokens per second."
    let with = |mix: &str| {
        let mut s = seed();
        s.workload.contexts = parse_contexts(mix).unwrap();
        s
    };
    let long = with("32768x8");
    let wide = with("2048x128");
    let (l, w) = (summarise(&long), summarise(&wide));
    assert_eq!(format!("{:.1}", l.cost.bytes() / 1e9), "49.4");
    assert_eq!(l.cost.bytes(), w.cost.bytes());
    assert_eq!(format!("{:.1}", l.step_time_s() * 1e3), "18.4");
    assert_eq!(format!("{:.1}", w.step_time_s() * 1e3), "18.4");
    assert_eq!((l.tokens_per_s() / 10.0).round() * 10.0, 430.0);
    assert_eq!((w.tokens_per_s() / 100.0).round() * 100.0, 6900.0);
    assert_eq!(kv_cache_bytes(&long), kv_cache_bytes(&wide));
    // A real mix with the same total (64 × 2,048 + 4 × 32,768 = 262,144 tokens) reads the same bytes.
    let mixed = with("2048x64,32768x4");
    assert_eq!(summarise(&mixed).cost.bytes(), w.cost.bytes());
    assert_eq!(summarise(&mixed).tokens, 68.0);
    // A mix of equal contexts is the uniform batch.
    assert_eq!(with("2048x100,2048x28").workload.contexts, wide.workload.contexts);
}

#[test]
fn crossover_and_where_the_seed_workloads_sit() {
    let at = |b: &str, c: &str| {
        let mut s = seed();
        s.workload.contexts = parse_contexts(&format!("{c}x{b}")).unwrap();
        Crossover::of(&s)
    };
    let one = at("1", "2048");
    assert_eq!((one.crossover_tokens / 100.0).round() * 100.0, 114_500.0);
    assert_eq!(one.side, Side::Below);
    assert_eq!(at("64", "2048").side, Side::Above);
    assert_eq!(at("8", "32768").side, Side::Above);
}

#[test]
fn seed_levers_through_the_lever_set() {
    let set = |b: &str, c: &str| {
        let mut s = seed();
        s.workload.contexts = parse_contexts(&format!("{c}x{b}")).unwrap();
        LeverSet::of(&s, 2e9)
    };
    let ms = |t: f64| format!("{:.1}", t * 1e3);
    let long = set("8", "32768");
    assert_eq!(
        (ms(long.baseline.step_time_s), ms(long.get(Lever::KvFp8).unwrap().outcome.step_time_s)),
        ("18.4".into(), "12.0".into())
    );
    let mid = set("64", "2048");
    assert_eq!(
        (ms(mid.baseline.step_time_s), ms(mid.get(Lever::KvFp8).unwrap().outcome.step_time_s)),
        ("12.0".into(), "8.8".into())
    );
    assert_eq!(ms(mid.get(Lever::W4a16).unwrap().outcome.step_time_s), "8.0");
    let one = set("1", "2048");
    assert_eq!(
        (ms(one.baseline.step_time_s), ms(one.get(Lever::W4a16).unwrap().outcome.step_time_s)),
        ("5.7".into(), "1.5".into())
    );
}

#[test]
fn every_preset_runs_every_view() {
    use llm_ledger_core::advise::Advice;
    use llm_ledger_core::latency::Latency;
    use llm_ledger_core::measure::Utilisation;
    use llm_ledger_core::serving::{Measured, ServingRequest};
    let cat = Catalog::builtin();
    for p in cat.presets() {
        let s = ScenarioRequest { model: Some(p.name.clone()), gpu: Some("b200".into()), ..Default::default() }
            .resolve(&cat)
            .unwrap();
        let serving = ServingRequest::default().resolve(&s).unwrap();
        let a = Advice::of(&s, &serving);
        assert!(a.crossover.crossover_tokens > 0.0 && a.footprint.memory_bytes > 0.0, "{}", p.name);
        let l = Latency::of(&s, 4, 512, 8, 2e9).unwrap();
        assert!(l.ttft_s > 0.0 && l.tpot_s.unwrap() > 0.0 && l.e2e_s > l.ttft_s, "{}", p.name);
        let u = Utilisation::of(&s, Measured::StepTime(0.05));
        assert!(u.mbu > 0.0 && u.mfu > 0.0, "{}", p.name);
        assert!(!sweep(s, "1,64", "1024").is_empty());
    }
}

/// One "does it fit" answer: for the same inputs every command agrees. The
/// step basis (`kv`, `sweep`, `levers`, `advise`, `plan`) at a decode step of `ctx` cached tokens;
/// the request-peak basis (`latency`, `cost`) for prompt `P` and output `O` is the step basis of
/// its prefill step at `P` and of its last decode step at `P + O − 2` cached tokens (`P + O − 1`
/// held), both at once. The first case is the reproduction: Llama 3.1 70B fp8 on an A100 80GB.
#[test]
fn every_command_gives_one_fit_answer_on_its_stated_basis() {
    use llm_ledger_core::advise::Advice;
    use llm_ledger_core::economics::CostPoint;
    use llm_ledger_core::latency::Latency;
    use llm_ledger_core::memory::{memory_wall_batch, Fit, FitBasis, Requests};
    use llm_ledger_core::plan::{plan, PlanRequest};
    use llm_ledger_core::serving::{Price, PriceSource, ServingRequest};
    const R: f64 = 2e9;
    let price = Price { usd_per_hour: 2.0, source: PriceSource::User };
    let scenario = |model: &str, gpu: &str, weights: &str, phase: &str, batch: u64, ctx: u64| {
        ScenarioRequest {
            model: Some(model.into()),
            gpu: Some(gpu.into()),
            weights: Some(weights.into()),
            phase: Some(phase.into()),
            batch: Some(batch.to_string()),
            ctx: Some(ctx.to_string()),
            ..Default::default()
        }
        .resolve(&Catalog::builtin())
        .unwrap()
    };
    let step_max = |sc: &Scenario| Fit::step(sc, R).max_batch.unwrap();
    // The reproduction first: batch 9 fits a decode step at 2,048 cached tokens, while requests
    // of 2,048 + 256 tokens fit 5 (their prefill step of 5 × 2,048 tokens, with its workspace).
    let repro = scenario("llama-3.1-70b", "a100-80gb-sxm", "fp8", "decode", 9, 2048);
    assert_eq!(step_max(&repro), 9);
    let r = Requests { batch: 9, prompt_tokens: 2048, output_tokens: 256 };
    let fit = Fit::requests(&repro, &r, R).unwrap();
    assert_eq!((fit.basis, fit.max_batch, fit.fits()), (FitBasis::RequestPeak, Some(5), false));
    assert_eq!(fit.steps[1].held_tokens, Some(2048 + 256 - 1));

    let mut cases = 0;
    for (model, weights) in [
        ("llama-3.1-70b", "fp8"),
        ("llama-3-8b", "bf16"),
        ("mixtral-8x7b", "fp8"),
        ("gemma-2-9b", "bf16"),
        ("deepseek-v2-lite", "bf16"),
    ] {
        for gpu in ["a100-80gb-sxm", "h100-sxm", "l4"] {
            // Step basis at ctx C: sweep, memory wall, advise, levers and plan agree with Fit::step.
            for ctx in [512, 4096] {
                let one = scenario(model, gpu, weights, "decode", 1, ctx);
                let max = step_max(&one);
                let batches: Vec<u64> = [1, max, max + 1].into_iter().filter(|b| *b >= 1).collect();
                let axis: Vec<String> = batches.iter().map(u64::to_string).collect();
                for p in sweep_with(one.clone(), &axis.join(","), &ctx.to_string(), R) {
                    assert_eq!(p.fits, p.batch <= max, "{model} {gpu} ctx {ctx} sweep batch {}", p.batch);
                }
                assert_eq!(memory_wall_batch(&one, ctx, R), Some(max + 1).filter(|b| *b <= MAX_BATCH));
                let serving =
                    ServingRequest { reserve: Some(format!("{R}B")), ..Default::default() }.resolve(&one).unwrap();
                for b in batches {
                    let a = Advice::of(&scenario(model, gpu, weights, "decode", b, ctx), &serving);
                    assert_eq!((a.max_batch, a.footprint.fits, a.fit_basis), (Some(max), b <= max, FitBasis::Step));
                }
                let set = LeverSet::of(&one, R);
                assert_eq!(set.baseline.fits, max >= 1);
                match set.get(Lever::Batch) {
                    Some(l) => assert_eq!((l.outcome.batch, l.outcome.fits), (max, true)),
                    None => assert!(max <= 1, "{model} {gpu} ctx {ctx}: no batch lever with max {max}"),
                }
                if max >= 1 {
                    let req =
                        PlanRequest { ctx, tpot_bound_s: 3600.0, max_gpus: 1, price, reserve_bytes: R, batches: None };
                    let p = plan(&one, &req).unwrap();
                    assert_eq!((p.ranked[0].max_batch, p.ranked[0].batch, p.fit_basis), (max, max, FitBasis::Step));
                }
                cases += 1;
            }
            // Request basis: latency and cost agree, and equal the step basis of both steps.
            for (prompt, output) in [(512, 1), (512, 2), (2048, 64)] {
                let base = scenario(model, gpu, weights, "decode", 1, 1);
                let pre = step_max(&scenario(model, gpu, weights, "prefill", 1, prompt));
                let last =
                    (output >= 2).then(|| step_max(&scenario(model, gpu, weights, "decode", 1, prompt + output - 2)));
                let expect = last.map_or(pre, |l| l.min(pre));
                let s = ServingRequest {
                    prompt: Some(prompt.to_string()),
                    output: Some(output.to_string()),
                    reserve: Some(format!("{R}B")),
                    ..Default::default()
                }
                .resolve(&base)
                .unwrap();
                for b in [1, expect, expect + 1].into_iter().filter(|b| *b >= 1) {
                    let l = Latency::of(&base, b, prompt, output, R).unwrap();
                    let c = CostPoint::at(&base, &s, price, b).unwrap().latency;
                    let what = format!("{model} {gpu} batch {b} × ({prompt} + {output})");
                    assert_eq!(
                        (l.max_batch, l.fits, l.fit_basis),
                        (expect, b <= expect, FitBasis::RequestPeak),
                        "{what}"
                    );
                    assert_eq!(
                        (c.max_batch, c.fits, c.peak_memory_bytes),
                        (l.max_batch, l.fits, l.peak_memory_bytes),
                        "{what}"
                    );
                    // The peak is the fuller of the two steps, each on the step basis.
                    let fp = |phase, ctx| Footprint::of(&scenario(model, gpu, weights, phase, b, ctx), R);
                    let mut peak = fp("prefill", prompt);
                    if output >= 2 {
                        let d = fp("decode", prompt + output - 2);
                        if d.memory_bytes > peak.memory_bytes {
                            peak = d;
                        }
                    }
                    assert_eq!((l.peak_memory_bytes, l.fits), (peak.memory_bytes, peak.fits), "{what}");
                }
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 5 * 3 * 5);
}

fn sweep_with(base: Scenario, batch: &str, ctx: &str, reserve_bytes: f64) -> Vec<SweepPoint> {
    let b = Axis::parse("batch", batch, 1, MAX_BATCH).unwrap();
    let c = Axis::parse("ctx", ctx, 0, MAX_CONTEXT).unwrap();
    let mut out = Vec::new();
    Sweep::new(base, b, c, reserve_bytes).unwrap().run(|p| {
        out.push(*p);
        ControlFlow::Continue(())
    });
    out
}
