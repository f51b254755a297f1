//! Parallel deployments: per-GPU weights and KV under tensor parallelism, the collective
//! model against its closed form, pipeline stages and micro-batches, expert parallelism under
//! skewed routing, the planner's refusals and choices, and one GPU left unchanged.

use llm_ledger_core::hardware::parse_gpu_file;
use llm_ledger_core::memory::{Footprint, GpuWeights, WeightFootprint};
use llm_ledger_core::ops::OpKind;
use llm_ledger_core::parallel::{stage_kv_bytes, LinkScope};
use llm_ledger_core::plan::{plan, PlanRefusal, PlanRequest, Refusal};
use llm_ledger_core::serving::{Price, PriceSource};
use llm_ledger_core::testing::scenario;
use llm_ledger_core::{summarise, Catalog, Error, Ledger, Scenario, ScenarioRequest};

fn close(a: f64, b: f64, rel: f64) -> bool {
    ((a - b) / b).abs() <= rel
}

fn row(l: &Ledger, op: OpKind) -> &llm_ledger_core::Row {
    l.row(op).unwrap_or_else(|| panic!("no {} row", op.name()))
}

fn s70(pairs: &[(&str, &str)]) -> Scenario {
    let mut all = vec![("model", "llama-3.1-70b")];
    all.extend_from_slice(pairs);
    scenario(&all)
}

/// Llama 3.1 70B: hidden 8,192, 80 layers, 64 query heads and 8 KV heads of 128, SwiGLU MLP of
/// 28,672, vocabulary 128,256, untied LM head, RMSNorm.
///
/// Per layer: q and o 8,192·8,192 = 67,108,864 weights each, k and v 8,192·1,024 = 8,388,608 each,
/// gate/up/down 8,192·28,672 = 234,881,024 each: 855,638,016 in all, split over TP (8 KV heads ≥
/// TP, so k and v split too); two norms of 8,192 on every GPU. Embedding and head 128,256·8,192 =
/// 1,050,673,152 each, vocab-parallel (128,256 divides by 8); the final norm 8,192. bf16: 2 bytes.
#[test]
fn llama_70b_weight_bytes_per_gpu_at_tp_2_4_8() {
    for t in [2u64, 4, 8] {
        let s = s70(&[("tp", &t.to_string())]);
        // Stored on each GPU.
        let stored = 80 * (855_638_016 / t + 2 * 8192) + 2 * 1_050_673_152 / t + 8192;
        let got = GpuWeights::of(&s).per_stage().to_vec();
        assert_eq!(got.len(), 1);
        assert!(close(got[0], stored as f64 * 2.0, 1e-15), "TP {t}: {} vs {}", got[0], stored * 2);
        // Read by one decode step at batch 1: the same, but the embedding gathers one row of 8,192
        // values, 1/t of it on each GPU in expectation.
        let read = 80 * (855_638_016 / t + 2 * 8192) + 8192 / t + 8192 + 1_050_673_152 / t;
        let l = Ledger::build(&s);
        assert!(
            close(l.summary.cost.weight_bytes, read as f64 * 2.0, 1e-12),
            "TP {t}: {} vs {}",
            l.summary.cost.weight_bytes,
            read * 2
        );
    }
    // TP 2: 35,277,512,704 parameters, 70.6 GB per GPU, which leaves 7.4 GB of an 80 GB card
    // after the 2 GB reserve for the KV cache.
    let fp = Footprint::of(&s70(&[("tp", "2")]), 2e9);
    assert!(close(fp.weight_bytes, 70_555_025_408.0, 1e-15), "{}", fp.weight_bytes);
    assert!(fp.fits);
}

