//! The `sweep` view, rendered piece by piece so that a sweep of any length streams: a head, one
//! string per point, a tail. Table and Markdown use fixed column widths (no need to see every
//! row first); JSON is `{"inputs": …, "capacity_bytes": …, "reserve_bytes": …, "fit_basis": "step",
//! "fits": …, "memory_bytes": …, "gpu_memory_bytes": …, "plan_command": …, "points": [ … ]}` (every
//! point's `fits` is its own step's, [`FitBasis::Step`]; the head's [`FitView`] is the largest
//! point's — the largest batch at the longest context, which fits exactly when every point does)
//! with one point object per line; CSV has one header line and one line per point, the point
//! fields of JSON.
//!
//! A compared sweep (`--gpu a,b --weights bf16,fp8 --kv …`: one series per combination) adds a
//! `variants` list to the head and leads each point with its `gpu`, `weights` and `kv` (JSON keys,
//! CSV columns, a `series` column in tables).
//!
//! Point keys (stable): `batch`, `ctx`, `step_time_s`, `tokens_per_s`, `flops`, `bytes`,
//! `weight_bytes`, `kv_bytes`, `intensity`, `largest_op`, `largest_op_time_s`, `memory_bytes`, `kv_cache_bytes`, `fits`.

use crate::fit::FitView;
use crate::human;
use crate::ledger::Inputs;
use crate::plot::{BatchCurve, BatchPoint};
use crate::render::Format;
use llm_ledger_core::crossover::crossover_batch;
use llm_ledger_core::error::{Error, Result};
use llm_ledger_core::memory::{at_uniform, memory_wall_batch, Fit, FitBasis};
use llm_ledger_core::sweep::{Axis, Sweep, SweepPoint};
use llm_ledger_core::Scenario;
use serde::Serialize;
use std::ops::ControlFlow;

/// What the head of a sweep says.
#[derive(Debug, Clone, Serialize)]
pub struct SweepHead {
    /// The fixed inputs (batch and ctx are those of the base scenario; the sweep replaces them).
    pub inputs: Inputs,
    /// The batch axis as given.
    pub batch_axis: String,
    /// The context axis as given.
    pub ctx_axis: String,
    /// Number of points.
    pub point_count: u64,
    /// GPU memory, bytes.
    pub capacity_bytes: f64,
    /// Runtime reserve, bytes.
    pub reserve_bytes: f64,
    /// The basis of every point's `fits`: its own step.
    pub fit_basis: FitBasis,
    /// Whether every point fits: the largest point's fit (the largest batch at the longest
    /// context; of every series in a compared sweep).
    #[serde(flatten)]
    pub fit: FitView,
    /// The series of a compared sweep (several GPUs or precisions), in output order; empty for one.
    /// `inputs` and `capacity_bytes` are then those of the first series.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<Variant>,
}

/// One series of a compared sweep: the GPU and the weight and KV precisions it runs with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Variant {
    /// GPU name.
    pub gpu: String,
    /// Weight storage.
    pub weights: String,
    /// KV-cache storage.
    pub kv: String,
}

impl Variant {
    /// The series a scenario belongs to.
    pub fn of(sc: &Scenario) -> Variant {
        Variant { gpu: sc.gpu.name.clone(), weights: sc.weights.describe(), kv: sc.workload.kv.name() }
    }

    /// `h200 · w fp8 · kv bf16`.
    pub fn label(&self) -> String {
        format!("{} · w {} · kv {}", self.gpu, self.weights, self.kv)
    }
}

/// The two axes of a sweep, parsed, with their text as given (the head echoes it).
#[derive(Debug, Clone)]
pub struct SweepAxes {
    /// The batch axis.
    pub batch: Axis,
    /// The batch axis as given (trimmed).
    pub batch_text: String,
    /// The context axis.
    pub ctx: Axis,
    /// The context axis as given (trimmed).
    pub ctx_text: String,
}

/// A sweep ready to run: its head and the core's [`Sweep`]. The one way the CLI's `sweep`, the
/// explorer's Batching page and the Python package turn a scenario and two axes into points.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    /// What the head says.
    pub head: SweepHead,
    /// The planned sweep.
    pub sweep: Sweep,
    /// The base scenario (its batch and contexts are replaced point by point).
    pub base: Scenario,
    /// The context axis.
    pub ctx: Axis,
}

