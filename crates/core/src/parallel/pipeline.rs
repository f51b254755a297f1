//! The operators one GPU of a deployment runs in a step, with their times, and the step time of
//! the pipeline.
//!
//! A batch of `B` sequences is split into `M` micro-batches (default `M = min(P, B)` for `P`
//! stages) of `⌈B/M⌉` or `⌊B/M⌋` sequences; a mix of contexts is dealt to them round-robin.
//! Stage `s` runs its layers for each micro-batch, the first stage also the embedding, the last
//! also the head; every stage but the last sends the micro-batch's activations (`T × hidden`
//! values at the activation precision, per GPU of its group) to the next. With `t_s(m)` the time
//! of stage `s` on micro-batch `m`, sends included, and `b_s = Σ_m t_s(m)` its busy time:
//!
//! * **decode**, steady state (each micro-batch gets one token per sequence per cycle): the cycle
//!   is `T = max(max_s b_s, max_m Σ_s t_s(m))`: no stage does more than its work per cycle, and no
//!   micro-batch gets round the pipeline faster than its path. With `M = P` micro-batches over
//!   balanced stages every stage is busy all the time, so pipeline parallelism costs no idle time
//!   in decode, but every micro-batch re-reads the stage's weights, and a token's time is the
//!   whole cycle: TPOT = `T`. With `M < P` (fewer sequences than stages) stages idle `(P − M)/P`.
//! * **prefill** (one flush of the batch, GPipe): `T = Σ_s t_s(m₁) + Σ_{m ≠ m₁} max_s t_s(m)`
//!   with `m₁` the micro-batch with the longest path; for `M` equal micro-batches over `P` equal
//!   stages `(M + P − 1)·t`, idle `(P − 1)/(M + P − 1)` of the time.
//!
//! The GPU shown is one of the busiest stage: its operators over all micro-batches (a row's `n`
//! counts layer × micro-batch instances), its send, and `pipeline_wait = T − b_s`, the time it
//! waits for the others, so its rows add up to the step time. Tokens per step are the batch's.

use crate::clock::{Model, Profiled};
use crate::cost::Cost;
use crate::model::LayerSpec;
use crate::ops::{Op, OpBuilder, OpKind};
use crate::precision::MathFormat;
use crate::roofline::{KernelTimer, TimeModel, Timing};
use crate::scenario::Scenario;
use crate::workload::{ContextBucket, Contexts, Phase, Workload};
use serde::Serialize;

/// How the pipeline spent a step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PipelineTiming {
    /// The stage whose GPU the ledger shows (the busiest), from 0.
    pub stage: usize,
    /// Micro-batches.
    pub micro_batches: u64,
    /// Busy time of that stage per step, seconds.
    pub busy_s: f64,
    /// Step time of the pipeline, seconds (the decode cycle or the prefill flush).
    pub step_s: f64,
    /// Fraction of GPU time idle across the stages: `1 − Σ_s b_s ÷ (P · T)`.
    pub idle_fraction: f64,
}

/// Time of an operator, the one entry point for every operator time in the crate: its
/// [`TimeModel`] time (the roofline) through `timer`, which charges an operator fused into the
/// previous kernel its marginal time); a collective's time on its group's link. The pipeline's
/// send and wait are timed by [`for_each_gpu_op`], which knows the stage.
pub fn op_timing<M: TimeModel>(sc: &Scenario, timer: &mut KernelTimer<M>, op: &Op) -> Timing {
    match sc.parallel.collective(op.kind) {
        Some((l, hops)) => timer.link(
            sc.parallel.collective_call(op.kind, op.cost.link_bytes).as_ref(),
            sc.parallel.link_time_s(&l.link, op.cost.link_bytes, hops),
        ),
        None => timer.next(op, &sc.gpu, sc.efficiency),
    }
}

/// The kernel timer of a scenario: its clock's time model ([`crate::clock::Model`]: the roofline,
/// or the measured model of its engine, with the scenario's calibration [`crate::clock::Profile`]) with
/// no kernel open.
pub fn kernel_timer(sc: &Scenario) -> KernelTimer<Profiled> {
    let model = Model::new(sc.effective_clock(), sc.workload.phase, &sc.gpu);
    KernelTimer::with_model(Profiled { model, profile: sc.profile })
}