/// Ring all-reduce of `S` bytes over `N` GPUs: `2·(N−1)/N · S` on each GPU's link, taking
/// `that ÷ (per-direction bandwidth × 0.8) + 6.6 µs + 2·(N−1) · α` on the roofline (the α + n/β
/// model, the roofline column of every clock).
#[test]
fn all_reduce_time_matches_the_closed_form() {
    // Batch 16: S = 16 · 8,192 · 2 bytes = 262,144; at N = 8 each GPU sends 2·7/8 · S = 458,752.
    let (s, sent) = (262_144.0, 458_752.0);
    assert_eq!(2.0 * 7.0 / 8.0 * s, sent);
    for (ic, bw, alpha) in [("nvlink", 450e9, 0.6e-6), ("pcie", 64e9, 1.0e-6)] {
        let sc = s70(&[("tp", "8"), ("batch", "16"), ("interconnect", ic)]);
        let l = Ledger::build(&sc);
        let one = sent / (bw * 0.8) + 6.6e-6 + 14.0 * alpha;
        for op in [OpKind::AllReduceAttn, OpKind::AllReduceMlp] {
            let r = row(&l, op);
            assert_eq!(r.instances, 80);
            assert!(close(r.cost.link_bytes, 80.0 * sent, 1e-12), "{ic}: {}", r.cost.link_bytes);
            assert!(close(r.timing.roofline_s, 80.0 * one, 1e-12), "{ic}: {} vs {}", r.timing.roofline_s, 80.0 * one);
            assert_eq!(r.cost.bytes(), 0.0, "link bytes are not HBM bytes");
            assert_eq!(r.timing.bound().name(), "link");
        }
        // The gather of the logits: 16 rows × 128,256 × 2 bytes, 7/8 of it over 7 hops.
        let g = row(&l, OpKind::AllGatherLogits);
        let logits = 16.0 * 128_256.0 * 2.0 * 7.0 / 8.0;
        assert!(close(g.timing.roofline_s, logits / (bw * 0.8) + 6.6e-6 + 7.0 * alpha, 1e-12));
    }
}

#[test]
fn kv_heads_are_replicated_when_tp_exceeds_them() {
    // 8 KV heads: at TP 8 each GPU holds one; at TP 16 each still holds one (two copies of each).
    let (t8, t16) = (s70(&[("tp", "8")]), s70(&[("tp", "16")]));
    assert_eq!(t16.parallel.kv_head_replicas(8), 2);
    let (l8, l16) = (Ledger::build(&t8), Ledger::build(&t16));
    // k_proj: one head of 128 columns per GPU at both: 80 · 8,192 · 128 · 2 bytes.
    for l in [&l8, &l16] {
        assert_eq!(row(l, OpKind::KProj).cost.weight_bytes, 80.0 * 8192.0 * 128.0 * 2.0);
    }
    // q_proj halves: 80 · 8,192 · (8,192/16) · 2 at TP 16.
    assert_eq!(row(&l16, OpKind::QProj).cost.weight_bytes, 80.0 * 8192.0 * 512.0 * 2.0);
    // The KV cache and its reads per GPU do not halve: 1/8 of 80 · 2 · 8 · 128 · 2 = 327,680 bytes
    // per token is 40,960; a decode step at 2,048 cached tokens holds 2,049 positions.
    for s in [&t8, &t16] {
        assert_eq!(stage_kv_bytes(s, 0), 2049.0 * 40_960.0);
    }
    assert_eq!(row(&l8, OpKind::Attention).cost.kv_read_bytes, row(&l16, OpKind::Attention).cost.kv_read_bytes);
    // Attention FLOPs do halve (4 query heads per GPU instead of 8).
    assert!(close(row(&l16, OpKind::Attention).cost.flops * 2.0, row(&l8, OpKind::Attention).cost.flops, 1e-12));
}

#[test]
fn tensor_parallel_shares_add_up_to_one_gpu() {
    // Below the KV heads, t GPUs together do exactly the GEMM FLOPs of one, and hold its
    // weights but for the replicated norms.
    let one = Ledger::build(&s70(&[("batch", "8")]));
    for t in [2u64, 4, 8] {
        let l = Ledger::build(&s70(&[("batch", "8"), ("tp", &t.to_string())]));
        for op in [OpKind::QProj, OpKind::KProj, OpKind::OProj, OpKind::GateProj, OpKind::DownProj, OpKind::LmHead] {
            assert!(close(row(&l, op).cost.flops * t as f64, row(&one, op).cost.flops, 1e-12), "{}", op.name());
            assert!(
                close(row(&l, op).cost.weight_bytes * t as f64, row(&one, op).cost.weight_bytes, 1e-12),
                "{}",
                op.name()
            );
        }
        // Norms are replicated.
        assert_eq!(row(&l, OpKind::AttnNorm).cost, row(&one, OpKind::AttnNorm).cost);
    }
}