impl SweepPlan {
    /// Plan `base` (resolved without batch and context) over `axes`, `reserve_bytes` held back.
    pub fn new(base: Scenario, axes: SweepAxes, reserve_bytes: f64) -> Result<SweepPlan> {
        let SweepAxes { batch, batch_text, ctx, ctx_text } = axes;
        let head = SweepHead {
            inputs: Inputs::of(&base),
            batch_axis: batch_text,
            ctx_axis: ctx_text,
            point_count: batch.len() * ctx.len(),
            capacity_bytes: base.gpu.memory_bytes,
            reserve_bytes,
            fit_basis: FitBasis::Step,
            fit: largest_fit(&base, &batch, &ctx, reserve_bytes),
            variants: Vec::new(),
        };
        let sweep = Sweep::new(base.clone(), batch, ctx.clone(), reserve_bytes)?;
        Ok(SweepPlan { head, sweep, base, ctx })
    }

    /// Every point, refusing a sweep of more than `limit` points (for callers that keep them all).
    pub fn points(&self, limit: u64) -> Result<Vec<SweepPoint>> {
        if self.head.point_count > limit {
            return Err(Error::invalid(
                "batch",
                format!("{} points", self.head.point_count),
                format!("at most {limit} points here (`llm-ledger sweep` streams any number)"),
            ));
        }
        let mut out = Vec::with_capacity(self.head.point_count as usize);
        self.sweep.run(|p| {
            out.push(*p);
            ControlFlow::Continue(())
        });
        Ok(out)
    }

    /// The whole sweep in `format` (the CLI's output for a sweep of at most `limit` points).
    pub fn render(&self, format: Format, limit: u64) -> Result<String> {
        SweepView::new(format).render_all(&self.head, &self.points(limit)?)
    }

    /// The batch curve of `points` (this plan's), with the memory wall ([`memory_wall_batch`]) and
    /// the KV crossover ([`crossover_batch`]) at the sweep's one context length. A sweep over
    /// several context lengths has no single curve: an error naming `ctx`.
    pub fn batch_curve(&self, points: &[SweepPoint]) -> Result<BatchCurve> {
        if self.ctx.len() != 1 {
            return Err(Error::invalid(
                "ctx",
                format!("{:?} ({} values)", self.head.ctx_axis, self.ctx.len()),
                "one context length for a batch curve",
            ));
        }
        let ctx = self.ctx.min();
        let at_ctx = at_uniform(&self.base, 1, ctx);
        let i = &self.head.inputs;
        Ok(BatchCurve {
            points: points
                .iter()
                .map(|p| BatchPoint { batch: p.batch, step_time_s: p.step_time_s, tokens_per_s: p.tokens_per_s })
                .collect(),
            memory_wall_batch: memory_wall_batch(&at_ctx, ctx, self.head.reserve_bytes).map(|b| b as f64),
            kv_crossover_batch: crossover_batch(&at_ctx, ctx),
            title: Some(format!(
                "{} on {} · {} · {} tokens per sequence · weights {} · KV {}",
                i.model,
                i.gpu,
                i.phase,
                human::count(ctx),
                if i.weights.contains(' ') { "mixed".to_string() } else { i.weights_shown() },
                i.kv
            )),
        })
    }
}

/// The fit of the largest point of a sweep over `batch` × `ctx` of `base`: memory grows with the
/// batch and with the context, so it fits exactly when every point does.
fn largest_fit(base: &Scenario, batch: &Axis, ctx: &Axis, reserve_bytes: f64) -> FitView {
    let largest = at_uniform(base, batch.max(), ctx.max());
    FitView::of(&largest, &Fit::step(&largest, reserve_bytes))
}

/// Streaming renderer of a sweep. A table is fitted to the width set by
/// [`crate::render::fit_tables_to`] before the first row (the column widths are fixed): the less
/// important columns are hidden by the shared rule ([`crate::render::fit_columns`]) and named in
/// the last line, and the title and notes wrap, as every other table does.
#[derive(Debug, Clone, Copy)]
pub struct SweepView {
    format: Format,
    /// Width of the leading `series` column of a compared sweep (0: one series, no column).
    series_width: usize,
    /// Which of [`COLUMNS`] a table shows.
    shown: [bool; COLUMNS.len()],
    /// The width lines are fitted to (tables only).
    width: Option<usize>,
}