/// Where an operator of one GPU's step sits (what the zoom tree needs to place it).
#[derive(Debug, Clone, Copy)]
pub enum Site<'a> {
    /// Before the layer stack: the embedding and, under tensor parallelism, its all-reduce.
    Embedding,
    /// In a decoder layer of this shape.
    Layer(&'a LayerSpec),
    /// After the stack: the final norm, the LM head and the gather of the logits, or, on a
    /// pipeline stage before the last, the send to the next stage.
    Head,
    /// The time the GPU waits for the other pipeline stages.
    Wait,
    /// The time the GPU waits for the engine's host work between steps.
    Host,
}

/// One operator of one GPU's step, as [`for_each_gpu_site`] hands it out.
#[derive(Debug, Clone, Copy)]
pub struct GpuOp<'a> {
    /// The scenario the operator was built for: the step, or one micro-batch of it with pipeline
    /// stages.
    pub scenario: &'a Scenario,
    /// Where it sits.
    pub site: Site<'a>,
    /// The operator (one instance).
    pub op: &'a Op,
    /// Layers of this shape it runs in on this GPU (1 outside the layers).
    pub layers: u64,
    /// Micro-batches of this size the GPU runs it for (1 without pipeline stages).
    pub runs: u64,
    /// Time of one instance.
    pub one: Timing,
}

/// Visit the operators of one GPU of the busiest pipeline stage with their multiplicity and the
/// time of one instance (module docs). On one stage this is [`crate::ops::for_each_op`] with
/// [`op_timing`], and no allocation; with stages it returns how the pipeline spent the step.
pub fn for_each_gpu_op(sc: &Scenario, mut f: impl FnMut(&Op, u64, Timing)) -> Option<PipelineTiming> {
    for_each_gpu_site(sc, |g| f(g.op, g.layers * g.runs, g.one))
}