#[test]
fn one_gpu_is_unchanged() {
    // Explicit TP = PP = EP = DP = 1 is the single-GPU ledger, row for row (the reference calculator's numbers are
    // held by tests/seed004.rs).
    let one = Ledger::build(&scenario(&[("batch", "64"), ("counting", "seed")]));
    let flags = [("batch", "64"), ("counting", "seed"), ("tp", "1"), ("pp", "1"), ("ep", "1"), ("dp", "1")];
    let same = Ledger::build(&scenario(&flags));
    assert_eq!(one.rows, same.rows);
    assert_eq!(one.summary, same.summary);
    assert!(one.rows.iter().all(|r| !r.op.is_comm()));
}

#[test]
fn pipeline_stages_hold_the_model_between_them() {
    // Llama 3.1 70B over 3 stages: 27, 27, 26 layers (vLLM's split); the stages' weights add up
    // to the model's.
    let s = s70(&[("pp", "3")]);
    let layers: Vec<u64> = s.parallel.stages.iter().map(|st| st.layers).collect();
    assert_eq!(layers, [27, 27, 26]);
    let per_stage = GpuWeights::of(&s).per_stage().to_vec();
    let whole = WeightFootprint::of(&s.model, &s.weights).total_bytes();
    assert!(close(per_stage.iter().sum::<f64>(), whole, 1e-12));
    // The stage with 26 layers also holds the LM head, 2.1 GB: it is the fullest.
    assert!(per_stage[2] > per_stage[1]);
}

#[test]
fn pipeline_decode_keeps_stages_busy_and_prefill_has_a_bubble() {
    // Decode, batch 64 over 4 stages: 4 micro-batches of 16 keep every stage busy; the rows of the
    // GPU shown add up to the step.
    let d = s70(&[("pp", "4"), ("batch", "64")]);
    let l = Ledger::build(&d);
    let p = l.summary.pipeline.unwrap();
    assert_eq!(p.micro_batches, 4);
    let sum: f64 = l.rows.iter().map(|r| r.timing.time_s).sum();
    assert!(close(sum, l.summary.step_time_s(), 1e-12));
    assert!(close(p.step_s, l.summary.step_time_s(), 1e-12));
    assert!(p.idle_fraction < 0.05, "{p:?}");
    // q_proj of the stage shown runs 20 layers × 4 micro-batches.
    assert_eq!(row(&l, OpKind::QProj).instances, 80);
    // Batch 1 cannot be split: one micro-batch, each stage idle 3/4 of the time.
    let one = Ledger::build(&s70(&[("pp", "4"), ("batch", "1")]));
    let p1 = one.summary.pipeline.unwrap();
    assert_eq!(p1.micro_batches, 1);
    assert!(close(p1.idle_fraction, 0.75, 0.05), "{p1:?}");
    // Prefill of 4 prompts in 4 micro-batches over 4 stages: GPipe's bubble (P−1)/(M+P−1) = 3/7
    // (the stages differ by the embedding and the head, hence the tolerance).
    let pre = Ledger::build(&s70(&[("pp", "4"), ("batch", "4"), ("ctx", "1024"), ("phase", "prefill")]));
    let pp = pre.summary.pipeline.unwrap();
    assert!(close(pp.idle_fraction, 3.0 / 7.0, 0.02), "{pp:?}");
    assert!(row(&pre, OpKind::PipelineWait).timing.time_s > 0.0);
}