/// Column headers, widths, whether the column is text (left-aligned) in the table and Markdown,
/// and how readily a narrow terminal hides it ([`crate::HumanTable::priority`]): the largest row
/// first, then intensity and the byte breakdown; batch, context, step time and fits stay.
const COLUMNS: [(&str, usize, bool, u8); 10] = [
    ("batch", 9, false, 0),
    ("ctx", 11, false, 0),
    ("step", 9, false, 0),
    ("tok/s", 10, false, 1),
    ("weights", 9, false, 2),
    ("KV", 9, false, 2),
    ("FLOP/B", 7, false, 2),
    ("largest row", 20, true, 3),
    ("memory", 9, false, 1),
    ("fits", 4, true, 0),
];

impl SweepView {
    /// A renderer for `format`.
    pub fn new(format: Format) -> SweepView {
        SweepView::with_series(format, 0)
    }

    /// A renderer for a compared sweep over `variants`: every point carries its series.
    pub fn compare(format: Format, variants: &[Variant]) -> SweepView {
        let width = variants.iter().map(|v| v.label().chars().count()).max().unwrap_or(0).max("series".len());
        SweepView::with_series(format, if variants.len() > 1 { width } else { 0 })
    }

    /// A table fitted to the width set for tables, if any; other formats show every column.
    fn with_series(format: Format, series_width: usize) -> SweepView {
        let width = crate::render::table_width().filter(|_| format == Format::Table);
        SweepView { format, series_width, shown: [true; COLUMNS.len()], width }.fitted()
    }

    /// This view with its columns chosen for [`Self::width`].
    fn fitted(mut self) -> SweepView {
        if let Some(w) = self.width {
            let priority: Vec<u8> = COLUMNS.iter().map(|c| c.3).collect();
            let (keep, _) = crate::render::fit_columns(COLUMNS.len(), &priority, |keep| self.line_width(keep) <= w);
            self.shown = std::array::from_fn(|i| keep.contains(&i));
        }
        self
    }

    /// Width of a row showing the columns `keep`.
    fn line_width(&self, keep: &[usize]) -> usize {
        let series = if self.series_width > 0 { self.series_width + 2 } else { 0 };
        series + keep.iter().map(|i| COLUMNS[*i].1).sum::<usize>() + 2 * keep.len().saturating_sub(1)
    }

    /// The shown columns.
    fn kept(&self) -> Vec<usize> {
        (0..COLUMNS.len()).filter(|i| self.shown[*i]).collect()
    }

    /// Lines of prose, wrapped to the width.
    fn prose(&self, lines: &[String]) -> String {
        lines
            .iter()
            .flat_map(|l| match self.width {
                Some(w) => crate::render::wrap(l, w),
                None => vec![l.clone()],
            })
            .map(|l| format!("{l}\n"))
            .collect()
    }

    /// `cells`, with the series cell first when the sweep compares series.
    fn line(&self, series: Option<&str>, cells: &[String]) -> String {
        match self.format {
            Format::Md => match series.filter(|_| self.series_width > 0) {
                Some(v) => format!("| {v} | {} |\n", cells.join(" | ")),
                None => format!("| {} |\n", cells.join(" | ")),
            },
            _ => {
                let mut s = String::new();
                if let Some(v) = series.filter(|_| self.series_width > 0) {
                    s.push_str(&format!("{v:<w$}  ", w = self.series_width));
                }
                let shown = cells.iter().zip(COLUMNS).zip(self.shown).filter(|(_, shown)| *shown);
                for (i, ((c, (_, w, text, _)), _)) in shown.enumerate() {
                    if i > 0 {
                        s.push_str("  ");
                    }
                    if text {
                        s.push_str(&format!("{c:<w$}"));
                    } else {
                        s.push_str(&format!("{c:>w$}"));
                    }
                }
                s.truncate(s.trim_end().len());
                s.push('\n');
                s
            }
        }
    }

    fn rule(&self) -> String {
        format!("{}\n", "─".repeat(self.line_width(&self.kept())))
    }