/// [`for_each_gpu_op`], with where each operator sits, how many layers and micro-batches its
/// multiplicity is made of, and the scenario it was built for: the ledger and the zoom tree
/// visit the same operators in the same order through here, so they cannot disagree.
pub fn for_each_gpu_site(sc: &Scenario, mut f: impl FnMut(GpuOp<'_>)) -> Option<PipelineTiming> {
    if sc.parallel.pp == 1 {
        visit_single_stage(sc, &mut f);
        return None;
    }
    let mbs = micro_batches(sc);
    let p = sc.parallel.stages.len();
    let mut t = vec![vec![0.0; mbs.len()]; p];
    for (j, (mb, _)) in mbs.iter().enumerate() {
        for (s, ts) in t.iter_mut().enumerate() {
            visit_stage(mb, s, &mut |g| ts[j] += g.one.time_s * g.layers as f64);
        }
    }
    let busy: Vec<f64> = t.iter().map(|ts| ts.iter().zip(&mbs).map(|(x, (_, c))| x * *c as f64).sum()).collect();
    let path = |j: usize| t.iter().map(|ts| ts[j]).sum::<f64>();
    let bottleneck = |j: usize| t.iter().map(|ts| ts[j]).fold(0.0, f64::max);
    let longest = (0..mbs.len()).max_by(|a, b| path(*a).total_cmp(&path(*b))).unwrap_or(0);
    let step = match sc.workload.phase {
        Phase::Decode => busy.iter().copied().fold(path(longest), f64::max),
        Phase::Prefill => {
            let rest: f64 = mbs.iter().enumerate().map(|(j, (_, c))| *c as f64 * bottleneck(j)).sum();
            path(longest) + rest - bottleneck(longest)
        }
    };
    let stage = (0..p).max_by(|a, b| busy[*a].total_cmp(&busy[*b])).unwrap_or(0);
    for (mb, c) in &mbs {
        visit_stage(mb, stage, &mut |g| f(GpuOp { runs: *c, ..g }));
    }
    let wait = (step - busy[stage]).max(0.0);
    let wait_op = Op::plain(OpKind::PipelineWait, Cost::ZERO, MathFormat::Vector);
    f(GpuOp { scenario: sc, site: Site::Wait, op: &wait_op, layers: 1, runs: 1, one: Timing::wait(wait) });
    let host_s = kernel_timer(sc).host_step_s();
    host_step(sc, host_s, &mut f);
    Some(PipelineTiming {
        stage,
        micro_batches: mbs.iter().map(|(_, c)| c).sum(),
        busy_s: busy[stage],
        step_s: step + host_s,
        idle_fraction: 1.0 - busy.iter().sum::<f64>() / (p as f64 * step),
    })
}

/// The operators of a single-stage step (`pp = 1`) in order, each timed through one kernel
/// timer, then the host row.
fn visit_single_stage(sc: &Scenario, f: &mut impl FnMut(GpuOp<'_>)) {
    let mut timer = kernel_timer(sc);
    // One GPU: no communication (the sweep's hot path).
    let single = sc.parallel.is_single();
    let mut time = |op: &Op| {
        if single {
            timer.next(op, &sc.gpu, sc.efficiency)
        } else {
            op_timing(sc, &mut timer, op)
        }
    };
    let b = OpBuilder::new(sc);
    let mut emit = |site: Site<'_>, op: &Op, layers: u64| {
        let one = time(op);
        f(GpuOp { scenario: sc, site, op, layers, runs: 1, one });
    };
    b.embedding(&mut |op| emit(Site::Embedding, &op, 1));
    for (layer, count) in sc.model.layer_groups() {
        b.layer(layer, &mut |op| emit(Site::Layer(layer), &op, count));
    }
    b.head(&mut |op| emit(Site::Head, &op, 1));
    host_step(sc, timer.host_step_s(), f);
}

/// The operators of a single-stage step (`pp = 1`) that read the cached context
/// ([`crate::ops::reads_context`]), in the order [`for_each_gpu_op`] hands them out, with their
/// layers and the same times: each opens a kernel of its own or joins the one the operator
/// before it in this selection opened (the softmax inside FlashAttention), so the operators the
/// full step runs between them do not change their times. `None` with pipeline stages (nothing
/// visited).
pub fn for_each_context_op(sc: &Scenario, mut f: impl FnMut(&Op, u64, Timing)) -> Option<()> {
    if sc.parallel.pp != 1 {
        return None;
    }
    let mut timer = kernel_timer(sc);
    let single = sc.parallel.is_single();
    let b = OpBuilder::new(sc);
    for (layer, count) in sc.model.layer_groups() {
        b.layer_context_ops(layer, &mut |op| {
            let one = if single { timer.next(&op, &sc.gpu, sc.efficiency) } else { op_timing(sc, &mut timer, &op) };
            f(&op, count, one);
        });
    }
    Some(())
}

/// The step's host row: `host_s` seconds that the GPU waits for the engine's host work, once per
/// step (nothing when the engine overlaps it, `host_s` = 0).
fn host_step(sc: &Scenario, host_s: f64, f: &mut impl FnMut(GpuOp<'_>)) {
    if host_s > 0.0 {
        let op = Op::plain(OpKind::HostStep, Cost::ZERO, MathFormat::Vector);
        f(GpuOp { scenario: sc, site: Site::Host, op: &op, layers: 1, runs: 1, one: Timing::host(host_s) });
    }
}

/// The operators of one GPU of stage `s` for the step `sc` (one micro-batch), with the time of
/// one instance (`runs` = 1).
fn visit_stage(sc: &Scenario, s: usize, f: &mut dyn FnMut(GpuOp<'_>)) {
    let b = OpBuilder::new(sc);
    let par = &sc.parallel;
    let stage = &par.stages[s];
    let mut timer = kernel_timer(sc);
    let mut emit = |site: Site<'_>, op: Op, layers: u64| {
        let one = op_timing(sc, &mut timer, &op);
        f(GpuOp { scenario: sc, site, op: &op, layers, runs: 1, one });
    };
    if s == 0 {
        b.embedding(&mut |op| emit(Site::Embedding, op, 1));
    }
    for &(i, n) in &stage.groups {
        let layer = &sc.model.layers()[i];
        b.layer(layer, &mut |op| emit(Site::Layer(layer), op, n));
    }
    match &stage.send {
        None => b.head(&mut |op| emit(Site::Head, op, 1)),
        Some(link) => {
            let bytes = sc.workload.step_tokens() / par.ep as f64
                * sc.model.hidden_size as f64
                * sc.workload.activations.bytes();
            let op = Op::plain(OpKind::PpSend, Cost { link_bytes: bytes, ..Cost::ZERO }, MathFormat::Vector);
            let one = timer.link(None, par.link_time_s(&link.link, bytes, 1.0));
            f(GpuOp { scenario: sc, site: Site::Head, op: &op, layers: 1, runs: 1, one });
        }
    }
}

/// The distinct micro-batches of the step with how many of each (module docs).
pub(crate) fn micro_batches(sc: &Scenario) -> Vec<(Scenario, u64)> {
    let contexts = &sc.workload.contexts;
    let m = sc.parallel.micro_batches_for(contexts.batch());
    let at = |c: Contexts| sc.with_workload(Workload { contexts: c, ..sc.workload.clone() });
    match contexts {
        Contexts::Uniform { batch, tokens } => {
            let (q, r) = (batch / m, batch % m);
            [(q + 1, r), (q, m - r)]
                .into_iter()
                .filter(|(size, count)| *size > 0 && *count > 0)
                .map(|(size, count)| (at(Contexts::Uniform { batch: size, tokens: *tokens }), count))
                .collect()
        }
        Contexts::Mix(buckets) => {
            // Deal the sequences, in order of length, to micro-batches 0, 1, …, M−1, 0, 1, …
            let mut parts: Vec<Vec<ContextBucket>> = vec![Vec::new(); m as usize];
            let mut next = 0u64;
            for b in buckets.iter() {
                let (per, rem) = (b.count / m, b.count % m);
                for (j, part) in parts.iter_mut().enumerate() {
                    let extra = u64::from((j as u64 + m - next) % m < rem);
                    if per + extra > 0 {
                        part.push(ContextBucket { tokens: b.tokens, count: per + extra });
                    }
                }
                next = (next + rem) % m;
            }
            let mut out: Vec<(Contexts, u64)> = Vec::new();
            for c in parts.into_iter().filter_map(|p| Contexts::mix(p).ok()) {
                match out.iter_mut().find(|(x, _)| *x == c) {
                    Some((_, n)) => *n += 1,
                    None => out.push((c, 1)),
                }
            }
            out.into_iter().map(|(c, n)| (at(c), n)).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::scenario;

    #[test]
    fn micro_batches_split_the_batch_evenly() {
        let s = scenario(&[("model", "llama-3.1-70b"), ("pp", "2"), ("batch", "5")]);
        let mbs = micro_batches(&s);
        let sizes: Vec<(u64, u64)> = mbs.iter().map(|(m, c)| (m.workload.contexts.batch(), *c)).collect();
        assert_eq!(sizes, [(3, 1), (2, 1)]);
        let s = scenario(&[("model", "llama-3.1-70b"), ("pp", "4"), ("batch", "2")]);
        let sizes: Vec<(u64, u64)> = micro_batches(&s).iter().map(|(m, c)| (m.workload.contexts.batch(), *c)).collect();
        assert_eq!(sizes, [(1, 2)], "at most one micro-batch per sequence");
        let s = scenario(&[("model", "llama-3.1-70b"), ("pp", "2"), ("contexts", "100x3,200x2")]);
        let mbs = micro_batches(&s);
        let total: f64 = mbs.iter().map(|(m, c)| m.workload.contexts.total_tokens() * *c as f64).sum();
        assert_eq!(total, 700.0);
        assert_eq!(mbs.iter().map(|(m, c)| m.workload.contexts.batch() * c).sum::<u64>(), 5);
    }
}