#[test]
fn expert_parallel_waits_for_the_busiest_group() {
    let base = [("model", "qwen3-30b-a3b"), ("batch", "64")];
    let one = Ledger::build(&scenario(&base));
    let uniform = Ledger::build(&scenario(&[base[0], base[1], ("ep", "4")]));
    // Uniform routing: each of 4 groups does a quarter of the expert FLOPs and reads a quarter of
    // the experts touched.
    for op in [OpKind::ExpertGate, OpKind::ExpertDown] {
        assert!(close(row(&uniform, op).cost.flops * 4.0, row(&one, op).cost.flops, 1e-12));
        assert!(close(row(&uniform, op).cost.weight_bytes * 4.0, row(&one, op).cost.weight_bytes, 1e-12));
    }
    // Attention runs data-parallel: a quarter of the batch per group, the whole weights.
    assert!(close(
        row(&uniform, OpKind::Attention).cost.kv_read_bytes * 4.0,
        row(&one, OpKind::Attention).cost.kv_read_bytes,
        1e-12
    ));
    assert_eq!(row(&uniform, OpKind::QProj).cost.weight_bytes, row(&one, OpKind::QProj).cost.weight_bytes);
    // Skewed routing (measured loads, experts 0–31 ten times as popular as the rest): group 0
    // holds them and gets 10·32/(10·32 + 96) = 0.769 of the assignments, 3.08× the mean.
    let loads: Vec<String> = (0..128).map(|i| if i < 32 { "10" } else { "1" }.to_string()).collect();
    let loads = loads.join(",");
    let skew = Ledger::build(&scenario(&[base[0], base[1], ("ep", "4"), ("expert_loads", &loads)]));
    let share = 320.0 / 416.0;
    assert!(close(row(&skew, OpKind::ExpertGate).cost.flops, row(&one, OpKind::ExpertGate).cost.flops * share, 1e-9));
    assert!(row(&skew, OpKind::AllToAllDispatch).timing.time_s > row(&uniform, OpKind::AllToAllDispatch).timing.time_s);
    assert!(skew.summary.step_time_s() > uniform.summary.step_time_s());
}

fn request(tpot_ms: f64, max_gpus: u64) -> PlanRequest {
    PlanRequest {
        ctx: 2048,
        tpot_bound_s: tpot_ms / 1e3,
        max_gpus,
        price: Price { usd_per_hour: 3.0, source: PriceSource::User },
        reserve_bytes: 2e9,
        batches: None,
    }
}

#[test]
fn plan_refuses_405b_at_bf16_on_one_gpu_and_says_what_fits() {
    let s = scenario(&[("model", "llama-3.1-405b")]);
    let e = plan(&s, &request(50.0, 1)).unwrap_err();
    assert_eq!(e.field(), Some("max_gpus"));
    assert!(
        e.to_string().starts_with("invalid `max_gpus`: 1 (no layout of at most 1 GPU fits llama-3.1-405b on h100-sxm"),
        "{e}"
    );
    // 812 GB of weights against 78 GB (80 GB less the 2 GB reserve); TP 8 × PP 2 is the smallest
    // layout that fits and meets 50 ms (TP 8 alone holds 101.6 GB per GPU; PP 11 fits but takes
    // 0.3 s per token).
    let Error::NoPlan(refused) = e else { panic!("{e:?}") };
    let PlanRefusal::DoesNotFit { closest: Some((layout, need, avail)), smallest_fitting, smallest_meeting } =
        refused.refusal
    else {
        panic!("{refused:?}")
    };
    assert_eq!(layout.gpus(), 1);
    assert_eq!((format!("{:.1}", need / 1e9), format!("{:.1}", avail / 1e9)), ("812.8".into(), "78.0".into()));
    assert_eq!(smallest_meeting.map(|m| (m.layout.tp, m.layout.pp, m.layout.ep)), Some((8, 2, 1)));
    assert_eq!(smallest_fitting.map(|f| (f.layout.tp, f.layout.pp)), Some((1, 11)));
    assert!(smallest_fitting.unwrap().tpot_s > 0.25 && smallest_meeting.unwrap().tpot_s <= 0.050);
}