    /// Everything before the first point.
    pub fn head(&self, h: &SweepHead) -> String {
        let i = &h.inputs;
        let title = if h.variants.len() > 1 {
            format!(
                "{} · {} · {} series (GPU · weights · KV){} · sweep batch {} × ctx {} ({} points)",
                i.model,
                i.phase,
                h.variants.len(),
                i.layout_suffix(),
                h.batch_axis,
                h.ctx_axis,
                human::count(h.point_count)
            )
        } else {
            format!(
                "{} on {} · {} · weights {} · KV {}{} · sweep batch {} × ctx {} ({} points)",
                i.model,
                i.gpu,
                i.phase,
                i.weights_shown(),
                i.kv,
                i.layout_suffix(),
                h.batch_axis,
                h.ctx_axis,
                human::count(h.point_count)
            )
        };
        let header: Vec<String> = COLUMNS.iter().map(|(n, ..)| n.to_string()).collect();
        match self.format {
            Format::Json => format!(
                "{{\n  \"inputs\": {},\n  \"batch_axis\": {},\n  \"ctx_axis\": {},\n  \"point_count\": {},\n  \"capacity_bytes\": {},\n  \"reserve_bytes\": {},\n  \"fit_basis\": {},\n  \"fits\": {},\n  \"memory_bytes\": {},\n  \"gpu_memory_bytes\": {},\n  \"plan_command\": {},\n{}  \"points\": [\n",
                json(&h.inputs),
                json(&h.batch_axis),
                json(&h.ctx_axis),
                h.point_count,
                json(&h.capacity_bytes),
                json(&h.reserve_bytes),
                json(&h.fit_basis),
                json(&h.fit.fits),
                json(&h.fit.memory_bytes),
                json(&h.fit.gpu_memory_bytes),
                json(&h.fit.plan_command),
                if h.variants.len() > 1 { format!("  \"variants\": {},\n", json(&h.variants)) } else { String::new() }
            ),
            Format::Csv => String::new(),
            Format::Md => {
                let rule: Vec<String> =
                    COLUMNS.iter().map(|(_, _, text, _)| if *text { "---" } else { "---:" }.into()).collect();
                format!("**{title}**\n\n{}{}", self.line(Some("series"), &header), self.line(Some("---"), &rule))
            }
            Format::Table => {
                format!("{}{}{}{}", self.prose(&[title]), self.rule(), self.line(Some("series"), &header), self.rule())
            }
        }
    }

    /// One point; `index` counts from 0 over the whole output.
    pub fn point(&self, p: &SweepPoint, index: u64) -> Result<String> {
        self.point_of(None, p, index)
    }

    /// One point of a series of a compared sweep (its `gpu`, `weights` and `kv` lead the point's
    /// JSON keys and CSV columns); `index` counts from 0 over the whole output. A point holding a
    /// NaN or an infinity is refused ([`crate::finite`]), as a whole report would be.
    pub fn point_of(&self, variant: Option<&Variant>, p: &SweepPoint, index: u64) -> Result<String> {
        crate::finite::check(&format!("points[{index}]"), p)?;
        let variant = variant.filter(|_| self.series_width > 0);
        Ok(match self.format {
            Format::Json => {
                let body = match variant {
                    Some(v) => {
                        let (mut head, point) = (json(v), json(p));
                        head.pop(); // `}`
                        format!("{head},{}", &point[1..])
                    }
                    None => json(p),
                };
                format!("{}    {body}", if index == 0 { "" } else { ",\n" })
            }
            Format::Csv => {
                let mut w = csv::WriterBuilder::new().has_headers(index == 0).from_writer(Vec::new());
                w.serialize(p).expect("points serialise to CSV");
                let rows = String::from_utf8(w.into_inner().expect("in-memory writer")).expect("CSV is UTF-8");
                match variant {
                    Some(v) => {
                        let mut f = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
                        f.write_record([&v.gpu, &v.weights, &v.kv]).expect("in-memory writer");
                        let fields = String::from_utf8(f.into_inner().expect("in-memory writer")).expect("UTF-8");
                        let fields = fields.trim_end();
                        let mut lines = rows.lines();
                        let mut out = String::new();
                        if index == 0 {
                            out.push_str(&format!("gpu,weights,kv,{}\n", lines.next().unwrap_or("")));
                        }
                        for l in lines {
                            out.push_str(&format!("{fields},{l}\n"));
                        }
                        out
                    }
                    None => rows,
                }
            }
            Format::Table | Format::Md => {
                let share = if p.step_time_s > 0.0 { p.largest_op_time_s / p.step_time_s } else { 0.0 };
                let cells = [
                    human::count(p.batch),
                    human::count(p.ctx),
                    human::seconds(p.step_time_s),
                    human::count(p.tokens_per_s.round() as u64),
                    human::bytes(p.weight_bytes),
                    human::bytes(p.kv_bytes),
                    human::intensity(Some(p.intensity)),
                    format!("{} {:.0} %", p.largest_op.name(), share * 100.0),
                    human::bytes(p.memory_bytes),
                    if p.fits { "yes".into() } else { "NO".into() },
                ];
                self.line(variant.map(Variant::label).as_deref(), &cells)
            }
        })
    }

