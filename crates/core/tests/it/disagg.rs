//! Disaggregated serving (prefill and decode pools, the KV cache moved over a
//! link) against the static latency model, hand-computed transfers, queueing theory, its own
//! bookkeeping and aggregated serving on the same GPUs.

use llm_ledger_core::latency::Latency;
use llm_ledger_core::simulate::disagg::MAX_INSTANCES;
use llm_ledger_core::simulate::workload::{Arrivals, Lengths};
use llm_ledger_core::simulate::{
    simulate, simulate_deployment, Deployment, Disagg, KvLink, KvLinkChoice, PoolLayout, Pools, SimConfig, SimSummary,
};
use llm_ledger_core::testing::scenario;
use llm_ledger_core::Scenario;

fn llama() -> Scenario {
    scenario(&[])
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    ((a - b) / b).abs() <= rel
}

fn fixed(rate: f64, requests: u64, prompt: u64, output: u64) -> SimConfig {
    SimConfig { requests, prompt: Lengths::Fixed(prompt), output: Lengths::Fixed(output), ..SimConfig::poisson(rate) }
}

fn disagg(sc: &Scenario, prefill: u64, decode: u64, link: KvLinkChoice) -> Deployment {
    let link = KvLink::resolve(link, &sc.gpu, &sc.parallel, prefill + decode).unwrap();
    Deployment::Disaggregated(Disagg { prefill, decode, link, pools: None })
}

fn run(sc: &Scenario, cfg: &SimConfig, d: &Deployment) -> SimSummary {
    simulate_deployment(sc, cfg, d, |_| {}).unwrap().summary
}

#[test]
fn at_a_very_low_rate_ttft_is_the_static_prefill_and_tpot_adds_the_transfer_share() {
    let (prompt, output) = (700u64, 40u64);
    // Llama 3 8B, bf16 KV: 32 layers × 2 (K, V) × 8 KV heads × 128 × 2 bytes = 131,072 B a token.
    let bytes = 131_072.0 * prompt as f64;
    for (tp, link, alpha_s, beta) in [
        // H100 SXM: NVLink 4 450 GB/s a direction, 0.6 µs; InfiniBand NDR 50 GB/s, 2.7 µs; the
        // scenario's link efficiency 0.8. With TP 2 each GPU sends its half of the KV heads.
        ("1", KvLinkChoice::Nvlink, 0.6e-6, 450e9 * 0.8),
        ("1", KvLinkChoice::Network, 2.7e-6, 50e9 * 0.8),
        ("2", KvLinkChoice::Network, 2.7e-6, 50e9 * 0.8),
        ("1", KvLinkChoice::Ideal, 0.0, f64::INFINITY),
    ] {
        let sc = scenario(&[("tp", tp)]);
        let per_gpu = bytes / tp.parse::<f64>().unwrap();
        let transfer_s = if link == KvLinkChoice::Ideal { 0.0 } else { alpha_s + per_gpu / beta };
        // One request every 1,000 s: never two in flight.
        let cfg = fixed(0.001, 5, prompt, output);
        let s = run(&sc, &cfg, &disagg(&sc, 1, 1, link));
        let stat = Latency::of(&sc, 1, prompt, output, cfg.reserve_bytes).unwrap();
        let what = format!("tp {tp} over {link:?}");
        assert!(close(s.ttft_s.mean, stat.ttft_s, 1e-9), "{what}: TTFT {} vs {}", s.ttft_s.mean, stat.ttft_s);
        let tpot = stat.tpot_s.unwrap() + transfer_s / (output - 1) as f64;
        assert!(close(s.tpot_s.mean, tpot, 1e-9), "{what}: TPOT {} vs {tpot}", s.tpot_s.mean);
        let moved = s.kv_transfer_s.unwrap();
        assert!((moved.mean - transfer_s).abs() <= 1e-12 + 1e-9 * transfer_s, "{what}: {} vs {transfer_s}", moved.mean);
        assert!(close(s.e2e_s.mean, stat.e2e_s + transfer_s, 1e-9), "{what}");
    }
}

/// Every request finishes, each prompt token is prefilled once, each output token decoded once
/// (plus what preemption threw away), and no request is lost on the link.
fn assert_conserved(s: &SimSummary, requests: u64, prompt: u64, output: u64) {
    assert!(s.drained, "{s:?}");
    assert_eq!(s.completed, requests);
    assert_eq!(s.output_tokens, requests * output);
    assert_eq!(s.prompt_tokens, requests * prompt);
    assert_eq!(s.processed_tokens, requests * (prompt + output - 1) + s.recomputed_tokens);
    assert_eq!(s.ttft_s.count, requests);
    assert_eq!(s.itl_s.count, requests * (output - 1));
    assert_eq!(s.kv_transfer_s.unwrap().count, requests);
}