#[test]
fn plan_finds_tp_8_for_405b_at_fp8_on_8_h100() {
    // At fp8 the 405B weights are 408 GB: 51 GB per GPU on 8 GPUs, read in 51e9 / (0.8 · 3.35e12)
    // = 19 ms per step. TP 8 adds 2 all-reduces × 126 layers × ~15 µs = 3.8 ms, and the measured
    // kernels' fixed costs and attention the rest: 30.8 ms at batch 1. Any pipeline split of 8
    // GPUs (TP 4 × PP 2, TP 2 × PP 4, …) reads the same 51 GB per GPU once per stage, one stage
    // after another: at least 2 × 19 = 38 ms, above a 35 ms bound; fewer than 8 GPUs do not fit.
    // So TP 8 is the only answer.
    let s = scenario(&[("model", "llama-3.1-405b"), ("weights", "fp8")]);
    let p = plan(&s, &request(35.0, 8)).unwrap();
    assert_eq!(p.ranked.len(), 1, "{:?}", p.ranked);
    let best = p.ranked[0];
    assert_eq!((best.tp, best.pp, best.ep, best.gpus), (8, 1, 1, 8));
    assert!(best.tpot_s <= 0.035 && best.batch > 1);
    let tp4pp2 = p.refused.iter().find(|r| (r.tp, r.pp) == (4, 2)).unwrap();
    match tp4pp2.refusal {
        Refusal::TooSlow { tpot_s, .. } => assert!(tpot_s > 2.0 * 50e9 / (0.8 * 3.35e12), "{tpot_s}"),
        ref other => panic!("{other:?}"),
    }
    // Every point on the front fits; it is sorted by TPOT and rises in tokens/s per GPU.
    assert!(p
        .pareto
        .windows(2)
        .all(|w| w[0].tpot_s <= w[1].tpot_s && w[0].tokens_per_s_per_gpu < w[1].tokens_per_s_per_gpu));
}

#[test]
fn plan_for_405b_at_bf16_under_50_ms_is_16_gpus() {
    let s = scenario(&[("model", "llama-3.1-405b")]);
    let p = plan(&s, &request(50.0, 16)).unwrap();
    let best = p.ranked[0];
    assert_eq!((best.tp, best.pp, best.gpus), (8, 2, 16));
    // $/M = 16 GPUs × $3/3600 per second × TPOT ÷ batch × 10⁶.
    assert!(close(best.usd_per_million_tokens, 16.0 * 3.0 / 3600.0 * best.tpot_s / best.batch as f64 * 1e6, 1e-12));
    let e = plan(&s, &request(5.0, 16)).unwrap_err();
    assert_eq!(e.field(), Some("tpot_ms"));
    assert!(
        e.to_string().starts_with("invalid `tpot_ms`: 5.000 ms (no layout within 16 GPUs meets it; the fastest takes"),
        "{e}"
    );
    let Error::NoPlan(refused) = e else { panic!() };
    assert!(
        matches!(refused.refusal, PlanRefusal::TooSlow { fastest, .. } if fastest.tpot_s > 0.005 && fastest.layout.gpus() <= 16)
    );
}

/// At batch 1 an all-reduce moves kilobytes: it is latency-bound, and NVLink and PCIe differ only
/// by their per-hop latency. A single long prompt moves megabytes per all-reduce: there the link's
/// bandwidth decides, and communication dominates on PCIe but not on NVLink.
#[test]
fn communication_dominates_one_prompt_on_pcie_but_not_on_nvlink() {
    let link_share = |l: &Ledger| {
        l.rows.iter().filter(|r| r.op.is_comm()).map(|r| r.timing.time_s).sum::<f64>() / l.summary.step_time_s()
    };
    // Decode, batch 1, Llama 3 8B at TP 8: 32 layers × 2 all-reduces of 8 kB. Per all-reduce the
    // latency is 6.6 + 14 × 0.6 = 15.0 µs on NVLink and 6.6 + 14 × 1.0 = 20.6 µs on PCIe; the
    // bytes add 14.3 kB ÷ 360 GB/s = 0.04 µs and ÷ 51.2 GB/s = 0.28 µs.
    let dec = |ic: &str| Ledger::build(&scenario(&[("tp", "8"), ("interconnect", ic)]));
    let (nv, pc) = (dec("nvlink"), dec("pcie"));
    let t = |l: &Ledger| row(l, OpKind::AllReduceMlp).timing.roofline_s / 32.0;
    let bytes = 2.0 * 7.0 / 8.0 * 4096.0 * 2.0;
    assert!(close(t(&nv), bytes / 360e9 + 15.0e-6, 1e-12));
    assert!(close(t(&pc), bytes / 51.2e9 + 20.6e-6, 1e-12));
    assert!(bytes / 51.2e9 < 0.02 * t(&pc), "latency-bound");
    // Prefill of one 8,192-token prompt: each all-reduce is 8,192 × 4,096 × 2 = 67 MB.
    let pre = |ic: &str| {
        Ledger::build(&scenario(&[("tp", "8"), ("phase", "prefill"), ("ctx", "8192"), ("interconnect", ic)]))
    };
    let (nv, pc) = (link_share(&pre("nvlink")), link_share(&pre("pcie")));
    assert!(pc > 0.5, "PCIe: {pc}");
    assert!(nv < 0.5, "NVLink: {nv}");
}