    /// Everything after the last point: `points` emitted, `past_wall` of them not fitting.
    pub fn tail(&self, h: &SweepHead, points: u64, past_wall: u64) -> String {
        let notes = [
            if h.variants.len() > 1 {
                format!(
                    "memory = weights + KV cache + workspace; fits = memory ≤ each series' GPU capacity − {} reserve",
                    human::bytes(h.reserve_bytes)
                )
            } else {
                format!(
                    "memory = weights + KV cache + workspace; fits = memory ≤ {} − {} reserve",
                    human::bytes(h.capacity_bytes),
                    human::bytes(h.reserve_bytes)
                )
            },
            format!(
                "{} of {} points past the memory wall (shown, marked NO)",
                human::count(past_wall),
                human::count(points)
            ),
            h.fit_basis.rule(h.inputs.counting).to_string(),
        ];
        let mut notes: Vec<String> = notes.into_iter().chain(h.fit.hint()).collect();
        let hidden: Vec<&str> = (0..COLUMNS.len()).filter(|i| !self.shown[*i]).map(|i| COLUMNS[i].0).collect();
        if !hidden.is_empty() {
            notes.push(crate::render::hidden_line(&hidden));
        }
        match self.format {
            Format::Json => "\n  ]\n}\n".into(),
            Format::Csv => String::new(),
            Format::Md => notes.iter().map(|n| format!("\n{n}\n")).collect(),
            Format::Table => format!("{}{}", self.rule(), self.prose(&notes)),
        }
    }

    /// The whole sweep as one string (for small sweeps and tests).
    pub fn render_all(&self, h: &SweepHead, points: &[SweepPoint]) -> Result<String> {
        let mut s = self.head(h);
        for (i, p) in points.iter().enumerate() {
            s.push_str(&self.point(p, i as u64)?);
        }
        let past = points.iter().filter(|p| !p.fits).count() as u64;
        s.push_str(&self.tail(h, points.len() as u64, past));
        Ok(s)
    }
}