#[test]
fn every_request_finishes_and_every_token_is_processed_once() {
    let sc = llama();
    for (rate, split) in [(8.0, (1, 1)), (30.0, (2, 3)), (60.0, (1, 2))] {
        let cfg = fixed(rate, 400, 1500, 120);
        let s = run(&sc, &cfg, &disagg(&sc, split.0, split.1, KvLinkChoice::Network));
        assert_eq!(s.preemptions, 0, "{rate}");
        assert_conserved(&s, 400, 1500, 120);
    }
    // Llama 3.1 70B in fp8 on one H100 per instance: little KV, so the decode instance, fed by
    // four prefill instances, preempts.
    let sc = scenario(&[("model", "llama-3.1-70b"), ("weights", "fp8")]);
    let cfg = SimConfig { max_seqs: 64, ..fixed(50.0, 200, 2000, 400) };
    let s = run(&sc, &cfg, &disagg(&sc, 4, 1, KvLinkChoice::Nvlink));
    assert!(s.preemptions > 0, "{s:?}");
    assert_conserved(&s, 200, 2000, 400);
}

#[test]
fn the_same_seed_gives_the_same_disaggregated_run() {
    let sc = llama();
    let cfg = SimConfig {
        arrivals: Arrivals::Gamma { rate_per_s: 12.0, cv: 2.0 },
        prompt: Lengths::LogNormal { median: 800.0, sigma: 0.6 },
        output: Lengths::Uniform { min: 20, max: 300 },
        requests: 500,
        ..SimConfig::poisson(1.0)
    };
    let d = disagg(&sc, 1, 2, KvLinkChoice::Network);
    let a = run(&sc, &cfg, &d);
    assert_eq!(a, run(&sc, &cfg, &d));
    assert_ne!(a, run(&sc, &SimConfig { seed: 1, ..cfg }, &d));
}

#[test]
fn littles_law_holds_on_the_disaggregated_system() {
    let sc = llama();
    for (rate, cv) in [(10.0, 1.0), (25.0, 1.0), (15.0, 3.0)] {
        let cfg = SimConfig { arrivals: Arrivals::Gamma { rate_per_s: rate, cv }, ..fixed(rate, 2000, 1024, 128) };
        let s = run(&sc, &cfg, &disagg(&sc, 1, 2, KvLinkChoice::Network));
        let l = s.requests_per_s * s.mean_latency_s;
        // Requests on the link are in the system too.
        assert!(close(s.mean_in_system, l, 0.01), "rate {rate} cv {cv}: L {} vs λW {l}", s.mean_in_system);
    }
}

#[test]
fn with_a_free_link_disaggregated_decode_has_no_prefill_interference() {
    let sc = llama();
    // Long prompts at 8 requests/s: aggregated decode steps carry whole 2,048-token prefills.
    let cfg = fixed(8.0, 600, 2048, 128);
    let d = disagg(&sc, 1, 1, KvLinkChoice::Ideal);
    let split = run(&sc, &cfg, &d);
    let agg = run(&sc, &cfg, &d.aggregated_equivalent());
    // Aggregated: prefill lands in decode steps (the ITL tail is several decode steps long).
    assert!(agg.itl_s.p99 > 2.0 * agg.itl_s.p50, "{:?}", agg.itl_s);
    assert!(split.itl_s.p99 <= agg.itl_s.p99, "{:?} vs {:?}", split.itl_s, agg.itl_s);
    // The decode pool's steps are decode only: its ITL tail is a decode step or two (the second
    // token waits for the step in flight), far below a prefill.
    let prefill_s = Latency::of(&sc, 1, 2048, 2, cfg.reserve_bytes).unwrap().ttft_s;
    assert!(split.itl_s.p99 < 0.5 * prefill_s, "{:?} vs prefill {prefill_s}", split.itl_s);
}

#[test]
fn aggregated_replicas_deal_arrivals_round_robin() {
    let sc = llama();
    // At a very low rate every replica serves alone: the static model, as one instance does.
    let cfg = fixed(0.001, 6, 700, 40);
    let one = simulate(&sc, &cfg, |_| {}).unwrap().summary;
    let three = run(&sc, &cfg, &Deployment::Aggregated { replicas: 3 });
    assert!(close(three.ttft_s.mean, one.ttft_s.mean, 1e-12) && close(three.tpot_s.mean, one.tpot_s.mean, 1e-12));
    // Under load more replicas serve the same stream faster.
    let cfg = fixed(24.0, 600, 1024, 256);
    let one = run(&sc, &cfg, &Deployment::SINGLE);
    let two = run(&sc, &cfg, &Deployment::Aggregated { replicas: 2 });
    assert!(two.e2e_s.p99 < one.e2e_s.p99, "{:?} vs {:?}", two.e2e_s, one.e2e_s);
    assert_eq!(two.completed, 600);
}

