//! Sweeps: the same scenario over a grid of batch sizes and context lengths, every other input
//! held fixed. Points past the memory wall are evaluated and marked (`fits = false`), not dropped.
//!
//! An [`Axis`] is a comma-separated list of items, each a value or a range (all inclusive):
//!
//! | item | values |
//! |---|---|
//! | `8` | 8 |
//! | `1..256` (or `1..=256`) | 1, 2, 3, …, 256 |
//! | `0..8192:1024` | 0, 1024, 2048, …, 8192 (step 1024) |
//! | `1..256*2` | 1, 2, 4, …, 256 (each value × 2; stops at the last value ≤ the end) |
//!
//! An axis is a few numbers, not a list of values: a 10-million-point range takes a few bytes, and
//! [`Sweep::run`] evaluates points in chunks of [`CHUNK`] in parallel (rayon) and hands them out
//! in order, so a sweep of any length runs in bounded memory. Points are ordered context-major:
//! every batch of the first context, then of the next.

use crate::cost::Cost;
use crate::error::range_words;
use crate::error::{Error, Result};
use crate::ledger::{summarise_each, StepParts};
use crate::limits::{MAX_BATCH, MAX_CONTEXT};
use crate::memory::{Footprint, GpuWeights};
use crate::ops::OpKind;
use crate::roofline::Timing;
use crate::scenario::{parse_u64, Scenario};
use crate::workload::{Contexts, Phase};
use rayon::prelude::*;
use serde::Serialize;
use std::ops::ControlFlow;

/// Most points one sweep may have (10⁸; a sweep streams, so this bounds run time, not memory),
/// counted over every axis, series included ([`grid_points`]).
pub const MAX_SWEEP_POINTS: u64 = 100_000_000;

/// The points of a grid of `axes` (each its name and its number of values: the series axes such as
/// `gpu`, `weights` and `kv`, then `batch` and `ctx`), or an error naming every axis when the
/// product passes [`MAX_SWEEP_POINTS`]: the one cap on the size of a sweep.
pub fn grid_points(axes: &[(&str, u64)]) -> Result<u64> {
    let product = axes.iter().fold(1u128, |p, (_, n)| p.saturating_mul(u128::from(*n)));
    match u64::try_from(product) {
        Ok(points) if points <= MAX_SWEEP_POINTS => Ok(points),
        _ => {
            let names: Vec<&str> = axes.iter().map(|(name, _)| *name).collect();
            let sizes: Vec<String> = axes.iter().map(|(_, n)| n.to_string()).collect();
            Err(Error::invalid(
                names.join(" × "),
                format!("{} = {product} points", sizes.join(" × ")),
                format!("at most {MAX_SWEEP_POINTS} points in all"),
            ))
        }
    }
}

/// Most comma-separated items in one axis.
pub const MAX_AXIS_ITEMS: usize = 4096;

/// Points evaluated per parallel chunk.
pub const CHUNK: usize = 4096;

/// Fewest points a chunk hands to the thread pool: a smaller one (a one-point sweep, a short
/// batch list) is evaluated on the calling thread, where waking the pool would cost more than the
/// points themselves (a few microseconds each).
pub const PARALLEL_MIN_POINTS: usize = 32;

/// One item of an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Segment {
    /// start, start + step, …, ≤ end.
    Step { start: u64, end: u64, step: u64 },
    /// start, start·factor, …, ≤ end.
    Geometric { start: u64, end: u64, factor: u64 },
}

impl Segment {
    fn len(&self) -> u64 {
        match *self {
            Segment::Step { start, end, step } => (end - start) / step + 1,
            Segment::Geometric { start, end, factor } => {
                let (mut v, mut n) = (start, 0);
                while v <= end {
                    n += 1;
                    match v.checked_mul(factor) {
                        Some(x) => v = x,
                        None => break,
                    }
                }
                n
            }
        }
    }

    fn first(&self) -> u64 {
        match *self {
            Segment::Step { start, .. } | Segment::Geometric { start, .. } => start,
        }
    }

    /// The last value: the end for a unit step, else computed without walking the range.
    fn last(&self) -> u64 {
        match *self {
            Segment::Step { start, end, step } => start + (end - start) / step * step,
            Segment::Geometric { .. } => self.iter().last().unwrap_or(0),
        }
    }