fn json<T: Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).expect("values serialise to JSON")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use llm_ledger_core::limits::{MAX_BATCH, MAX_CONTEXT};
    use llm_ledger_core::sweep::{Axis, Sweep};
    use llm_ledger_core::{Catalog, ScenarioRequest};
    use std::ops::ControlFlow;

    fn seed_sweep() -> (SweepHead, Vec<SweepPoint>) {
        let sc = ScenarioRequest { counting: Some("seed".into()), ..Default::default() }
            .resolve(&Catalog::builtin())
            .unwrap();
        let (b, c) = ("1,8,32,64,128,256", "2048");
        let head = SweepHead {
            inputs: Inputs::of(&sc),
            batch_axis: b.into(),
            ctx_axis: c.into(),
            point_count: 6,
            capacity_bytes: sc.gpu.memory_bytes,
            reserve_bytes: 2e9,
            fit_basis: FitBasis::Step,
            fit: largest_fit(
                &sc,
                &Axis::parse("batch", b, 1, MAX_BATCH).unwrap(),
                &Axis::parse("ctx", c, 0, MAX_CONTEXT).unwrap(),
                2e9,
            ),
            variants: Vec::new(),
        };
        let sw = Sweep::new(
            sc,
            Axis::parse("batch", b, 1, MAX_BATCH).unwrap(),
            Axis::parse("ctx", c, 0, MAX_CONTEXT).unwrap(),
            2e9,
        )
        .unwrap();
        let mut pts = Vec::new();
        sw.run(|p| {
            pts.push(*p);
            ControlFlow::Continue(())
        });
        (head, pts)
    }

    #[test]
    fn seed_sweep_table() {
        let (h, p) = seed_sweep();
        insta::assert_snapshot!(SweepView::new(Format::Table).render_all(&h, &p).unwrap());
    }

    #[test]
    fn seed_sweep_markdown_and_csv() {
        let (h, p) = seed_sweep();
        insta::assert_snapshot!(SweepView::new(Format::Md).render_all(&h, &p).unwrap());
        let csv = SweepView::new(Format::Csv).render_all(&h, &p).unwrap();
        assert_eq!(csv.lines().count(), 7);
        assert!(csv.starts_with("batch,ctx,step_time_s,tokens_per_s,flops,bytes,weight_bytes,kv_bytes,intensity,largest_op,largest_op_time_s,memory_bytes,kv_cache_bytes,fits\n1,2048,"));
        assert!(csv.lines().last().unwrap().ends_with(",false"));
    }

    /// The axes of `batch` × `ctx` as the app parses them.
    pub(crate) fn axes(batch: &str, ctx: &str) -> SweepAxes {
        SweepAxes {
            batch: Axis::parse("batch", batch, 1, MAX_BATCH).unwrap(),
            batch_text: batch.into(),
            ctx: Axis::parse("ctx", ctx, 0, MAX_CONTEXT).unwrap(),
            ctx_text: ctx.into(),
        }
    }

    #[test]
    fn a_plan_renders_what_the_streamed_views_render_and_draws_its_curve() {
        let sc = ScenarioRequest { counting: Some("seed".into()), ..Default::default() }
            .resolve(&Catalog::builtin())
            .unwrap();
        let plan = SweepPlan::new(sc, axes("1,8,32,64,128,256", "2048"), 2e9).unwrap();
        let (h, p) = seed_sweep();
        assert_eq!(plan.render(Format::Json, 100).unwrap(), SweepView::new(Format::Json).render_all(&h, &p).unwrap());
        let e = plan.points(5).unwrap_err().to_string();
        assert!(e.starts_with("invalid `batch`: 6 points (at most 5 points here"), "{e}");
        let curve = plan.batch_curve(&p).unwrap();
        assert_eq!(curve.points.len(), 6);
        // Seed counting, 2 GB reserve: (80e9 − 2e9 − 15,009,316,864) ÷ 268,435,456 = 234.6 → 234 fit, 235 does not.
        assert_eq!(curve.memory_wall_batch, Some(235.0));
        // 15,009,316,864 ÷ (2,048 × 131,072) = 55.9.
        assert_eq!(format!("{:.1}", curve.kv_crossover_batch.unwrap()), "55.9");
        assert!(curve.svg(crate::plot::PlotSize::default()).is_ok());
        let sc = ScenarioRequest::default().resolve(&Catalog::builtin()).unwrap();
        let two = SweepPlan::new(sc, axes("1,2", "1024,2048"), 2e9).unwrap();
        assert!(two.batch_curve(&[]).unwrap_err().to_string().starts_with("invalid `ctx`: \"1024,2048\" (2 values)"));
    }

    #[test]
    fn streamed_json_is_one_document_with_stable_keys() {
        let (h, p) = seed_sweep();
        let v: serde_json::Value =
            serde_json::from_str(&SweepView::new(Format::Json).render_all(&h, &p).unwrap()).unwrap();
        let pts = v["points"].as_array().unwrap();
        assert_eq!(pts.len(), 6);
        for k in ["batch", "ctx", "step_time_s", "tokens_per_s", "memory_bytes", "fits"] {
            assert!(pts[0].get(k).is_some(), "{k}");
        }
        assert_eq!(pts[5]["fits"], false);
        assert_eq!(pts[5]["batch"], 256);
        assert_eq!(v["inputs"]["model"], "llama-3-8b");
    }
}