#[test]
fn bad_splits_and_links_are_refused_naming_the_field() {
    for bad in ["0:1", "1:0", "3", "a:b", "1:2:3", "-1:2", "", "65:1", "99999999999999999999:1"] {
        let e = Disagg::parse_split(bad).unwrap_err();
        assert_eq!(e.field(), Some("disagg"), "{bad}");
        assert!(e.to_string().contains("PREFILL:DECODE"), "{bad}: {e}");
    }
    assert_eq!(Disagg::parse_split(" 2 : 6 ").unwrap(), (2, 6));
    assert_eq!(Disagg::parse_split(&format!("1:{}", MAX_INSTANCES - 1)).unwrap(), (1, MAX_INSTANCES - 1));
    let sc = llama();
    // NVLink's domain is 8 H100s: 5 + 5 instances do not fit it.
    let e = KvLink::resolve(KvLinkChoice::Nvlink, &sc.gpu, &sc.parallel, 10).unwrap_err();
    assert_eq!(e.field(), Some("kv_link"));
    assert!(e.to_string().contains("reaches 8 GPUs"), "{e}");
    // auto: NVLink inside a domain, the network beyond it.
    assert_eq!(KvLink::resolve(KvLinkChoice::Auto, &sc.gpu, &sc.parallel, 8).unwrap().choice, KvLinkChoice::Nvlink);
    assert_eq!(KvLink::resolve(KvLinkChoice::Auto, &sc.gpu, &sc.parallel, 9).unwrap().choice, KvLinkChoice::Network);
    assert_eq!("warp".parse::<KvLinkChoice>().unwrap_err().field(), Some("kv_link"));
    let cfg = fixed(1.0, 10, 100, 10);
    let zero = Deployment::Disaggregated(Disagg { prefill: 0, decode: 1, link: KvLink::ideal(), pools: None });
    assert_eq!(simulate_deployment(&sc, &cfg, &zero, |_| {}).unwrap_err().field(), Some("disagg"));
    let many = Deployment::Aggregated { replicas: MAX_INSTANCES + 1 };
    assert_eq!(simulate_deployment(&sc, &cfg, &many, |_| {}).unwrap_err().field(), Some("replicas"));
}

#[test]
fn prefill_instances_run_prefill_only_steps_and_decode_instances_decode_only_steps() {
    let sc = llama();
    let cfg = fixed(12.0, 300, 1024, 64);
    let d = disagg(&sc, 1, 2, KvLinkChoice::Network);
    let (mut mixed, mut decodes, mut prefills) = (0, 0, 0);
    let s = simulate_deployment(&sc, &cfg, &d, |r| {
        mixed += u64::from(r.decodes > 0 && r.prefills > 0);
        decodes += r.decodes;
        prefills += r.prefills;
    })
    .unwrap()
    .summary;
    assert_eq!(s.preemptions, 0);
    assert_eq!(mixed, 0, "no step mixes prefill and decode");
    // One prefill step per prompt (1,024 tokens fit one chunk), one decode per later token.
    assert_eq!((prefills, decodes), (300, 300 * 63));
    // Aggregated on the same GPUs, steps mix them (that is the interference).
    let mut mixed = 0;
    simulate_deployment(&sc, &cfg, &d.aggregated_equivalent(), |r| mixed += u64::from(r.decodes > 0 && r.prefills > 0))
        .unwrap();
    assert!(mixed > 0);
}

/// `prefill` instances of TP `tp_p` and `decode` instances of TP `tp_d` on the scenario's GPU,
/// over `link` resolved for the GPUs of both pools.
fn pools(sc: &Scenario, (prefill, tp_p): (u64, u64), (decode, tp_d): (u64, u64), link: KvLinkChoice) -> Deployment {
    let gpus = prefill * tp_p + decode * tp_d;
    let link = KvLink::resolve_for_gpus(link, &sc.gpu, sc.parallel.link_efficiency, gpus).unwrap();
    let pools = Pools {
        prefill: PoolLayout { tp: tp_p, ep: 1 },
        decode: PoolLayout { tp: tp_d, ep: 1 },
        aggregated: PoolLayout::of(&sc.parallel),
    };
    Deployment::Disaggregated(Disagg { prefill, decode, link, pools: Some(pools) })
}