    fn iter(self) -> impl Iterator<Item = u64> {
        let mut next = Some(self.first());
        std::iter::from_fn(move || {
            let v = next?;
            next = match self {
                Segment::Step { end, step, .. } => v.checked_add(step).filter(|x| *x <= end),
                Segment::Geometric { end, factor, .. } => v.checked_mul(factor).filter(|x| *x <= end),
            };
            Some(v)
        })
    }
}

/// Values of one swept input (lazy; see the module docs for the syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    segments: Vec<Segment>,
    len: u64,
}

impl Axis {
    /// One value.
    pub fn single(v: u64) -> Axis {
        Axis { segments: vec![Segment::Step { start: v, end: v, step: 1 }], len: 1 }
    }

    /// Parse `text` for `field`; every value must lie in `min..=max`.
    pub fn parse(field: &str, text: &str, min: u64, max: u64) -> Result<Axis> {
        let syntax = "a value, a list `1,8,32`, or ranges `1..256`, `0..8192:1024`, `1..256*2`";
        let items: Vec<&str> = text.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
        if items.is_empty() {
            return Err(Error::invalid(field, format!("{text:?}"), syntax));
        }
        if items.len() > MAX_AXIS_ITEMS {
            return Err(Error::invalid(field, format!("{} items", items.len()), format!("at most {MAX_AXIS_ITEMS}")));
        }
        let in_range = |v: u64| {
            if (min..=max).contains(&v) {
                Ok(v)
            } else {
                Err(Error::invalid(field, v, format!("values {}", range_words(min, max))))
            }
        };
        let mut segments = Vec::with_capacity(items.len());
        let mut len = 0u64;
        for item in items {
            let seg = match item.split_once("..") {
                None => {
                    let v = in_range(parse_u64(field, item)?)?;
                    Segment::Step { start: v, end: v, step: 1 }
                }
                Some((a, rest)) => {
                    let rest = rest.strip_prefix('=').unwrap_or(rest);
                    let (b, step, geometric) = match (rest.split_once(':'), rest.split_once('*')) {
                        (Some((b, s)), None) => (b, Some(s), false),
                        (None, Some((b, f))) => (b, Some(f), true),
                        (None, None) => (rest, None, false),
                        _ => return Err(Error::invalid(field, format!("{item:?}"), syntax)),
                    };
                    let start = in_range(parse_u64(field, a)?)?;
                    let end = in_range(parse_u64(field, b)?)?;
                    if start > end {
                        return Err(Error::invalid(field, format!("{item:?}"), "a range a..b with a ≤ b"));
                    }
                    let by = step.map(|s| parse_u64(field, s)).transpose()?;
                    if geometric {
                        let factor = by.unwrap_or(2);
                        if factor < 2 {
                            return Err(Error::invalid(field, format!("{item:?}"), "a factor of at least 2 after `*`"));
                        }
                        if start == 0 {
                            return Err(Error::invalid(
                                field,
                                format!("{item:?}"),
                                "a geometric range starting at 1 or more",
                            ));
                        }
                        Segment::Geometric { start, end, factor }
                    } else {
                        let step = by.unwrap_or(1);
                        if step == 0 {
                            return Err(Error::invalid(field, format!("{item:?}"), "a step of at least 1 after `:`"));
                        }
                        Segment::Step { start, end, step }
                    }
                }
            };
            len = len.saturating_add(seg.len());
            segments.push(seg);
        }
        if len > MAX_SWEEP_POINTS {
            return Err(Error::invalid(field, format!("{len} points"), format!("at most {MAX_SWEEP_POINTS} points")));
        }
        Ok(Axis { segments, len })
    }

    /// Smallest value.
    pub fn min(&self) -> u64 {
        self.segments.iter().map(|s| s.first()).min().unwrap_or(0)
    }

    /// Largest value.
    pub fn max(&self) -> u64 {
        self.segments.iter().map(Segment::last).max().unwrap_or(0)
    }

