//! Every operator's time is one a GPU could produce, under every clock and engine: never faster
//! than the hardware's peaks, and never far slower than its roofline without a named cause.
//!
//! For every preset × catalogue GPU × clock (the roofline and the measured clock of each engine)
//! × phase × batch {1, 16, 256, 4096} × context {128, 8192}, one GPU's operators in execution
//! order ([`for_each_gpu_op`]):
//!
//! * **lower bound, per kernel**: an operator in a kernel of its own (or its share of a merged
//!   GEMM) takes at least its HBM bytes ÷ peak bandwidth and its FLOPs ÷ the peak of its math;
//!   a fused operator's bytes and FLOPs, and a merged GEMM's later parts', join the kernel
//!   before them, and that kernel obeys the same bound; a collective takes at least its link
//!   bytes ÷ the link's peak;
//! * **upper bound**: an operator above [`SLOW_LIMIT`] × its roofline plus its kernel's fixed
//!   costs names its cause ([`Timing::slow`]); one read from a measured kernel table above
//!   [`TABLE_SLOW_LIMIT`] × its roofline plus the launch floor ([`GRAPH_KERNEL_S`]) names the
//!   measured shapes around it ([`SlowCause::MeasuredSlowShape`]) or its kernel path's own cause
//!   (TensorRT-LLM's head groups beyond XQA, [`SlowCause::KvPerQueryHead`]).
//!
//! Under tensor, pipeline and expert parallelism the same bounds hold, and the zoom tree's step
//! (the layer stack plus the rest of the step) is the ledger's total, exactly.

use llm_ledger_core::clock::{GRAPH_KERNEL_S, TABLE_SLOW_LIMIT};
use llm_ledger_core::engine::{Clock, Engine};
use llm_ledger_core::hardware::builtin_gpus;
use llm_ledger_core::model::builtin_presets;
use llm_ledger_core::ops::{Op, OpKind};
use llm_ledger_core::parallel::for_each_gpu_op;
use llm_ledger_core::roofline::{Join, TimeModel};
use llm_ledger_core::roofline::{SlowCause, TimeSource, SLOW_LIMIT};
use llm_ledger_core::testing::scenario;
use llm_ledger_core::workload::{Contexts, Phase};
use llm_ledger_core::{Scenario, Timing};

/// Relative slack for floating-point sums.
const EPS: f64 = 1e-9;

/// The open kernel: its time and the floors of its work so far.
#[derive(Default)]
struct Kernel {
    label: String,
    time_s: f64,
    memory_floor_s: f64,
    compute_floor_s: f64,
}

impl Kernel {
    fn check(&self) -> Result<(), String> {
        let floor = self.memory_floor_s.max(self.compute_floor_s);
        if self.time_s < floor * (1.0 - EPS) {
            return Err(format!(
                "{}: kernel time {:e} s below its floor {:e} s (memory {:e}, compute {:e})",
                self.label, self.time_s, floor, self.memory_floor_s, self.compute_floor_s
            ));
        }
        Ok(())
    }
}