/// On the measured clock a collective over the link its tables were measured on is the engine's
/// measured kernel: an all-reduce the faster of the engine's custom kernel and NCCL at the message
/// each GPU contributes (`link bytes ÷ 2(N−1)/N`), never a shorter message's time beyond a longer
/// one's, never faster than its link bytes at the link's peak; over another link (PCIe chosen on
/// an NVLink board) the α + n/β model.
#[test]
fn collectives_on_the_measured_clock_are_the_measured_kernels() {
    use llm_ledger_core::kernels::{allreduce_us, nccl_us, Collective, Engine, KernelGpu, Tables};
    let per = |l: &Ledger, op| {
        let r = row(l, op);
        (
            r.timing.time_s / r.instances as f64,
            r.timing.roofline_s / r.instances as f64,
            r.cost.link_bytes / r.instances as f64,
        )
    };
    let mut last = 0.0;
    for batch in [1u64, 4, 16, 64, 256, 1024] {
        let l = Ledger::build(&s70(&[("tp", "8"), ("batch", &batch.to_string()), ("engine", "trtllm")]));
        let (t, roof, link) = per(&l, OpKind::AllReduceMlp);
        let message = batch as f64 * 8192.0 * 2.0;
        assert!(close(link, 2.0 * 7.0 / 8.0 * message, 1e-12));
        let custom = allreduce_us(Tables::newest(KernelGpu::H100Sxm, Engine::Trtllm), 8, message).unwrap();
        let nccl = nccl_us(KernelGpu::H100Sxm, Collective::AllReduce, 8, message).unwrap();
        assert!(custom <= nccl + 1e-9, "the faster of the two: {custom} vs NCCL {nccl}");
        assert!(close(t, (custom * 1e-6).max(link / 450e9), 1e-12), "batch {batch}: {t} vs {custom} µs");
        assert!(t >= last, "batch {batch}: a longer message is never faster ({t} < {last})");
        assert!(t >= link / 450e9);
        assert!(roof > 0.0 && roof != t);
        last = t;
    }
    // PCIe chosen on an NVLink board: no table for that link, the α + n/β time.
    let l = Ledger::build(&s70(&[("tp", "8"), ("batch", "16"), ("interconnect", "pcie")]));
    let (t, roof, _) = per(&l, OpKind::AllReduceMlp);
    assert_eq!(t, roof);
    // The roofline clock keeps the α + n/β time.
    let l = Ledger::build(&s70(&[("tp", "8"), ("batch", "16"), ("time_model", "roofline")]));
    let (t, roof, _) = per(&l, OpKind::AllReduceMlp);
    assert_eq!(t, roof);
}