    /// Number of values.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the axis has no values (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The values in order, generated lazily.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.segments.iter().flat_map(|s| s.iter())
    }

    /// The values at most `x`, in order: each range walked only up to `x`, so a long range past
    /// `x` costs nothing.
    pub fn iter_at_most(&self, x: u64) -> impl Iterator<Item = u64> + '_ {
        self.segments.iter().flat_map(move |s| s.iter().take_while(move |v| *v <= x))
    }

    /// How many values are at most `x`, without walking the ranges.
    pub fn count_at_most(&self, x: u64) -> u64 {
        self.segments
            .iter()
            .map(|s| match *s {
                Segment::Step { start, .. } if start > x => 0,
                Segment::Step { start, end, step } => (end.min(x) - start) / step + 1,
                Segment::Geometric { .. } => s.iter().take_while(|v| *v <= x).count() as u64,
            })
            .fold(0u64, u64::saturating_add)
    }
}

/// The refusal of a fixed mix of contexts (`contexts`, or a histogram file) in a sweep, which varies
/// batch and context itself.
pub fn mix_refused() -> Error {
    Error::invalid(
        "contexts",
        "a fixed mix of contexts",
        "a sweep varies `batch` and `ctx`, as lists and ranges; a fixed mix is one `ledger` or `kv` step",
    )
}

/// One evaluated point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SweepPoint {
    /// Sequences.
    pub batch: u64,
    /// Tokens per sequence (cached in decode, prompt in prefill).
    pub ctx: u64,
    /// Step time, seconds.
    pub step_time_s: f64,
    /// Tokens per second (decode: generated; prefill: processed).
    pub tokens_per_s: f64,
    /// FLOPs of the step.
    pub flops: f64,
    /// HBM bytes of the step.
    pub bytes: f64,
    /// Weight bytes read in the step (grows with batch for MoE: the union of experts touched).
    pub weight_bytes: f64,
    /// KV-cache bytes read and written in the step.
    pub kv_bytes: f64,
    /// FLOPs ÷ bytes of the whole step.
    pub intensity: f64,
    /// The operator kind with the largest time.
    pub largest_op: OpKind,
    /// Its time, seconds.
    pub largest_op_time_s: f64,
    /// Weights + KV cache + workspace, bytes (see [`crate::memory`]).
    pub memory_bytes: f64,
    /// KV cache after the step, bytes.
    pub kv_cache_bytes: f64,
    /// Whether the memory fits the GPU after the reserve, on this step's own basis
    /// ([`crate::memory::FitBasis::Step`]).
    pub fits: bool,
}

/// A planned sweep.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// Keys the decode steps kept per thread ([`StepParts`]).
    id: u64,
    base: Scenario,
    batch: Axis,
    ctx: Axis,
    weights: GpuWeights,
    reserve_bytes: f64,
}

/// Slots for per-kind times (more than there are operator kinds).
const KIND_SLOTS: usize = OpKind::ALL.len();

/// Batches whose decode steps a thread keeps ([`StepParts`]) before it starts again.
const KEPT_BATCHES: usize = 4096;

thread_local! {
    /// Per sweep ([`Sweep`]'s id) and batch: the decode step's operators as the ledger sums them.
    static SWEEP_PARTS: std::cell::RefCell<rustc_hash::FxHashMap<(u64, u64), StepParts>> =
        std::cell::RefCell::new(rustc_hash::FxHashMap::default());
}