/// The bounds of one scenario; the first violation, named.
fn bounds(sc: &Scenario) -> Result<(), String> {
    let gpu = &sc.gpu;
    let bw = gpu.memory_bandwidth_bytes_per_s;
    let fixed_s = match sc.effective_clock() {
        c if c.is_roofline() => 0.0,
        c if c.engine.cuda_graphs() => llm_ledger_core::clock::GRAPH_KERNEL_S,
        _ => llm_ledger_core::clock::HOST_LAUNCH_S + llm_ledger_core::clock::GRAPH_KERNEL_S,
    };
    let mut kernel = Kernel::default();
    let mut err: Option<String> = None;
    let stage = 0;
    let decode = sc.workload.phase == Phase::Decode;
    let clock_measured = !sc.effective_clock().is_roofline();
    let model = llm_ledger_core::clock::Model::new(sc.effective_clock(), sc.workload.phase, gpu);
    for_each_gpu_op(sc, |op: &Op, _n, t: Timing| {
        if err.is_some() {
            return;
        }
        let name = op.kind.name();
        let fail = |what: String| Some(format!("{name}: {what}"));
        if op.kind.is_comm() {
            if let Some(g) = sc.parallel.link_of(op.kind, stage) {
                let floor = op.cost.link_bytes / g.link.bandwidth_bytes_per_s;
                if t.time_s < floor * (1.0 - EPS) {
                    err = fail(format!("link time {:e} s below {:e} s", t.time_s, floor));
                }
            }
            kernel = Kernel::default();
            return;
        }
        if op.kind == OpKind::HostStep {
            // Time under no roof: exactly the engine's host time per step, once.
            let want = sc.effective_clock().engine.host_step_s();
            if t.time_s != want || t.roofline_s != 0.0 || !clock_measured {
                err = fail(format!(
                    "host time {:e} s (roofline {:e} s) for an engine's {want:e} s",
                    t.time_s, t.roofline_s
                ));
            }
            kernel = Kernel::default();
            return;
        }
        let peak = gpu.peak(op.math).unwrap_or(gpu.peak_flops_per_s.vector);
        let (memory_floor_s, compute_floor_s) = (t.hbm_bytes / bw, op.cost.flops / peak);
        // An engine whose decode attention reads a GQA group's K and V once per query head moves
        // (heads ÷ KV heads − 1) × the counted KV reads more.
        let reread = match op.attention {
            Some(a)
                if sc.effective_clock().engine.kv_read_per_query_head(a.heads / a.kv_heads)
                    && decode
                    && clock_measured =>
            {
                op.cost.kv_read_bytes * (a.heads / a.kv_heads - 1.0)
            }
            _ => 0.0,
        };
        let allowed = op.cost.bytes() + reread;
        if t.hbm_bytes > allowed * (1.0 + EPS) || t.hbm_bytes < 0.0 {
            err = fail(format!("HBM bytes {} outside 0..={allowed}", t.hbm_bytes));
            return;
        }
        // A later part of a merged GEMM runs in the kernel its first part opened.
        let continues = matches!(model.join(op), Join::Part { first: false, .. });
        if continues {
            let floor = memory_floor_s.max(compute_floor_s);
            if t.time_s < floor * (1.0 - EPS) {
                err = fail(format!("part time {:e} s below its own floor {floor:e} s", t.time_s));
                return;
            }
        }
        if t.fused || continues {
            kernel.label = format!("{} + {name}", kernel.label);
            kernel.time_s += t.time_s;
            kernel.memory_floor_s += memory_floor_s;
            kernel.compute_floor_s += compute_floor_s;
        } else {
            if let Err(e) = kernel.check() {
                err = Some(e);
                return;
            }
            let floor = memory_floor_s.max(compute_floor_s);
            if t.time_s < floor * (1.0 - EPS) {
                err = fail(format!(
                    "time {:e} s below its floor {:e} s ({} B at {:e} B/s, {} FLOP at {:e})",
                    t.time_s, floor, t.hbm_bytes, bw, op.cost.flops, peak
                ));
                return;
            }
            if t.time_s > SLOW_LIMIT * t.roofline_s + fixed_s + 1e-15 && t.slow.is_none() {
                err = fail(format!(
                    "time {:e} s is {:.1}× its roofline {:e} s (+ {fixed_s:e} s fixed) with no cause",
                    t.time_s,
                    t.time_s / t.roofline_s,
                    t.roofline_s
                ));
                return;
            }
            // A measured kernel far above its roofline says why: the points it was read from
            // are that slow, or its engine's kernel path has a cause of its own.
            let table = matches!(t.source, Some(TimeSource::Table { .. }));
            let far = t.time_s > TABLE_SLOW_LIMIT * t.roofline_s + GRAPH_KERNEL_S;
            if table && far && !matches!(t.slow, Some(SlowCause::MeasuredSlowShape | SlowCause::KvPerQueryHead)) {
                err = fail(format!(
                    "table time {:e} s is {:.1}× its roofline {:e} s with cause {:?}",
                    t.time_s,
                    t.time_s / t.roofline_s,
                    t.roofline_s,
                    t.slow
                ));
                return;
            }
            kernel = Kernel { label: name.to_string(), time_s: t.time_s, memory_floor_s, compute_floor_s };
        }
    });
    err.map_or_else(|| kernel.check(), Err)
}

fn clocks() -> Vec<Clock> {
    let mut v = vec![Clock::ROOFLINE];
    v.extend(Engine::ALL.map(Clock::measured));
    v
}