#[test]
fn pools_of_their_own_layouts_take_each_layouts_prefill_decode_and_kv_share() {
    let (prompt, output) = (700u64, 40u64);
    // Llama 3 8B, bf16 KV: 32 layers × 2 (K, V) × 8 KV heads × 128 × 2 bytes = 131,072 B a token;
    // TP t holds 8 ÷ t of the KV heads on each GPU.
    let bytes = 131_072.0 * prompt as f64;
    let sc = llama();
    for (tp_p, tp_d, link, alpha_s, beta, bound_by) in [
        // H100 SXM: NVLink 4 450 GB/s a direction, 0.6 µs; InfiniBand NDR 50 GB/s, 2.7 µs; link
        // efficiency 0.8. One prefill GPU sends the whole cache to two decode GPUs: it is the
        // slower side.
        (1, 2, KvLinkChoice::Nvlink, 0.6e-6, 450e9 * 0.8, bytes),
        // Two prefill GPUs send half each to one decode GPU, which receives the whole cache.
        (2, 1, KvLinkChoice::Network, 2.7e-6, 50e9 * 0.8, bytes),
        // TP 2 to TP 4: each prefill GPU sends half, each decode GPU receives a quarter.
        (2, 4, KvLinkChoice::Network, 2.7e-6, 50e9 * 0.8, bytes / 2.0),
        (4, 2, KvLinkChoice::Ideal, 0.0, f64::INFINITY, 0.0),
    ] {
        let transfer_s = if link == KvLinkChoice::Ideal { 0.0 } else { alpha_s + bound_by / beta };
        let cfg = fixed(0.001, 5, prompt, output);
        let s = run(&sc, &cfg, &pools(&sc, (1, tp_p), (1, tp_d), link));
        // The static model on each pool's layout: the prefill pool's TTFT, the decode pool's TPOT.
        let on = |tp: u64| scenario(&[("tp", &tp.to_string())]);
        let prefill = Latency::of(&on(tp_p), 1, prompt, output, cfg.reserve_bytes).unwrap();
        let decode = Latency::of(&on(tp_d), 1, prompt, output, cfg.reserve_bytes).unwrap();
        let what = format!("prefill TP {tp_p}, decode TP {tp_d} over {link:?}");
        assert!(close(s.ttft_s.mean, prefill.ttft_s, 1e-9), "{what}: TTFT {} vs {}", s.ttft_s.mean, prefill.ttft_s);
        let tpot = decode.tpot_s.unwrap() + transfer_s / (output - 1) as f64;
        assert!(close(s.tpot_s.mean, tpot, 1e-9), "{what}: TPOT {} vs {tpot}", s.tpot_s.mean);
        let moved = s.kv_transfer_s.unwrap();
        assert!((moved.mean - transfer_s).abs() <= 1e-12 + 1e-9 * transfer_s, "{what}: {} vs {transfer_s}", moved.mean);
        // The decode pool holds whole requests: its KV capacity is the summary's.
        let decode_capacity = simulate(&on(tp_d), &cfg, |_| {}).unwrap().summary.kv_capacity_tokens;
        assert_eq!(s.kv_capacity_tokens, decode_capacity, "{what}");
    }
}

#[test]
fn pools_of_their_own_layouts_conserve_work_and_repeat_under_a_seed() {
    let sc = llama();
    for (prefill, decode) in [((1, 2), (2, 1)), ((2, 1), (1, 4)), ((1, 4), (3, 2))] {
        let d = pools(&sc, prefill, decode, KvLinkChoice::Network);
        let cfg = fixed(20.0, 400, 1500, 120);
        let s = run(&sc, &cfg, &d);
        assert_conserved(&s, 400, 1500, 120);
        assert_eq!(s, run(&sc, &cfg, &d), "{prefill:?} {decode:?}");
    }
    // Llama 3.1 70B in fp8: one decode GPU holds little KV, so fed by two TP 2 prefill instances
    // it preempts, and the preempted work is redone there.
    let sc = scenario(&[("model", "llama-3.1-70b"), ("weights", "fp8")]);
    let cfg = SimConfig { max_seqs: 64, ..fixed(50.0, 200, 2000, 400) };
    let s = run(&sc, &cfg, &pools(&sc, (2, 2), (1, 1), KvLinkChoice::Nvlink));
    assert!(s.preemptions > 0, "{s:?}");
    assert_conserved(&s, 200, 2000, 400);
    // Pools that take the scenario's layout are the deployment without pools, to the bit.
    let sc = scenario(&[("tp", "2")]);
    let own = Disagg::with_pools("1:2", Some("network"), &sc, Some(PoolLayout { tp: 2, ep: 1 }), None).unwrap();
    assert_eq!(own.pools, None);
    let plain = Disagg::of_inputs("1:2", Some("network"), &sc).unwrap();
    assert_eq!(own, plain);
}