/// A new sweep's id (its kept parts are its own).
fn next_sweep_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Sweep {
    /// Plan a sweep of `base` over `batch` × `ctx` (the base's own contexts are replaced).
    pub fn new(base: Scenario, batch: Axis, ctx: Axis, reserve_bytes: f64) -> Result<Sweep> {
        grid_points(&[("batch", batch.len()), ("ctx", ctx.len())])?;
        let check = |field: &str, axis: &Axis, min: u64, max: u64| {
            if axis.min() < min || axis.max() > max {
                let v = if axis.min() < min { axis.min() } else { axis.max() };
                return Err(Error::invalid(field, v, format!("values {}", range_words(min, max))));
            }
            Ok(())
        };
        check("batch", &batch, 1, MAX_BATCH)?;
        let min_ctx = if base.workload.phase == Phase::Prefill { 1 } else { 0 };
        check("ctx", &ctx, min_ctx, MAX_CONTEXT)?;
        let weights = GpuWeights::of(&base);
        Ok(Sweep { id: next_sweep_id(), base, batch, ctx, weights, reserve_bytes })
    }

    /// Number of points.
    pub fn len(&self) -> u64 {
        self.batch.len() * self.ctx.len()
    }

    /// The grid's axes, for [`grid_points`]: `batch` and `ctx` with their numbers of values.
    pub fn axes(&self) -> [(&'static str, u64); 2] {
        [("batch", self.batch.len()), ("ctx", self.ctx.len())]
    }

    /// Whether there are no points (never, once planned).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Evaluate one point: [`summarise_each`] (no allocation) plus the memory footprint.
    pub fn evaluate(&self, batch: u64, ctx: u64) -> SweepPoint {
        self.evaluate_at(&mut self.base.clone(), batch, ctx)
    }

    /// [`Sweep::evaluate`] on `sc`, a copy of the base scenario whose contexts it overwrites:
    /// the sweep's loop hands each of its tasks one copy for all its points, so the threads never
    /// touch the shared reference counts of the model, GPU and layout (a clone per point had them
    /// contend on those).
    fn evaluate_at(&self, sc: &mut Scenario, batch: u64, ctx: u64) -> SweepPoint {
        sc.workload.contexts = Contexts::Uniform { batch, tokens: ctx };
        let sc = &*sc;
        let mut times = [0.0f64; KIND_SLOTS];
        let mut kinds = [None; KIND_SLOTS];
        let mut each = |kind: OpKind, _: &Cost, timing: &Timing| {
            let i = kind as usize;
            times[i] += timing.time_s;
            kinds[i] = Some(kind);
        };
        let s = if sc.workload.phase == Phase::Decode && self.ctx.len() > 1 {
            // A decode step's operators but attention's core are a function of the batch: kept
            // per batch on this thread ([`StepParts`]) for the sweep's other contexts.
            SWEEP_PARTS.with(|kept| {
                let mut kept = kept.borrow_mut();
                let key = (self.id, batch);
                if let Some(s) = kept.get_mut(&key).and_then(|p| p.summarise_each(sc, &mut each)) {
                    return s;
                }
                match StepParts::new(sc, &mut each) {
                    Some((parts, s)) => {
                        if kept.len() >= KEPT_BATCHES {
                            kept.clear();
                        }
                        kept.insert(key, parts);
                        s
                    }
                    None => summarise_each(sc, each),
                }
            })
        } else {
            summarise_each(sc, each)
        };
        let (largest, time) = (0..KIND_SLOTS)
            .filter_map(|i| kinds[i].map(|k| (k, times[i])))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((OpKind::LmHead, 0.0));
        let fp = Footprint::with_weights(sc, &self.weights, self.reserve_bytes);
        let bytes = s.cost.bytes();
        SweepPoint {
            batch,
            ctx,
            step_time_s: s.step_time_s(),
            tokens_per_s: s.tokens_per_s(),
            flops: s.cost.flops,
            bytes,
            weight_bytes: s.cost.weight_bytes,
            kv_bytes: s.cost.kv_bytes(),
            intensity: if bytes > 0.0 { s.cost.flops / bytes } else { f64::INFINITY },
            largest_op: largest,
            largest_op_time_s: time,
            memory_bytes: fp.memory_bytes,
            kv_cache_bytes: fp.kv_cache_bytes,
            fits: fp.fits,
        }
    }

    /// Evaluate every point, in order, handing each to `emit`; stop early when it breaks.
    /// Chunks of [`CHUNK`] points are evaluated in parallel (one of fewer than
    /// [`PARALLEL_MIN_POINTS`] on the calling thread); memory stays bounded by one chunk.
    pub fn run(&self, mut emit: impl FnMut(&SweepPoint) -> ControlFlow<()>) {
        self.run_mapped(|_, _| (), |p, ()| emit(p));
    }

    /// [`Sweep::run`] with `map` applied to each point (its index in the grid and the point:
    /// formatting its row, say) on the threads that evaluate it, so work per point other than
    /// the ledger is parallel too; `emit` gets each point and what `map` made of it, in grid order.
    pub fn run_mapped<T: Send>(
        &self,
        map: impl Fn(u64, &SweepPoint) -> T + Sync,
        mut emit: impl FnMut(&SweepPoint, T) -> ControlFlow<()>,
    ) {
        self.chunked(
            |i, p| {
                let mapped = map(i, &p);
                (p, mapped)
            },
            |_, done| {
                for (p, mapped) in done.drain(..) {
                    emit(&p, mapped)?;
                }
                ControlFlow::Continue(())
            },
        );
    }

    /// Evaluate every point, handing `emit` one chunk at a time, in grid order: the grid index
    /// of the chunk's first point and its points (at most [`CHUNK`]), so a caller that stores
    /// the points (a column per field) can spread that work over the cores too. Stops early
    /// when `emit` breaks.
    pub fn run_chunks(&self, mut emit: impl FnMut(u64, &[SweepPoint]) -> ControlFlow<()>) {
        self.chunked(|_, p| p, |first, done| emit(first, done));
    }

    /// The loop under [`Sweep::run_mapped`] and [`Sweep::run_chunks`]: each chunk of the grid
    /// evaluated (`each` of the grid index and the point, in parallel above
    /// [`PARALLEL_MIN_POINTS`] points) into one buffer, which `emit` gets with the chunk's first
    /// index.
    fn chunked<U: Send>(
        &self,
        each: impl Fn(u64, SweepPoint) -> U + Sync,
        mut emit: impl FnMut(u64, &mut Vec<U>) -> ControlFlow<()>,
    ) {
        let mut grid = self.ctx.iter().flat_map(|c| self.batch.iter().map(move |b| (b, c))).zip(0u64..);
        // Buffers of one chunk, or of the whole sweep where that is smaller (a one-point sweep
        // allocates one point, not a chunk's half megabyte).
        let capacity = usize::try_from(self.len()).map_or(CHUNK, |n| n.min(CHUNK));
        let mut pending: Vec<((u64, u64), u64)> = Vec::with_capacity(capacity);
        let mut done: Vec<U> = Vec::with_capacity(capacity);
        loop {
            pending.clear();
            pending.extend(grid.by_ref().take(CHUNK));
            let Some(&(_, first)) = pending.first() else {
                return;
            };
            let point = |sc: &mut Scenario, &((b, c), i): &((u64, u64), u64)| each(i, self.evaluate_at(sc, b, c));
            if pending.len() < PARALLEL_MIN_POINTS {
                let mut sc = self.base.clone();
                done.clear();
                done.extend(pending.iter().map(|p| point(&mut sc, p)));
            } else {
                // One copy of the scenario per task of at least PARALLEL_MIN_POINTS points.
                pending
                    .par_iter()
                    .with_min_len(PARALLEL_MIN_POINTS)
                    .map_init(|| self.base.clone(), point)
                    .collect_into_vec(&mut done);
            }
            if emit(first, &mut done).is_break() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_kinds_fit_the_slots() {
        assert!((OpKind::HostStep as usize) < KIND_SLOTS);
    }

    fn values(text: &str) -> Vec<u64> {
        Axis::parse("batch", text, 0, 1 << 40).unwrap().iter().collect()
    }

    #[test]
    fn axes_parse_lists_and_ranges() {
        assert_eq!(values("1,8,32"), [1, 8, 32]);
        assert_eq!(values("1..5"), [1, 2, 3, 4, 5]);
        assert_eq!(values("1..=3"), [1, 2, 3]);
        assert_eq!(values("0..8192:2048"), [0, 2048, 4096, 6144, 8192]);
        assert_eq!(values("0..10:4"), [0, 4, 8]);
        assert_eq!(values("1..256*2"), [1, 2, 4, 8, 16, 32, 64, 128, 256]);
        assert_eq!(values("3..100*3"), [3, 9, 27, 81]);
        assert_eq!(values("1,4..6, 1_000"), [1, 4, 5, 6, 1000]);
        assert_eq!(
            Axis::parse("batch", "1..256*2", 1, 10).unwrap_err().to_string(),
            "invalid `batch`: 256 (values from 1 to 10)"
        );
        for a in ["1,8,32", "1..256", "0..8192:1024", "1..256*2"] {
            let ax = Axis::parse("x", a, 0, 1 << 40).unwrap();
            assert_eq!(ax.len(), ax.iter().count() as u64, "{a}");
        }
    }

    #[test]
    fn bad_axes_get_one_line() {
        let e = |t: &str| Axis::parse("batch", t, 1, MAX_BATCH).unwrap_err().to_string();
        assert_eq!(e("0..5"), "invalid `batch`: 0 (values from 1 to 1,073,741,824)");
        assert_eq!(e("5..1"), "invalid `batch`: \"5..1\" (a range a..b with a ≤ b)");
        assert_eq!(e("1..9:0"), "invalid `batch`: \"1..9:0\" (a step of at least 1 after `:`)");
        assert_eq!(e("1..9*1"), "invalid `batch`: \"1..9*1\" (a factor of at least 2 after `*`)");
        assert!(e("").starts_with("invalid `batch`: \"\" (a value, a list"));
        assert!(e("1..x").contains("a non-negative integer"));
        assert!(e("-3").contains("a non-negative integer"));
        assert_eq!(e("1..1073741824"), "invalid `batch`: 1073741824 points (at most 100000000 points)");
    }

    #[test]
    fn a_ten_million_point_axis_is_a_few_numbers() {
        let ax = Axis::parse("batch", "1..10000000", 1, MAX_BATCH).unwrap();
        assert_eq!(ax.len(), 10_000_000);
        assert_eq!(ax.segments.len(), 1);
        assert_eq!(ax.iter().skip(9_999_998).collect::<Vec<_>>(), [9_999_999, 10_000_000]);
    }

    fn seed() -> Scenario {
        crate::testing::seed(1, 2048)
    }

    /// A decode sweep over several contexts sums each batch's kept operators with attention's
    /// core made afresh: every point equals the point evaluated alone (a sweep of one context,
    /// which keeps nothing), to the last bit, on every kind of model, engine and layout.
    #[test]
    fn kept_operators_give_the_points_evaluated_alone() {
        let cases: &[&[(&str, &str)]] = &[
            &[("model", "llama-3-8b")],
            &[("model", "llama-3-8b"), ("engine", "eager"), ("flash", "off")],
            &[("model", "gemma-2-9b"), ("engine", "vllm")],
            &[("model", "gpt-oss-20b"), ("tp", "2")],
            &[("model", "deepseek-v2-lite"), ("kv", "fp8")],
            &[("model", "mixtral-8x7b"), ("tp", "2"), ("time_model", "roofline")],
        ];
        for pairs in cases {
            let base = crate::testing::scenario(pairs);
            let batch = Axis::parse("batch", "1,7,64", 1, MAX_BATCH).unwrap();
            let ctx = Axis::parse("ctx", "0,100,2048,30000", 0, MAX_CONTEXT).unwrap();
            let sweep = Sweep::new(base.clone(), batch, ctx, 2e9).unwrap();
            let mut points = Vec::new();
            sweep.run(|p| {
                points.push(*p);
                ControlFlow::Continue(())
            });
            assert_eq!(points.len(), 12);
            for p in &points {
                let alone = Sweep::new(base.clone(), Axis::single(p.batch), Axis::single(p.ctx), 2e9).unwrap();
                let want = alone.evaluate(p.batch, p.ctx);
                assert_eq!(format!("{p:?}"), format!("{want:?}"), "{pairs:?}");
                assert_eq!(p.step_time_s.to_bits(), want.step_time_s.to_bits());
            }
        }
    }

    #[test]
    fn a_huge_sweep_streams_and_stops_when_asked() {
        let ax = Axis::parse("batch", "1..10000000", 1, MAX_BATCH).unwrap();
        let sw = Sweep::new(seed(), ax, Axis::single(2048), 2e9).unwrap();
        assert_eq!(sw.len(), 10_000_000);
        let mut seen = Vec::new();
        sw.run(|p| {
            seen.push(p.batch);
            if seen.len() == 5 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(seen, [1, 2, 3, 4, 5]);
    }

    #[test]
    fn too_many_points_in_the_grid_is_refused() {
        let b = Axis::parse("batch", "1..100000", 1, MAX_BATCH).unwrap();
        let c = Axis::parse("ctx", "0..10000", 0, MAX_CONTEXT).unwrap();
        let e = Sweep::new(seed(), b, c, 0.0).unwrap_err().to_string();
        assert_eq!(e, "invalid `batch × ctx`: 100000 × 10001 = 1000100000 points (at most 100000000 points in all)");
    }

    #[test]
    fn the_cap_counts_every_axis_series_included() {
        // 200 GPUs × 11 formats × 10⁸ batches: each axis alone is within the cap, the grid is not.
        let axes = [("gpu", 200), ("weights", 11), ("kv", 1), ("batch", MAX_SWEEP_POINTS), ("ctx", 1)];
        let e = grid_points(&axes).unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid `gpu × weights × kv × batch × ctx`: 200 × 11 × 1 × 100000000 × 1 = 220000000000 points (at most 100000000 points in all)"
        );
        assert_eq!(grid_points(&[("gpu", 2), ("batch", MAX_SWEEP_POINTS / 2)]).unwrap(), MAX_SWEEP_POINTS);
        assert!(grid_points(&[("gpu", 2), ("batch", MAX_SWEEP_POINTS / 2 + 1)]).is_err());
        // No overflow however large the axes.
        assert!(grid_points(&[("a", u64::MAX), ("b", u64::MAX), ("c", u64::MAX)]).is_err());
    }

    #[test]
    fn points_come_out_in_order_context_major() {
        let sw = Sweep::new(
            seed(),
            Axis::parse("batch", "1,2", 1, MAX_BATCH).unwrap(),
            Axis::parse("ctx", "10,20", 0, MAX_CONTEXT).unwrap(),
            0.0,
        )
        .unwrap();
        let mut got = Vec::new();
        sw.run(|p| {
            got.push((p.batch, p.ctx));
            ControlFlow::Continue(())
        });
        assert_eq!(got, [(1, 10), (2, 10), (1, 20), (2, 20)]);
    }

    #[test]
    fn a_mapped_run_hands_each_point_its_grid_index_across_chunks() {
        // More than one chunk, so the parallel map runs on several threads and out of order.
        let n = 2 * CHUNK as u64 + 7;
        let ax = Axis::parse("batch", &format!("1..{n}"), 1, MAX_BATCH).unwrap();
        let sw = Sweep::new(seed(), ax, Axis::parse("ctx", "10,20", 0, MAX_CONTEXT).unwrap(), 0.0).unwrap();
        let mut next = 0u64;
        sw.run_mapped(
            |i, p| (i, p.batch, p.ctx),
            |p, (i, batch, ctx)| {
                assert_eq!((i, batch, ctx), (next, p.batch, p.ctx));
                // Context-major: index = ctx's place · batches + batch's place.
                assert_eq!(i, (p.ctx / 10 - 1) * n + p.batch - 1);
                next += 1;
                ControlFlow::Continue(())
            },
        );
        assert_eq!(next, 2 * n);
    }

    #[test]
    fn chunks_come_in_grid_order_with_their_first_index_and_the_points_of_run() {
        let n = CHUNK as u64 + 9;
        let ax = Axis::parse("batch", &format!("1..{n}"), 1, MAX_BATCH).unwrap();
        let sw = Sweep::new(seed(), ax, Axis::parse("ctx", "10,20", 0, MAX_CONTEXT).unwrap(), 0.0).unwrap();
        let mut each = Vec::new();
        sw.run(|p| {
            each.push(*p);
            ControlFlow::Continue(())
        });
        let (mut chunked, mut firsts) = (Vec::new(), Vec::new());
        sw.run_chunks(|first, points| {
            assert!(!points.is_empty() && points.len() <= CHUNK);
            firsts.push(first);
            chunked.extend_from_slice(points);
            ControlFlow::Continue(())
        });
        assert_eq!(chunked, each);
        // 2n points: chunks of CHUNK from 0, the last one shorter.
        assert_eq!(firsts, [0, CHUNK as u64, 2 * CHUNK as u64]);
        // A break stops after that chunk.
        let mut calls = 0;
        sw.run_chunks(|_, _| {
            calls += 1;
            ControlFlow::Break(())
        });
        assert_eq!(calls, 1);
    }

    #[test]
    fn small_chunks_on_the_calling_thread_give_the_pool_s_points() {
        // A last chunk of 5 points (serial) after a full one (parallel), and a whole sweep
        // below the pool's threshold: every point is `evaluate`'s, in order.
        for n in [CHUNK + 5, PARALLEL_MIN_POINTS - 1] {
            let batch = Axis::parse("batch", &format!("1..{n}"), 1, MAX_BATCH).unwrap();
            let sw = Sweep::new(seed(), batch, Axis::single(2048), 0.0).unwrap();
            let mut got = Vec::new();
            sw.run(|p| {
                got.push(*p);
                ControlFlow::Continue(())
            });
            let want: Vec<SweepPoint> = (1..=n as u64).map(|b| sw.evaluate(b, 2048)).collect();
            assert_eq!(got, want, "{n} points");
        }
    }
}