#[test]
fn links_follow_the_gpu_and_the_choice() {
    let s = s70(&[("gpu", "h100-pcie"), ("tp", "2")]);
    assert_eq!(s.parallel.tp_link.as_ref().unwrap().scope, LinkScope::ScaleUp);
    let e = ScenarioRequest {
        gpu: Some("l40s".into()),
        tp: Some("2".into()),
        interconnect: Some("nvlink".into()),
        ..Default::default()
    }
    .resolve(&Catalog::builtin())
    .unwrap_err()
    .to_string();
    assert_eq!(e, "invalid `interconnect`: nvlink (pcie: l40s has no NVLink or other scale-up link)");
    // A user GPU file without links is one GPU only.
    let text = llm_ledger_core::testing::minimal_gpu_toml("lonely");
    let mut c = Catalog::builtin();
    c.add_gpus(parse_gpu_file(&text).unwrap());
    let req = ScenarioRequest { gpu: Some("lonely".into()), tp: Some("2".into()), ..Default::default() };
    let e = req.resolve(&c).unwrap_err().to_string();
    assert!(e.starts_with("invalid `tp`: 2 (a group of at most 1 GPUs: lonely lists no link for more"), "{e}");
}

#[test]
fn bad_layouts_name_the_flag() {
    let msg = |pairs: &[(&str, &str)]| {
        let mut all = vec![("model", "llama-3.1-70b")];
        all.extend_from_slice(pairs);
        scenario_err(&all)
    };
    assert_eq!(msg(&[("tp", "3")]), "invalid `tp`: 3 (a divisor of the 64 attention heads of llama-3.1-70b)");
    assert_eq!(msg(&[("tp", "0")]), "invalid `tp`: 0 (an integer from 1 to 4,096)");
    assert_eq!(msg(&[("ep", "2")]), "invalid `ep`: 2 (1: llama-3.1-70b has no experts)");
    assert_eq!(msg(&[("pp", "81")]), "invalid `pp`: 81 (at most the 80 layers of llama-3.1-70b (one stage per layer))");
    assert_eq!(msg(&[("tp", "64"), ("pp", "80")]), "invalid `tp × pp × ep`: 5120 (at most 4096 GPUs per replica)");
    assert_eq!(
        msg(&[("micro_batches", "4")]),
        "invalid `micro_batches`: 4 (1 without pipeline parallelism (`pp` = 1))"
    );
    assert_eq!(
        msg(&[("link_efficiency", "1.5"), ("tp", "2")]),
        "invalid `link_efficiency`: 1.5 (a number in [0.01, 1])"
    );
    assert_eq!(msg(&[("interconnect", "ib")]), "unknown interconnect `ib`; accepted: nvlink, pcie");
    let e = scenario_err(&[("model", "mixtral-8x7b"), ("ep", "3")]);
    assert_eq!(e, "invalid `ep`: 3 (a divisor of the 8 experts of mixtral-8x7b)");
}

/// The error of resolving these `ScenarioRequest` fields.
fn scenario_err(pairs: &[(&str, &str)]) -> String {
    let fields: serde_json::Map<String, serde_json::Value> =
        pairs.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string()))).collect();
    let req: ScenarioRequest = serde_json::from_value(serde_json::Value::Object(fields)).unwrap();
    req.resolve(&Catalog::builtin()).unwrap_err().to_string()
}

#[test]
fn memory_is_the_fullest_gpu() {
    let s405 = |pairs: &[(&str, &str)]| {
        let mut all = vec![("model", "llama-3.1-405b")];
        all.extend_from_slice(pairs);
        scenario(&all)
    };
    // 812 GB of bf16 weights: 101.6 GB per GPU at TP 8, half of that at TP 8 × PP 2.
    assert!(!Footprint::of(&s405(&[("tp", "8")]), 2e9).fits);
    let fp = Footprint::of(&s405(&[("tp", "8"), ("pp", "2")]), 2e9);
    assert!(fp.fits);
    let whole = WeightFootprint::of(&s405(&[]).model, &s405(&[]).weights).total_bytes();
    assert!(close(fp.weight_bytes, whole / 16.0, 0.01), "{} vs {}", fp.weight_bytes, whole / 16.0);
    // Decode TPOT: 2 stages × 50.8 GB read at 2.68 TB/s is at least 37.9 ms.
    assert!(summarise(&s405(&[("tp", "8"), ("pp", "2")])).step_time_s() > 2.0 * fp.weight_bytes / 2.68e12);
}
