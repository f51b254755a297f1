//! The simulator's engine mechanisms against hand-computed cases: admission control and
//! preemption, CUDA-graph padding, multi-step scheduling, host time, benchmark shapes, routing
//! and speculative decoding.

use llm_ledger_core::simulate::workload::{Arrivals, Lengths, TraceRequest};
use llm_ledger_core::simulate::PromptPrefix;
use llm_ledger_core::simulate::{kv_bytes_per_gpu, kv_capacity_blocks, KvLink, KvLinkChoice};
use llm_ledger_core::simulate::{
    simulate, simulate_deployment, Admission, CudaGraphs, Deployment, Draft, EnginePolicy, HostTime, Preemption,
    Router, SimConfig, SimSummary, Speculation, StepClock, StepRecord,
};
use llm_ledger_core::testing::scenario;
use llm_ledger_core::workload::Chunk;
use llm_ledger_core::{Error, Scenario};

fn llama() -> Scenario {
    scenario(&[])
}

fn fixed(requests: u64, prompt: u64, output: u64) -> SimConfig {
    SimConfig { requests, prompt: Lengths::Fixed(prompt), output: Lengths::Fixed(output), ..SimConfig::poisson(1.0) }
}

fn closed(concurrency: u64, requests: u64, prompt: u64, output: u64) -> SimConfig {
    SimConfig { arrivals: Arrivals::Closed { concurrency }, ..fixed(requests, prompt, output) }
}

fn records(sc: &Scenario, cfg: &SimConfig) -> (SimSummary, Vec<StepRecord>) {
    let mut steps = Vec::new();
    let s = simulate(sc, cfg, |r| steps.push(*r)).unwrap().summary;
    (s, steps)
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    ((a - b) / b).abs() <= rel
}

/// 48 requests of 12,000 + 1,000 tokens at once: 624,000 tokens of cache wanted, more than the
/// H100 holds next to Llama 3 8B's weights, so a scheduler that admits on the first chunk
/// preempts.
fn over_capacity() -> SimConfig {
    closed(48, 48, 12_000, 1000)
}

#[test]
fn guaranteed_no_evict_keeps_the_cache_within_capacity_without_preempting() {
    let sc = llama();
    let greedy = simulate(&sc, &over_capacity(), |_| {}).unwrap().summary;
    assert!(greedy.preemptions > 0, "the case must overrun the cache: {}", greedy.kv_capacity_tokens);
    let cfg = SimConfig { admission: Admission::GuaranteedNoEvict, ..over_capacity() };
    let (s, steps) = records(&sc, &cfg);
    assert_eq!((s.preemptions, s.recomputed_tokens, s.completed), (0, 0, 48));
    assert!(s.max_kv_utilisation <= 1.0);
    // Every step's blocks hold at most the capacity.
    let blocks = s.kv_capacity_tokens / cfg.block_tokens;
    assert!(steps.iter().all(|r| r.kv_blocks_used <= blocks && r.preemptions == 0));
    // Whole requests are reserved: at most ⌊blocks ÷ ⌈12,999 / 16⌉⌋ run at once.
    let per_request = 12_999u64.div_ceil(16);
    assert!(s.max_batch <= blocks / per_request, "{} > {}", s.max_batch, blocks / per_request);
    // Nothing is computed twice: every prompt once, every output token after the first once.
    assert_eq!(s.processed_tokens, 48 * (12_000 + 999));
}

#[test]
fn guaranteed_no_evict_admits_a_request_only_with_its_whole_cache_free() {
    let sc = llama();
    // Two requests of 16 + 33 tokens (at most 48 cached positions: 3 blocks each) in 5 blocks:
    // the second waits until the first has finished and freed its 3.
    let cfg = with_blocks(&sc, SimConfig { admission: Admission::GuaranteedNoEvict, ..closed(2, 2, 16, 33) }, 5);
    let (s, steps) = records(&sc, &cfg);
    assert_eq!((s.completed, s.preemptions, s.max_batch), (2, 0, 1));
    assert!(steps.iter().all(|r| r.kv_blocks_used <= 3));
    // Step 0 prefills the first; 32 decodes; step 33 prefills the second.
    assert_eq!((steps[33].prefills, steps[33].decodes, steps.len()), (1, 0, 66));
    // Admitting on the first chunk runs both and preempts.
    let greedy = simulate(&sc, &SimConfig { admission: Admission::MaxUtilization, ..cfg }, |_| {}).unwrap().summary;
    assert_eq!((greedy.max_batch, greedy.preemptions), (2, 1));
}

#[test]
fn the_watermark_readmits_a_preempted_request_only_when_its_context_fits() {
    let sc = llama();
    let cfg = SimConfig { admission: Admission::VLLM, ..over_capacity() };
    let s = simulate(&sc, &cfg, |_| {}).unwrap().summary;
    let greedy = simulate(&sc, &over_capacity(), |_| {}).unwrap().summary;
    assert_eq!(s.completed, 48);
    // Whole contexts at admission: fewer preemptions than admitting on the first chunk.
    assert!(s.preemptions < greedy.preemptions, "{} vs {}", s.preemptions, greedy.preemptions);
    // Tokens conserved: every output token once, every prompt once plus what was recomputed.
    assert_eq!(s.processed_tokens, 48 * (12_000 + 999) + s.recomputed_tokens);
}