#[test]
fn every_operator_of_every_preset_gpu_engine_and_workload_is_within_the_hardware_limits() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for preset in builtin_presets() {
        for gpu in builtin_gpus() {
            let base = scenario(&[("model", preset.name.as_str()), ("gpu", gpu.name.as_str())]);
            for clock in clocks() {
                for phase in [Phase::Decode, Phase::Prefill] {
                    for batch in [1, 16, 256, 4096] {
                        for ctx in [128, 8192] {
                            let mut w = base.workload.clone();
                            w.phase = phase;
                            w.contexts = Contexts::uniform(batch, ctx).unwrap();
                            let sc = Scenario { clock, ..base.with_workload(w) };
                            if let Err(e) = bounds(&sc) {
                                failures.push(format!(
                                    "{} on {} · {} {} · {phase:?} {batch} × {ctx}: {e}",
                                    preset.name,
                                    gpu.name,
                                    clock.model.name(),
                                    clock.engine.name()
                                ));
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 20_000, "{checked} scenarios");
    assert!(failures.is_empty(), "{} of {checked} scenarios out of bounds:\n{}", failures.len(), failures.join("\n"));
}

/// Every engine version measured on a GPU other than its default: the physical bounds (and the
/// upper side's named causes) hold on every older table too.
#[test]
fn every_operator_at_every_measured_engine_version_is_within_the_hardware_limits() {
    use llm_ledger_core::kernels::{EngineVersion, KernelGpu, Tables};
    let (mut checked, mut failures) = (0, Vec::new());
    for gpu in builtin_gpus() {
        let Some(kgpu) = KernelGpu::for_gpu(gpu) else { continue };
        for &engine in kgpu.engines() {
            let default = Tables::newest(kgpu, engine).version;
            for version in Tables::held_versions(kgpu, engine).into_iter().filter(|v| *v != default) {
                let family = match engine {
                    llm_ledger_core::kernels::Engine::Trtllm => Engine::Trtllm,
                    llm_ledger_core::kernels::Engine::Vllm => Engine::Vllm,
                    llm_ledger_core::kernels::Engine::Sglang => Engine::Sglang,
                };
                let clock = Clock { version: EngineVersion::parse(version), ..Clock::measured(family) };
                for preset in builtin_presets() {
                    let base = scenario(&[("model", preset.name.as_str()), ("gpu", gpu.name.as_str())]);
                    for (phase, batch, ctx) in [(Phase::Decode, 16, 2048), (Phase::Prefill, 4, 2048)] {
                        let mut w = base.workload.clone();
                        w.phase = phase;
                        w.contexts = Contexts::uniform(batch, ctx).unwrap();
                        let sc = Scenario { clock, ..base.with_workload(w) };
                        if let Err(e) = bounds(&sc) {
                            failures.push(format!(
                                "{} on {} · {engine}@{version} · {phase:?} {batch} × {ctx}: {e}",
                                preset.name, gpu.name
                            ));
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 2_000, "{checked} scenarios");
    assert!(failures.is_empty(), "{} of {checked} scenarios out of bounds:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn the_bounds_hold_under_tensor_pipeline_and_expert_parallelism() {
    let layouts: &[&[(&str, &str)]] = &[
        &[("tp", "2")],
        &[("tp", "8")],
        &[("pp", "2")],
        &[("tp", "2"), ("pp", "2")],
        &[("ep", "2")],
        &[("tp", "4"), ("ep", "2")],
    ];
    let mut failures = Vec::new();
    for model in ["llama-3-8b", "llama-3.1-70b", "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-20b"] {
        for gpu in ["h100-sxm", "a100-80gb-sxm", "b200", "l40s"] {
            for layout in layouts {
                let mut pairs = vec![("model", model), ("gpu", gpu)];
                pairs.extend_from_slice(layout);
                let fields: serde_json::Map<String, serde_json::Value> =
                    pairs.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string()))).collect();
                let req: llm_ledger_core::ScenarioRequest =
                    serde_json::from_value(serde_json::Value::Object(fields)).unwrap();
                // Layouts a model cannot take (ep on a dense model) are refused by the resolver.
                let Ok(base) = req.resolve(&llm_ledger_core::Catalog::builtin()) else { continue };
                for clock in clocks() {
                    for (phase, batch) in [(Phase::Decode, 1), (Phase::Decode, 256), (Phase::Prefill, 16)] {
                        let mut w = base.workload.clone();
                        w.phase = phase;
                        w.contexts = Contexts::uniform(batch, 2048).unwrap();
                        let sc = Scenario { clock, ..base.with_workload(w) };
                        if let Err(e) = bounds(&sc) {
                            failures.push(format!("{pairs:?} {} {phase:?} {batch}: {e}", clock.engine.name()));
                        }
                        // The zoom tree's step (model + rest) is the ledger, exactly.
                        if !llm_ledger_core::zoom::ZoomTree::build(&sc).step.exact {
                            failures
                                .push(format!("{pairs:?} {} {phase:?} {batch}: zoom ≠ ledger", clock.engine.name()));
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