#[test]
fn the_aggregated_counterpart_of_pools_uses_the_same_gpus() {
    // 1 prefill instance of TP 2 and 3 decode instances of 1 GPU: 5 GPUs, 5 aggregated instances
    // of the scenario's 1 GPU.
    let sc = llama();
    let d = pools(&sc, (1, 2), (3, 1), KvLinkChoice::Nvlink);
    assert_eq!(d.aggregated_equivalent(), Deployment::Aggregated { replicas: 5 });
    let Deployment::Disaggregated(split) = &d else { unreachable!() };
    assert_eq!(split.gpus(&sc), 5);
    // On a TP 2 scenario, 1 × TP 1 + 1 × TP 2 = 3 GPUs hold one aggregated TP 2 instance.
    let sc = scenario(&[("tp", "2")]);
    let d = pools(&sc, (1, 1), (1, 2), KvLinkChoice::Nvlink);
    assert_eq!(d.aggregated_equivalent(), Deployment::Aggregated { replicas: 1 });
    // The link is chosen for the GPUs of both pools: 3 × TP 2 + 2 × TP 1 fit one NVLink domain of
    // 8 H100s, 4 × TP 2 + 1 × TP 1 do not.
    let tp = |n| Some(PoolLayout { tp: n, ep: 1 });
    let nine = Disagg::with_pools("4:1", None, &sc, tp(2), tp(1)).unwrap();
    assert_eq!((nine.gpus(&sc), nine.link.choice), (9, KvLinkChoice::Network));
    let eight = Disagg::with_pools("3:2", None, &sc, tp(2), tp(1)).unwrap();
    assert_eq!((eight.gpus(&sc), eight.link.choice), (8, KvLinkChoice::Nvlink));
}

#[test]
fn pool_layouts_the_model_cannot_take_are_refused_naming_the_pools_input() {
    let sc = llama();
    let layout = |tp, ep| Some(PoolLayout { tp, ep });
    let field = |p: Option<PoolLayout>, d: Option<PoolLayout>| {
        let e = Disagg::with_pools("1:1", None, &sc, p, d).unwrap_err();
        (e.field().map(String::from), e.to_string())
    };
    // 32 attention heads: TP 3 divides none of them.
    let (f, m) = field(layout(3, 1), None);
    assert_eq!(f.as_deref(), Some("prefill_tp"), "{m}");
    assert!(m.contains("a divisor of the 32 attention heads"), "{m}");
    // A dense model has no experts to split.
    let (f, m) = field(None, layout(1, 2));
    assert_eq!(f.as_deref(), Some("decode_ep"), "{m}");
    assert!(m.contains("has no experts"), "{m}");
    assert_eq!(field(None, layout(0, 1)).0.as_deref(), Some("decode_tp"));
    assert_eq!(field(layout(8192, 1), None).0.as_deref(), Some("prefill_tp"));
    // Mixtral's 8 experts: EP 3 is not a divisor.
    let moe = scenario(&[("model", "mixtral-8x7b")]);
    let e = Disagg::with_pools("1:1", None, &moe, None, layout(1, 3)).unwrap_err();
    assert_eq!(e.field(), Some("decode_ep"), "{e}");
    assert!(Disagg::with_pools("1:1", None, &moe, layout(2, 4), layout(1, 8)).is_ok());
}

#[test]
fn a_prompt_past_the_prefill_pools_kv_capacity_is_refused_before_the_run() {
    // Llama 3.1 70B in fp8 on one H100 leaves room for few tokens; on four it holds a 30,000-token
    // request whole. A prefill pool of one GPU cannot hold the prompt.
    let sc = scenario(&[("model", "llama-3.1-70b"), ("weights", "fp8")]);
    let cfg = fixed(1.0, 10, 30_000, 100);
    let e = simulate_deployment(&sc, &cfg, &pools(&sc, (1, 1), (1, 4), KvLinkChoice::Network), |_| {}).unwrap_err();
    assert_eq!(e.field(), Some("prompt"));
    assert!(e.to_string().contains("the prefill pool's KV capacity"), "{e}");
    // Served the other way round, a TP 4 prefill pool holds the prompt and the TP 4 decode pool
    // the whole request.
    let s = run(&sc, &cfg, &pools(&sc, (1, 4), (1, 4), KvLinkChoice::Network));
    assert_conserved(&s, 10, 30_000, 100);
}