#[test]
fn sglangs_reservation_admits_and_conserves_tokens() {
    let s = simulate(&llama(), &SimConfig { admission: Admission::SGLANG, ..over_capacity() }, |_| {}).unwrap().summary;
    assert_eq!(s.completed, 48);
    assert_eq!(s.processed_tokens, 48 * (12_000 + 999) + s.recomputed_tokens);
}

#[test]
fn swap_preemption_recomputes_nothing_and_charges_the_pcie_copies() {
    let sc = llama();
    let cfg = SimConfig { preemption: Preemption::Swap, ..over_capacity() };
    let s = simulate(&sc, &cfg, |_| {}).unwrap().summary;
    assert!(s.preemptions > 0);
    assert_eq!(s.recomputed_tokens, 0);
    assert_eq!(s.processed_tokens, 48 * (12_000 + 999));
    // A GPU without a PCIe link refuses swap, naming the field.
    let mut no_pcie = sc.clone();
    std::sync::Arc::make_mut(&mut no_pcie.gpu).interconnect.pcie = None;
    let e = simulate(&no_pcie, &cfg, |_| {}).unwrap_err();
    assert_eq!(e.field(), Some("preemption"), "{e}");
}

/// `cfg` with the reserve that leaves exactly `blocks` KV blocks (found by bisection).
fn with_blocks(sc: &Scenario, cfg: SimConfig, blocks: u64) -> SimConfig {
    let (mut lo, mut hi) = (0.0, sc.gpu.memory_bytes);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        let got = kv_capacity_blocks(sc, &SimConfig { reserve_bytes: mid, ..cfg.clone() }).unwrap();
        if got == blocks {
            return SimConfig { reserve_bytes: mid, ..cfg };
        }
        if got > blocks {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    panic!("no reserve leaves {blocks} blocks");
}

#[test]
fn a_swapped_sequence_pays_its_pcie_copies_out_and_back() {
    let sc = llama();
    // Two requests of 16 + 33 tokens in five 16-token blocks. Both prefill, then decode; when
    // each needs its third block (33 cached positions) only one is free: the later request is
    // swapped out with 32 positions and swapped back in once the first has finished.
    let cfg = with_blocks(&sc, SimConfig { preemption: Preemption::Swap, ..closed(2, 2, 16, 33) }, 5);
    let (s, steps) = records(&sc, &cfg);
    assert_eq!((s.completed, s.preemptions, s.recomputed_tokens), (2, 1, 0));
    let link = KvLink::resolve(KvLinkChoice::Pcie, &sc.gpu, &sc.parallel, 1).unwrap();
    let copy_s = link.transfer_s(kv_bytes_per_gpu(&sc, 32).unwrap());
    assert!(copy_s > 0.0);
    let mut clock = StepClock::new(&sc);
    let out = steps.iter().position(|r| r.preemptions == 1).unwrap();
    let a32 = clock.step_s(&[Chunk { new_tokens: 1, cached_tokens: 32 }]);
    assert_eq!(steps[out].decodes, 1);
    assert!(close(steps[out].time_s, a32 + copy_s, 1e-12), "{} vs {a32} + {copy_s}", steps[out].time_s);
    // Back in: the step after the first request's last (its 16 decodes from 32 to 47 positions).
    let back = out + (48 - 32);
    assert!(close(steps[back].time_s, a32 + copy_s, 1e-12), "{:?}", &steps[out..]);
    // Every token computed once: the prompts and all output tokens but the first of each.
    assert_eq!(s.processed_tokens, 2 * (16 + 32));
    // A GPU without a PCIe link refuses swap, naming the field.
    let mut no_pcie = sc.clone();
    std::sync::Arc::make_mut(&mut no_pcie.gpu).interconnect.pcie = None;
    let e = simulate(&no_pcie, &cfg, |_| {}).unwrap_err();
    assert_eq!(e.field(), Some("preemption"), "{e}");
}

#[test]
fn each_engine_has_its_policy() {
    use llm_ledger_core::engine::Engine;
    assert_eq!(Admission::of_engine(Engine::Trtllm), Admission::GuaranteedNoEvict);
    assert_eq!(Admission::of_engine(Engine::VllmV0), Admission::Watermark { fraction: 0.01 });
    assert!(matches!(Admission::of_engine(Engine::Sglang), Admission::Sglang { .. }));
    assert_eq!(EnginePolicy::of_engine(Engine::VllmV0).host, HostTime::Serial);
    assert_eq!(EnginePolicy::of_engine(Engine::Vllm).host, HostTime::Overlapped);
    let sc = llama();
    let cfg = SimConfig::poisson(1.0).for_engine(Engine::Vllm, &sc.gpu);
    assert_eq!(cfg.cuda_graphs.padded(3, 256), 4);
    assert_eq!(cfg.cuda_graphs.padded(17, 256), 24);
    assert_eq!(cfg.cuda_graphs.padded(512, 512), 512);
    assert_eq!(cfg.cuda_graphs.padded(513, 1024), 513);
    // Never past the scheduler's most sequences per step: 250 would pad to 256.
    assert_eq!(cfg.cuda_graphs.padded(250, 252), 250);
    assert_eq!(cfg.cuda_graphs.padded(250, 256), 256);
    assert_eq!(EnginePolicy::of_engine(Engine::Sglang).cuda_graphs, CudaGraphs::vllm());
    // TensorRT-LLM pads only when asked (`enable_padding`).
    assert_eq!(EnginePolicy::of_engine(Engine::Trtllm).cuda_graphs, CudaGraphs::Unpadded);
    assert_eq!(
        EnginePolicy::of_engine(Engine::GptFast),
        EnginePolicy {
            admission: Admission::MaxUtilization,
            host: HostTime::Overlapped,
            cuda_graphs: CudaGraphs::Unpadded
        }
    );
}

#[test]
fn cuda_graph_padding_times_the_padded_batch() {
    let sc = llama();
    // Three requests of 512 + 4 at once: one prefill step of all three, then decode steps of
    // three sequences at contexts 512, 513, 514, each timed as four (one empty slot).
    let cfg = SimConfig { cuda_graphs: CudaGraphs::vllm(), ..closed(3, 3, 512, 4) };
    let (_, steps) = records(&sc, &cfg);
    let (_, plain) = records(&sc, &closed(3, 3, 512, 4));
    let mut clock = StepClock::new(&sc);
    assert_eq!(steps.len(), 4);
    for (j, r) in steps.iter().enumerate().skip(1) {
        assert_eq!(r.decodes, 3);
        let cached = 512 + j as u64 - 1;
        let mut chunks = vec![Chunk { new_tokens: 1, cached_tokens: cached }; 3];
        assert_eq!(plain[j].time_s, clock.ledger_step_s(&chunks));
        // The empty slot is a dummy decode holding one cached token.
        chunks.push(Chunk { new_tokens: 1, cached_tokens: 1 });
        assert_eq!(r.time_s, clock.ledger_step_s(&chunks), "step {j}");
        assert!(r.time_s > plain[j].time_s);
    }
    // The prefill step is not padded.
    assert_eq!(steps[0].time_s, plain[0].time_s);
}

#[test]
fn a_padding_slot_is_a_decode_not_a_one_token_prompt() {
    // On the measured clock a step's prompt chunks take the engine's context kernel and its
    // decodes the generation kernel. A CUDA graph's padding slots are dummy generation requests:
    // padding a decode batch adds decodes to the generation kernel's batch, and no context-kernel
    // lookup — which a one-token prompt with nothing cached would bring.
    let sc = scenario(&[("engine", "vllm")]);
    let mut clock = StepClock::new(&sc);
    let real = vec![Chunk { new_tokens: 1, cached_tokens: 2048 }; 17];
    let with = |pad: Chunk| [real.clone(), vec![pad; 7]].concat();
    let plain = clock.ledger_step_s(&real);
    let as_decodes = clock.ledger_step_s(&with(Chunk { new_tokens: 1, cached_tokens: 1 }));
    let as_prompts = clock.ledger_step_s(&with(Chunk { new_tokens: 1, cached_tokens: 0 }));
    assert!(plain <= as_decodes && as_decodes < as_prompts, "{plain} {as_decodes} {as_prompts}");
    // So a padded run steps at the padded decode batch.
    let cfg = closed(17, 17, 256, 3).for_engine(sc.clock.engine, &sc.gpu);
    assert_eq!(cfg.cuda_graphs, CudaGraphs::vllm());
    let (_, steps) = records(&sc, &cfg);
    assert_eq!((steps[0].prefills, steps[1].decodes), (17, 17));
    let step =
        [vec![Chunk { new_tokens: 1, cached_tokens: 256 }; 17], vec![Chunk { new_tokens: 1, cached_tokens: 1 }; 7]]
            .concat();
    assert_eq!(steps[1].time_s, clock.ledger_step_s(&step));
}

#[test]
fn a_batch_is_never_padded_past_the_most_sequences_a_step_holds() {
    // Captured sizes 4 and 8, at most 6 sequences: 5 decodes would pad to 8, past the limit, so
    // they run at their own size (TensorRT-LLM's `_get_padded_batch`); 3 pad to 4.
    let sc = llama();
    let graphs = CudaGraphs::Padded([4, 8].into());
    let mut clock = StepClock::new(&sc);
    for (n, max_seqs, timed_at) in [(5, 6, 5), (5, 8, 8), (3, 6, 4)] {
        let cfg = SimConfig { cuda_graphs: graphs.clone(), max_seqs, ..closed(n, n, 256, 3) };
        let (_, steps) = records(&sc, &cfg);
        let mut chunks = vec![Chunk { new_tokens: 1, cached_tokens: 256 }; n as usize];
        chunks.extend(std::iter::repeat_n(Chunk { new_tokens: 1, cached_tokens: 1 }, (timed_at - n) as usize));
        assert_eq!(steps[1].time_s, clock.ledger_step_s(&chunks), "{n} decodes, at most {max_seqs}");
    }
}

#[test]
fn cuda_graphs_take_an_engines_own_list_of_captured_sizes() {
    let g: CudaGraphs = "1,2,4,8,16,32,64,128,256,384,512,1024,2048,4096,8192".parse().unwrap();
    assert_eq!(g.padded(300, 384), 384);
    assert_eq!(g.padded(300, 383), 300);
    assert_eq!(g.padded(9000, 10000), 9000);
    assert_eq!(" off ".parse::<CudaGraphs>().unwrap(), CudaGraphs::Unpadded);
    assert_eq!("vllm".parse::<CudaGraphs>().unwrap(), CudaGraphs::vllm());
    for bad in ["4,2", "0,1", "1,,2", "1,x", "1;2"] {
        let e = bad.parse::<CudaGraphs>().unwrap_err();
        assert_eq!(e.field(), Some("cuda_graphs"), "{bad}: {e}");
    }
}

#[test]
fn multi_step_scheduling_decodes_n_steps_and_pays_the_host_once() {
    let sc = scenario(&[("engine", "vllm@0.6")]);
    let mut clock = StepClock::new(&sc);
    let host_s = clock.host_s();
    assert!(host_s > 0.0);
    // A at 0 (16 + 9 tokens); B arrives while A's first decode runs.
    let t0 = clock.step_s(&[Chunk { new_tokens: 16, cached_tokens: 0 }]);
    let trace = [
        TraceRequest { arrival_s: 0.0, prompt_tokens: 16, output_tokens: 9, prefix: None },
        TraceRequest { arrival_s: t0 + 1e-9, prompt_tokens: 16, output_tokens: 2, prefix: None },
    ];
    let base = SimConfig { arrivals: Arrivals::Trace(trace.into()), ..SimConfig::poisson(1.0) };
    let cfg = SimConfig { scheduler_steps: 4, ..base.clone() };
    let (_, steps) = records(&sc, &cfg);
    // Step 0: A's prefill; steps 1–4: A's decodes (B waits for the boundary); step 5 admits B.
    let shape: Vec<(u64, u64)> = steps.iter().map(|r| (r.decodes, r.prefills)).collect();
    assert_eq!(&shape[..6], &[(0, 1), (1, 0), (1, 0), (1, 0), (1, 0), (1, 1)], "{shape:?}");
    for (j, r) in steps.iter().enumerate().take(5).skip(1) {
        let full = clock.step_s(&[Chunk { new_tokens: 1, cached_tokens: 16 + j as u64 - 1 }]);
        let expected = if j == 1 { full } else { full - host_s };
        assert_eq!(r.time_s, expected, "step {j}");
    }
    // One step per scheduling admits B right after A's first decode.
    let (_, single) = records(&sc, &base);
    assert_eq!((single[2].decodes, single[2].prefills), (1, 1));
}

/// A multi-step run's tokens reach the client together after its last step (vLLM RFC #6854):
/// one request of 9 output tokens under 4 steps per scheduling streams its first token after the
/// prefill, then two chunks of 4 (steps 1–4 and 5–8): 2 inter-token samples, each the sum of its
/// run's 4 step times, where one step per scheduling gives 8 of one step each. The time per
/// output token is the same sum over 8 either way.
#[test]
fn multi_step_runs_stream_their_tokens_as_one_chunk() {
    let sc = scenario(&[("engine", "vllm@0.6")]);
    let trace = [TraceRequest { arrival_s: 0.0, prompt_tokens: 16, output_tokens: 9, prefix: None }];
    let base = SimConfig { arrivals: Arrivals::Trace(trace.into()), ..SimConfig::poisson(1.0) };
    let (multi, steps) = records(&sc, &SimConfig { scheduler_steps: 4, ..base.clone() });
    assert_eq!(steps.len(), 9);
    let run = |r: std::ops::Range<usize>| steps[r].iter().map(|s| s.time_s).sum::<f64>();
    let (first, second) = (run(1..5), run(5..9));
    assert_eq!(multi.itl_s.count, 2);
    assert!(
        close(multi.itl_s.mean, (first + second) / 2.0, 1e-12),
        "{} vs {}",
        multi.itl_s.mean,
        (first + second) / 2.0
    );
    assert!(close(multi.itl_s.max, first.max(second), 1e-12));
    assert!(close(multi.tpot_s.mean, (first + second) / 8.0, 1e-12));
    let (single, one_steps) = records(&sc, &base);
    assert_eq!(single.itl_s.count, 8);
    let decode_s: f64 = one_steps[1..].iter().map(|s| s.time_s).sum();
    assert!(close(single.itl_s.mean, decode_s / 8.0, 1e-12));
    assert!(close(single.tpot_s.mean, single.itl_s.mean, 1e-12));
}

#[test]
fn overlapped_host_time_hides_under_the_gpu_step() {
    let sc = scenario(&[("engine", "vllm@0.6")]);
    let host_s = StepClock::new(&sc).host_s();
    let cfg = fixed(3, 700, 40);
    let cfg = SimConfig { arrivals: Arrivals::Poisson { rate_per_s: 0.001 }, ..cfg };
    let serial = simulate(&sc, &cfg, |_| {}).unwrap().summary;
    let over = simulate(&sc, &SimConfig { host: HostTime::Overlapped, ..cfg }, |_| {}).unwrap().summary;
    // A decode step of Llama 3 8B on an H100 is longer than the host's 2.2 ms: max(gpu, host) =
    // gpu, so each token comes `host` sooner.
    assert!(close(serial.tpot_s.mean - over.tpot_s.mean, host_s, 1e-6), "{} {}", serial.tpot_s.mean, over.tpot_s.mean);
}

#[test]
fn warm_up_requests_are_left_out_of_every_summary_statistic() {
    let sc = llama();
    // Ten requests 100 s apart, each alone: the last seven are measured.
    let trace: Vec<TraceRequest> = (0..10)
        .map(|i| TraceRequest { arrival_s: 100.0 * i as f64, prompt_tokens: 100 + i, output_tokens: 5, prefix: None })
        .collect();
    let all = SimConfig { arrivals: Arrivals::Trace(trace.clone().into()), ..SimConfig::poisson(1.0) };
    let warm = SimConfig { warmup_requests: 3, ..all.clone() };
    let (a, b) = (simulate(&sc, &all, |_| {}).unwrap().summary, simulate(&sc, &warm, |_| {}).unwrap().summary);
    assert_eq!((b.completed, b.requests, b.ttft_s.count, b.e2e_s.count), (7, 7, 7, 7));
    assert_eq!(b.prompt_tokens, (103..110).sum::<u64>());
    assert_eq!(b.output_tokens, 35);
    assert_eq!(b.itl_s.count, 7 * 4);
    // The window starts at the fourth arrival.
    assert!(close(b.duration_s, a.duration_s - 300.0, 1e-12), "{} vs {}", b.duration_s, a.duration_s);
    assert!(close(b.requests_per_s, 7.0 / b.duration_s, 1e-12));
    // The first three requests are the shortest: the measured TTFTs are the longer seven.
    assert!(b.ttft_s.mean > a.ttft_s.mean && b.drained);
    let e = SimConfig { warmup_requests: 10, ..all }.validate().unwrap_err();
    assert_eq!(e.field(), Some("warmup"));
}

#[test]
fn requests_with_a_trace_serve_its_first_rows_and_no_more_than_it_has() {
    use llm_ledger_core::simulate::workload::trace_rows;
    let trace: std::sync::Arc<[TraceRequest]> = (0..5)
        .map(|i| TraceRequest { arrival_s: i as f64, prompt_tokens: 10 + i, output_tokens: 3, prefix: None })
        .collect();
    let first3 = trace_rows(trace.clone(), Some(3)).unwrap();
    assert_eq!(&first3[..], &trace[..3]);
    let cfg = SimConfig { arrivals: Arrivals::Trace(first3), ..SimConfig::poisson(1.0) };
    let s = simulate(&llama(), &cfg, |_| {}).unwrap().summary;
    assert_eq!((s.completed, s.prompt_tokens), (3, 10 + 11 + 12));
    assert_eq!(trace_rows(trace.clone(), None).unwrap().len(), 5);
    assert_eq!(trace_rows(trace.clone(), Some(5)).unwrap().len(), 5);
    for n in [0, 6] {
        let e = trace_rows(trace.clone(), Some(n)).unwrap_err();
        assert_eq!(e.field(), Some("requests"), "{e}");
        assert!(e.to_string().contains("5 requests"), "{e}");
    }
}

#[test]
fn a_concurrency_cap_holds_arrivals_until_a_request_finishes() {
    let sc = llama();
    let cfg = SimConfig { max_concurrency: Some(4), ..fixed(40, 256, 32) };
    let cfg = SimConfig { arrivals: Arrivals::Poisson { rate_per_s: 1000.0 }, ..cfg };
    let s = simulate(&sc, &cfg, |_| {}).unwrap().summary;
    assert_eq!(s.completed, 40);
    assert!(s.max_batch <= 4 && s.mean_in_system <= 4.0 + 1e-9, "{} {}", s.max_batch, s.mean_in_system);
    assert_eq!(s.max_queue, 0, "a sent request is admitted at once");
    // Without the cap the queue builds.
    let open = simulate(&sc, &SimConfig { max_concurrency: None, ..cfg }, |_| {}).unwrap().summary;
    assert!(open.max_batch > 4);
}

#[test]
fn routers_conserve_requests_and_tokens_and_are_deterministic() {
    let sc = llama();
    let cfg = SimConfig {
        prompt: Lengths::Uniform { min: 100, max: 2000 },
        output: Lengths::Uniform { min: 10, max: 200 },
        ..fixed(300, 1, 1)
    };
    let cfg = SimConfig { arrivals: Arrivals::Poisson { rate_per_s: 40.0 }, ..cfg };
    let d = Deployment::Aggregated { replicas: 4 };
    let one = simulate_deployment(&sc, &cfg, &d, |_| {}).unwrap().summary;
    for router in [Router::RoundRobin, Router::Random, Router::LeastOutstanding, Router::KvUsage] {
        let c = SimConfig { router, ..cfg.clone() };
        let (mut per_replica, mut steps) = (0u64, 0u64);
        let s = simulate_deployment(&sc, &c, &d, |r| {
            per_replica += r.tokens;
            steps += 1;
        })
        .unwrap()
        .summary;
        assert_eq!(s.completed, 300, "{router:?}");
        assert_eq!((s.prompt_tokens, s.output_tokens), (one.prompt_tokens, one.output_tokens), "{router:?}");
        assert_eq!(per_replica, s.processed_tokens);
        assert_eq!(steps, s.steps);
        assert_eq!(s.processed_tokens, s.prompt_tokens + s.output_tokens - 300 + s.recomputed_tokens);
        let again = simulate_deployment(&sc, &c, &d, |_| {}).unwrap().summary;
        assert_eq!(s, again, "{router:?} is deterministic");
    }
    assert_eq!(
        simulate_deployment(&sc, &SimConfig { router: Router::RoundRobin, ..cfg.clone() }, &d, |_| {}).unwrap().summary,
        one
    );
    assert!(Deployment::Aggregated { replicas: 0 }.validate().unwrap_err().to_string().contains("replicas"));
    assert!(Deployment::Aggregated { replicas: 65 }.validate().is_err());
}

fn prefixed(arrival_s: f64, prompt: u64, output: u64, id: u64, tokens: u64) -> TraceRequest {
    TraceRequest {
        arrival_s,
        prompt_tokens: prompt,
        output_tokens: output,
        prefix: Some(PromptPrefix { id, tokens, root: None }),
    }
}

fn cached(trace: Vec<TraceRequest>) -> SimConfig {
    SimConfig { arrivals: Arrivals::Trace(trace.into()), prefix_cache: true, ..SimConfig::poisson(1.0) }
}

#[test]
fn a_prefix_shared_by_every_request_is_computed_once() {
    let sc = llama();
    // Twenty requests a second apart (each alone) of a shared 1,024-token prefix and 100 tokens
    // of their own, 10 out: the first computes 1,124 prompt tokens, the others 100 each.
    let trace: Vec<TraceRequest> = (0..20).map(|i| prefixed(i as f64, 1124, 10, 7, 1024)).collect();
    let s = simulate(&sc, &cached(trace.clone()), |_| {}).unwrap().summary;
    assert_eq!(s.completed, 20);
    assert_eq!(s.prefix_hit_tokens, 19 * 1024);
    assert_eq!(s.processed_tokens, 1124 + 19 * 100 + 20 * 9);
    assert_eq!(s.prefix_cache_hit_rate, Some(19.0 * 1024.0 / (20.0 * 1124.0)));
    assert_eq!(s.prefix_evicted_blocks, Some(0));
    // Each later request's prefill is a chunk of 100 on 1,024 cached positions.
    let mut clock = StepClock::new(&sc);
    let (_, steps) = records(&sc, &cached(trace.clone()));
    let second = steps.iter().filter(|r| r.prefills == 1).nth(1).unwrap();
    assert_eq!(second.tokens, 100);
    assert_eq!(second.time_s, clock.ledger_step_s(&[Chunk { new_tokens: 100, cached_tokens: 1024 }]));
    // Without the cache every prompt is computed in full; the rows' prefixes change nothing.
    let off = simulate(&sc, &SimConfig { prefix_cache: false, ..cached(trace) }, |_| {}).unwrap().summary;
    assert_eq!((off.processed_tokens, off.prefix_hit_tokens), (20 * 1124 + 20 * 9, 0));
    assert_eq!(off.prefix_cache_hit_rate, None);
}

#[test]
fn the_prefix_cache_evicts_least_recently_used_blocks_under_pressure() {
    let sc = llama();
    // 20 blocks of 16; prompts of 176 tokens whose first 160 (10 blocks) are prefix 1, 2, then
    // 1 again, one at a time, 2 tokens out (177 positions at the end: 11 whole blocks, which a
    // finished request leaves to its chain).
    // 1st: 11 blocks, 1 more to decode; leaves prefix 1 with 11 cached, 9 free.
    // 2nd: 11 blocks with 9 free (prefix 1 gives 2), 1 to decode with none free (1 more);
    //      leaves prefix 2 with 11, prefix 1 with 8, 1 free.
    // 3rd: finds 8 blocks (128 tokens) of prefix 1 and pins it; 3 blocks with 1 free (prefix 2
    //      gives 2), 1 to decode (1 more). Evicted: 2 + 1 + 2 + 1 = 6.
    let trace = vec![prefixed(0.0, 176, 2, 1, 160), prefixed(10.0, 176, 2, 2, 160), prefixed(20.0, 176, 2, 1, 160)];
    let cfg = with_blocks(&sc, cached(trace), 20);
    let s = simulate(&sc, &cfg, |_| {}).unwrap().summary;
    assert_eq!((s.completed, s.preemptions), (3, 0));
    assert_eq!(s.prefix_hit_tokens, 128);
    assert_eq!(s.prefix_evicted_blocks, Some(6));
    assert_eq!(s.processed_tokens, 176 + 176 + (176 - 128) + 3);
    assert_eq!(s.prefix_cache_hit_rate, Some(128.0 / (3.0 * 176.0)));
    assert!(s.max_kv_utilisation <= 1.0);
}

#[test]
fn conversations_reuse_their_system_prompt_and_history() {
    use llm_ledger_core::simulate::workload::Conversations;
    let sc = llama();
    // Two conversations of two turns behind a 64-token system prompt, 32-token messages, 17-token
    // answers, turns 1,000 s apart. Turn 0 of the first computes its 96 tokens; turn 0 of the
    // second finds the system prompt (4 blocks); each turn 1 (prompt 64 + 49 + 32 = 145) finds
    // 7 blocks of its history (the 112 positions its turn 0 left, 7 whole blocks).
    let conv = Conversations {
        conversations: 2,
        rate_per_s: 0.001,
        turns: 2,
        think_s: 1000.0,
        system_tokens: 64,
        user_tokens: 32,
        output_tokens: 17,
    };
    let trace = conv.trace(0).unwrap();
    assert_eq!(trace.len(), 4);
    assert!(trace.windows(2).all(|w| w[0].arrival_s <= w[1].arrival_s));
    assert_eq!(trace.iter().map(|r| r.prompt_tokens).sum::<u64>(), 2 * 96 + 2 * 145);
    assert_eq!(trace[0].prefix, Some(PromptPrefix { id: 1, tokens: 64, root: Some((1, 64)) }));
    let s = simulate(&sc, &cached(trace), |_| {}).unwrap().summary;
    assert_eq!(s.prefix_hit_tokens, 112 + 64 + 112);
    assert_eq!(s.processed_tokens, (482 - 288) + 4 * 16);
    assert_eq!(s.prefix_cache_hit_rate, Some(288.0 / 482.0));
    let bad = Conversations { turns: 0, ..conv.clone() }.trace(0).unwrap_err();
    assert_eq!(bad.field(), Some("conversations"));
    let bad = Conversations { user_tokens: 0, ..conv }.trace(0).unwrap_err();
    assert_eq!(bad.field(), Some("user_tokens"));
}

#[test]
fn prefix_inputs_are_checked() {
    let e = SimConfig { prefix_hit: 0.5, ..cached(vec![prefixed(0.0, 100, 2, 1, 50)]) }.validate().unwrap_err();
    assert_eq!(e.field(), Some("prefix_hit"));
    let e = cached(vec![prefixed(0.0, 100, 2, 1, 101)]).validate().unwrap_err();
    assert_eq!(e.field(), Some("trace"));
    assert!(e.to_string().contains("request 1"), "{e}");
}

fn speculation(depth: u64, acceptance: f64) -> Speculation {
    Speculation { depth, acceptance, draft: Draft::Heads { fraction: 0.0 } }
}

#[test]
fn speculation_with_full_acceptance_gives_depth_plus_one_tokens_per_step() {
    let sc = llama();
    // One request of 64 + 13 tokens, depth 3: the prefill gives the first token, then three
    // steps of 4 tokens each, each timed as one step of 4 new tokens on the cache.
    let cfg = SimConfig { speculation: Some(speculation(3, 1.0)), ..fixed(1, 64, 13) };
    let (s, steps) = records(&sc, &cfg);
    assert_eq!(s.spec_tokens_per_step, Some(4.0));
    assert_eq!(steps.len(), 4);
    let mut clock = StepClock::new(&sc);
    for (j, r) in steps.iter().enumerate().skip(1) {
        let chunk = Chunk { new_tokens: 4, cached_tokens: 64 + 4 * (j as u64 - 1) };
        assert_eq!(r.time_s, clock.ledger_step_s(&[chunk]), "step {j}");
    }
    assert_eq!(s.output_tokens, 13);
    // α = 0: one token per step, as without speculation (each step still verifies 4).
    let none = records(&sc, &SimConfig { speculation: Some(speculation(3, 0.0)), ..fixed(1, 64, 13) });
    assert_eq!((none.0.spec_tokens_per_step, none.1.len()), (Some(1.0), 13));
}

#[test]
fn sampled_tokens_per_step_match_the_expected_acceptance_length() {
    let sc = llama();
    let spec = speculation(4, 0.7);
    let expected = spec.expected_tokens_per_step();
    assert!(close(expected, (1.0 - 0.7f64.powi(5)) / 0.3, 1e-12));
    let cfg = SimConfig { speculation: Some(spec), ..closed(8, 32, 128, 1001) };
    let s = simulate(&sc, &cfg, |_| {}).unwrap().summary;
    // ~ 10,000 sequence-steps: a relative standard error below 1 %; near the end of a request the
    // depth shrinks, so the mean sits slightly under the formula.
    let got = s.spec_tokens_per_step.unwrap();
    assert!(close(got, expected, 0.02), "{got} vs {expected}");
    // A draft model's steps add to the step: slower than free heads, same tokens per step.
    let draft = Draft::Model(llm_ledger_core::simulate::DraftModel(std::sync::Arc::new(scenario(&[(
        "model",
        "llama-3.1-8b",
    )]))));
    let with_draft = SimConfig { speculation: Some(Speculation { draft, ..speculation(4, 0.7) }), ..cfg.clone() };
    let d = simulate(&sc, &with_draft, |_| {}).unwrap().summary;
    assert_eq!(d.spec_tokens_per_step, Some(got));
    assert!(d.tpot_s.mean > s.tpot_s.mean);
}

#[test]
fn bad_policy_values_are_refused_naming_the_field() {
    let base = SimConfig::poisson(1.0);
    let field = |c: SimConfig| c.validate().unwrap_err().field().map(str::to_string);
    assert_eq!(field(SimConfig { scheduler_steps: 0, ..base.clone() }).as_deref(), Some("scheduler_steps"));
    assert_eq!(field(SimConfig { scheduler_steps: 257, ..base.clone() }).as_deref(), Some("scheduler_steps"));
    for (depth, acceptance, name) in [
        (0, 0.5, "spec_depth"),
        (65, 0.5, "spec_depth"),
        (3, 1.5, "spec_acceptance"),
        (3, -0.1, "spec_acceptance"),
        (3, f64::NAN, "spec_acceptance"),
    ] {
        let c = SimConfig { speculation: Some(speculation(depth, acceptance)), ..base.clone() };
        assert_eq!(field(c).as_deref(), Some(name));
    }
    let c = SimConfig { admission: Admission::Watermark { fraction: 1.0 }, ..base.clone() };
    assert_eq!(field(c).as_deref(), Some("watermark"));
    assert_eq!(field(SimConfig { max_concurrency: Some(0), ..base.clone() }).as_deref(), Some("max_concurrency"));
    let c = SimConfig { cuda_graphs: CudaGraphs::Padded([4, 2].into()), ..base };
    assert_eq!(field(c).as_deref(), Some("cuda_graph_sizes"));
    for (text, name) in [("fifo", "router"), ("evict-all", "admission"), ("drop", "preemption"), ("later", "host_time")]
    {
        let e: Error = match name {
            "router" => text.parse::<Router>().unwrap_err(),
            "admission" => text.parse::<Admission>().unwrap_err(),
            "preemption" => text.parse::<Preemption>().unwrap_err(),
            _ => text.parse::<HostTime>().unwrap_err(),
        };
        assert_eq!(e.field(), Some(name), "{e}");
    }
    assert_eq!("least-outstanding".parse::<Router>().unwrap(), Router::LeastOutstanding);
    assert_eq!("guaranteed-no-evict".parse::<Admission>().unwrap(), Admission::GuaranteedNoEvict);
}

#[test]
fn a_draft_model_takes_its_weights_and_its_kv_cache_from_the_target_s_pool() {
    let sc = llama();
    let plain = SimConfig { requests: 10, ..SimConfig::poisson(1.0) };
    let draft = Draft::Model(llm_ledger_core::simulate::DraftModel(std::sync::Arc::new(scenario(&[(
        "model",
        "llama-3.2-1b",
    )]))));
    let with_draft = SimConfig { speculation: Some(Speculation { draft, ..speculation(4, 0.7) }), ..plain.clone() };
    let heads = SimConfig { speculation: Some(speculation(4, 0.7)), ..plain.clone() };
    let tokens = |c: &SimConfig| kv_capacity_blocks(&sc, c).unwrap() * c.block_tokens;
    let t0 = tokens(&plain);
    // Draft heads live in the target's weights: the same pool.
    assert_eq!(tokens(&heads), t0);
    // By hand: Llama 3 8B caches 2 × 32 layers × 8 KV heads × 128 × 2 B = 131,072 B a token;
    // Llama 3.2 1B 2 × 16 × 8 × 64 × 2 B = 32,768 B, and weighs 1,235,814,400 parameters × 2 B
    // (tied embedding). The target's free bytes F satisfy t0 ≤ F ÷ 131,072 < t0 + 16 (a block);
    // beside the draft, ⌊(F − W) ÷ (131,072 + 32,768)⌋ tokens, rounded down to blocks.
    let (per, per_draft, w_draft) = (131_072.0, 32_768.0, 2.0 * 1_235_814_400.0);
    let lo = ((t0 as f64 * per - w_draft) / (per + per_draft)).floor() as u64;
    let hi = (((t0 + 16) as f64 * per - w_draft) / (per + per_draft)).floor() as u64;
    let t1 = tokens(&with_draft);
    assert!(t1 + 16 > lo && t1 <= hi, "{t1} tokens beside the draft, expected in [{lo}, {hi}] (less a block)");
    assert!(t1 < t0 * 8 / 10, "the draft's cache and weights take over a fifth: {t1} of {t0}");
}

/// Each engine's step limits when none are given, by the GPU's memory as the engine reads it
/// (binary units): vLLM V1's `get_batch_defaults` (1024 sequences and 8,192 tokens on a GPU of
/// 70 GiB or more that is not an A100, else 256 and 2,048), SGLang's `chunked_prefill_size` tiers
/// (2,048 below 35 GiB, 4,096 below 60, 8,192 below 160, else 16,384) with 2,048 running requests,
/// and the plain 256 and 8,192 for the rest. A run's prompt chunk follows the step's tokens.
#[test]
fn each_engine_sets_its_own_step_limits_by_gpu_memory() {
    use llm_ledger_core::engine::Engine;
    use llm_ledger_core::simulate::SchedulerLimits;
    let catalog = llm_ledger_core::Catalog::builtin();
    let limits = |engine, gpu: &str| {
        let l = SchedulerLimits::of_engine(engine, &catalog.gpu(gpu).unwrap());
        (l.max_seqs, l.max_batched_tokens)
    };
    // H100 80 GB (74.5 GiB), H200 141 GB (131 GiB), B200 180 GB (168 GiB): the large defaults.
    for gpu in ["h100-sxm", "h200", "b200"] {
        assert_eq!(limits(Engine::Vllm, gpu), (1024, 8192), "{gpu}");
    }
    // The A100's 80 GB by name; the L40S's 48 GB and the L4's 24 GB by memory.
    for gpu in ["a100-80gb-sxm", "l40s", "l4"] {
        assert_eq!(limits(Engine::Vllm, gpu), (256, 2048), "{gpu}");
    }
    for (gpu, chunk) in
        [("l4", 2048), ("l40s", 4096), ("a100-80gb-sxm", 8192), ("h100-sxm", 8192), ("h200", 8192), ("b200", 16384)]
    {
        assert_eq!(limits(Engine::Sglang, gpu), (2048, chunk), "{gpu}");
    }
    for engine in [Engine::Trtllm, Engine::VllmV0, Engine::GptFast, Engine::Eager] {
        assert_eq!(limits(engine, "h100-sxm"), (256, 8192), "{engine:?}");
    }
    let l40s = catalog.gpu("l40s").unwrap();
    let cfg = SimConfig::poisson(1.0).for_engine(Engine::Vllm, &l40s);
    assert_eq!((cfg.max_seqs, cfg.max_batched_tokens, cfg.chunk_tokens), (256, 2048, 2048));
}
