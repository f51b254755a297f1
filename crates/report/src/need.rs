//! "What do I need": for a model at a batch × context (decode), every GPU of the catalogue with the
//! fewest of it that hold the step ([`llm_ledger_core::plan::fewest_gpus`]: the layouts `plan`
//! searches, within the GPU budget; with a TPOT bound, the fewest that also meet it), the layout,
//! its time per output token, its price per hour and per million output tokens; and, for the
//! scenario's own GPU, the memory wall: the fullest GPU's memory against the batch at that layout,
//! with the GPU's capacity.
//!
//! JSON keys (stable): `inputs` (the scenario's, its GPU), `batch`, `ctx`, `tpot_bound_s` (`null`
//! without one), `max_gpus`, `reserve_bytes`, `weight_bytes` (the whole model as stored),
//! `rows[]` (each GPU, cheapest per million tokens first, then those without a price, then those
//! without an answer: `gpu`, `gpu_memory_bytes`, `usd_per_gpu_hour`, `answer` — the `plan`
//! point, or `null` — `tokens_per_s_per_user`, `usd_per_hour` (all its GPUs),
//! `usd_per_million_tokens`, `refusal` (why there is no answer, in words)), `wall` (`gpu`, `tp`,
//! `pp`, `ep`, `gpus`, `capacity_bytes`, `available_bytes`, `max_batch`, `points[]` with `batch`,
//! `memory_bytes`, `fits`), `fit_basis` and the fit of the scenario's GPU's answer as every
//! report's [`crate::fit::FitView`]. CSV: the rows, flat.

use crate::human::{self, usd};
use crate::ledger::Inputs;
use crate::render::{HumanTable, Report};
use llm_ledger_core::error::Result;
use llm_ledger_core::memory::{at_uniform, max_batch, FitBasis, Footprint, WeightFootprint};
use llm_ledger_core::parallel::layout_words;
use llm_ledger_core::plan::{fewest_gpus_within, layouts, PlanPoint, PlanRequest};
use llm_ledger_core::serving::{Price, PriceSource};
use llm_ledger_core::stop::Stop;
use llm_ledger_core::Scenario;
use serde::Serialize;

/// One GPU's answer.
#[derive(Debug, Clone, Serialize)]
pub struct NeedRow {
    /// GPU name.
    pub gpu: String,
    /// One GPU's memory, bytes.
    pub gpu_memory_bytes: f64,
    /// The catalogue's price of one GPU, USD per hour (none known: `None`).
    pub usd_per_gpu_hour: Option<f64>,
    /// The fewest GPUs that hold the step, their layout, at the batch.
    pub answer: Option<PlanPoint>,
    /// Output tokens per second of one sequence at the answer: `1 ÷ TPOT`.
    pub tokens_per_s_per_user: Option<f64>,
    /// The answer's GPUs × the price, USD per hour.
    pub usd_per_hour: Option<f64>,
    /// USD per million output tokens at the answer.
    pub usd_per_million_tokens: Option<f64>,
    /// Why there is no answer.
    pub refusal: Option<String>,
}

/// A GPU's row as a CSV line.
#[derive(Debug, Clone, Serialize)]
pub struct NeedCsvRow {
    /// GPU name.
    pub gpu: String,
    /// One GPU's memory, bytes.
    pub gpu_memory_bytes: f64,
    /// GPUs of the answer (empty: none within the budget).
    pub gpus: Option<u64>,
    /// Its tensor-parallel GPUs.
    pub tp: Option<u64>,
    /// Its pipeline stages.
    pub pp: Option<u64>,
    /// Its expert-parallel groups.
    pub ep: Option<u64>,
    /// Time per output token, seconds.
    pub tpot_s: Option<f64>,
    /// Output tokens per second of one sequence.
    pub tokens_per_s_per_user: Option<f64>,
    /// Output tokens per second of the replica.
    pub tokens_per_s: Option<f64>,
    /// Memory of its fullest GPU, bytes.
    pub memory_bytes: Option<f64>,
    /// Largest batch that fits at the answer's layout.
    pub max_batch: Option<u64>,
    /// One GPU's price, USD per hour.
    pub usd_per_gpu_hour: Option<f64>,
    /// All its GPUs, USD per hour.
    pub usd_per_hour: Option<f64>,
    /// USD per million output tokens.
    pub usd_per_million_tokens: Option<f64>,
    /// Why there is no answer.
    pub refusal: Option<String>,
}

/// One batch on the memory wall chart.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WallPoint {
    /// Sequences.
    pub batch: u64,
    /// Memory of the fullest GPU, bytes.
    pub memory_bytes: f64,
    /// Whether it fits.
    pub fits: bool,
}

/// The memory wall of the scenario's GPU at its answer's layout (one GPU without an answer).
#[derive(Debug, Clone, Serialize)]
pub struct MemoryWall {
    /// GPU name.
    pub gpu: String,
    /// Tensor-parallel GPUs.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Expert-parallel groups.
    pub ep: u64,
    /// GPUs per replica.
    pub gpus: u64,
    /// One GPU's memory, bytes.
    pub capacity_bytes: f64,
    /// The memory after the reserve, bytes.
    pub available_bytes: f64,
    /// The largest batch that fits at the context ([`max_batch`]).
    pub max_batch: u64,
    /// The fullest GPU's memory at batches 1, 2, 4 … past the wall, the wall, one past it and
    /// the scenario's batch.
    pub points: Vec<WallPoint>,
}

/// The "what do I need" report.
#[derive(Debug, Clone, Serialize)]
pub struct NeedReport {
    /// The scenario's inputs (its GPU).
    pub inputs: Inputs,
    /// Sequences per step.
    pub batch: u64,
    /// Cached tokens per sequence.
    pub ctx: u64,
    /// The TPOT bound the answers meet, seconds.
    pub tpot_bound_s: Option<f64>,
    /// Most GPUs per replica searched.
    pub max_gpus: u64,
    /// Runtime reserve per GPU, bytes.
    pub reserve_bytes: f64,
    /// The whole model's weights as stored, bytes.
    pub weight_bytes: f64,
    /// Each GPU's answer: cheapest first.
    pub rows: Vec<NeedRow>,
    /// The scenario's GPU's memory wall.
    pub wall: MemoryWall,
    /// The basis of every fit: the decode step at `ctx`.
    pub fit_basis: FitBasis,
    /// The fit of the scenario's GPU's answer.
    #[serde(flatten)]
    pub fit: crate::fit::FitView,
}

/// What the search is asked, besides the scenarios.
#[derive(Debug, Clone, Copy)]
pub struct NeedInputs {
    /// Runtime reserve per GPU, bytes.
    pub reserve_bytes: f64,
    /// The bound on the time per output token, seconds.
    pub tpot_bound_s: Option<f64>,
    /// Most GPUs per replica.
    pub max_gpus: u64,
}

/// A GPU of the catalogue and the scenario on it (or why the scenario cannot run there).
pub struct OnGpu {
    /// The GPU.
    pub gpu: std::sync::Arc<llm_ledger_core::Gpu>,
    /// The scenario on that GPU.
    pub scenario: std::result::Result<Scenario, String>,
}

impl NeedRow {
    /// The fewest of `on.gpu` for `batch` sequences of `ctx` tokens.
    fn of(on: &OnGpu, n: &NeedInputs, batch: u64, ctx: u64, stop: Stop<'_>) -> Result<NeedRow> {
        let g = &on.gpu;
        let mut row = NeedRow {
            gpu: g.name.clone(),
            gpu_memory_bytes: g.memory_bytes,
            usd_per_gpu_hour: g.usd_per_gpu_hour,
            answer: None,
            tokens_per_s_per_user: None,
            usd_per_hour: None,
            usd_per_million_tokens: None,
            refusal: None,
        };
        let sc = match &on.scenario {
            Ok(sc) => sc,
            Err(e) => {
                row.refusal = Some(e.clone());
                return Ok(row);
            }
        };
        if n.reserve_bytes >= g.memory_bytes {
            row.refusal = Some(format!("the {} reserve is all of its memory", human::bytes(n.reserve_bytes)));
            return Ok(row);
        }
        let req = request(sc, n, ctx);
        match fewest_gpus_within(sc, &req, batch, stop)? {
            Some(p) => {
                row.tokens_per_s_per_user = Some(1.0 / p.tpot_s);
                row.usd_per_hour = g.usd_per_gpu_hour.map(|u| u * p.gpus as f64);
                row.usd_per_million_tokens = g.usd_per_gpu_hour.map(|_| p.usd_per_million_tokens);
                row.answer = Some(p);
            }
            None => {
                row.refusal = Some(match n.tpot_bound_s {
                    Some(b) => format!(
                        "no layout of at most {} GPUs holds it and meets TPOT ≤ {}",
                        n.max_gpus,
                        human::seconds(b)
                    ),
                    None => format!("no layout of at most {} GPUs holds it", n.max_gpus),
                })
            }
        }
        Ok(row)
    }
}

/// The plan request of one GPU (its catalogue price, or none: 0 and no dollars shown).
fn request(sc: &Scenario, n: &NeedInputs, ctx: u64) -> PlanRequest {
    let price =
        Price { usd_per_hour: sc.gpu.usd_per_gpu_hour.unwrap_or(0.0), source: PriceSource::CatalogueApproximate };
    PlanRequest {
        ctx,
        tpot_bound_s: n.tpot_bound_s.unwrap_or(f64::INFINITY),
        max_gpus: n.max_gpus,
        price,
        reserve_bytes: n.reserve_bytes,
        batches: None,
    }
}

impl MemoryWall {
    /// The wall of `sc` at the layout of `answer` (one GPU without one).
    fn of(sc: &Scenario, n: &NeedInputs, answer: Option<&PlanPoint>, batch: u64, ctx: u64) -> MemoryWall {
        let (tp, pp, ep) = answer.map_or((1, 1, 1), |p| (p.tp, p.pp, p.ep));
        let at = if (tp, pp, ep) == (1, 1, 1) {
            layouts(sc, 1).into_iter().next()
        } else {
            layouts(sc, tp * pp * ep)
                .into_iter()
                .find(|l| (l.parallel.tp, l.parallel.pp, l.parallel.ep) == (tp, pp, ep))
        };
        let at = at.unwrap_or_else(|| sc.clone());
        let most = max_batch(&at, ctx, n.reserve_bytes);
        let limit = llm_ledger_core::limits::MAX_BATCH;
        let top = (2 * most.max(batch).max(1)).min(limit);
        let mut batches: Vec<u64> =
            std::iter::successors(Some(1u64), |b| b.checked_mul(2)).take_while(|b| *b <= top).collect();
        batches.extend([most, most + 1, batch].into_iter().filter(|b| (1..=limit).contains(b)));
        batches.sort_unstable();
        batches.dedup();
        let points = batches
            .into_iter()
            .map(|b| {
                let f = Footprint::of(&at_uniform(&at, b, ctx), n.reserve_bytes);
                WallPoint { batch: b, memory_bytes: f.memory_bytes, fits: f.fits }
            })
            .collect();
        MemoryWall {
            gpu: sc.gpu.name.clone(),
            tp,
            pp,
            ep,
            gpus: tp * pp * ep,
            capacity_bytes: sc.gpu.memory_bytes,
            available_bytes: sc.gpu.memory_bytes - n.reserve_bytes,
            max_batch: most,
            points,
        }
    }
}

impl NeedReport {
    /// The answer for `sc`'s model at its batch and context (decode) on every GPU of `gpus` (the
    /// catalogue, each with the scenario moved onto it); `sc`'s own GPU gives the wall.
    pub fn build(sc: &Scenario, gpus: &[OnGpu], n: NeedInputs) -> Result<NeedReport> {
        Self::build_within(sc, gpus, n, Stop::NEVER)
    }

    /// [`NeedReport::build`], stopped when `stop` is set while the searches run.
    pub fn build_within(sc: &Scenario, gpus: &[OnGpu], n: NeedInputs, stop: Stop<'_>) -> Result<NeedReport> {
        let batch = sc.workload.contexts.batch();
        let ctx = sc.workload.contexts.max_tokens();
        // The scenario's own GPU is asked as the others are; its errors (phase, budget) are the page's.
        let own = fewest_gpus_within(sc, &request(sc, &n, ctx), batch, stop)?;
        let mut rows = gpus.iter().map(|on| NeedRow::of(on, &n, batch, ctx, stop)).collect::<Result<Vec<_>>>()?;
        // Cheapest per million tokens first; then the answers without a price (fewest GPUs
        // first); then the GPUs without an answer, in catalogue order.
        let rank = |r: &NeedRow| match (&r.answer, r.usd_per_million_tokens) {
            (Some(_), Some(u)) => (0, u, 0),
            (Some(p), None) => (1, 0.0, p.gpus),
            (None, _) => (2, 0.0, 0),
        };
        rows.sort_by(|a, b| {
            let (x, y) = (rank(a), rank(b));
            x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)).then(x.2.cmp(&y.2))
        });
        let wall = MemoryWall::of(sc, &n, own.as_ref(), batch, ctx);
        let fit = crate::fit::FitView {
            fits: own.is_some(),
            memory_bytes: own.map_or_else(
                || Footprint::of(&at_uniform(sc, batch, ctx), n.reserve_bytes).memory_bytes,
                |p| p.memory_bytes,
            ),
            gpu_memory_bytes: sc.gpu.memory_bytes,
            plan_command: None,
        };
        Ok(NeedReport {
            inputs: Inputs::of(sc),
            batch,
            ctx,
            tpot_bound_s: n.tpot_bound_s,
            max_gpus: n.max_gpus,
            reserve_bytes: n.reserve_bytes,
            weight_bytes: WeightFootprint::of(&sc.model, &sc.weights).total_bytes(),
            rows,
            wall,
            fit_basis: FitBasis::Step,
            fit,
        })
    }

    /// The row of GPU `name`.
    pub fn row(&self, name: &str) -> Option<&NeedRow> {
        self.rows.iter().find(|r| r.gpu == name)
    }
}

impl Report for NeedReport {
    type CsvRow = NeedCsvRow;

    fn csv_rows(&self) -> Vec<NeedCsvRow> {
        self.rows
            .iter()
            .map(|r| {
                let a = r.answer.as_ref();
                NeedCsvRow {
                    gpu: r.gpu.clone(),
                    gpu_memory_bytes: r.gpu_memory_bytes,
                    gpus: a.map(|p| p.gpus),
                    tp: a.map(|p| p.tp),
                    pp: a.map(|p| p.pp),
                    ep: a.map(|p| p.ep),
                    tpot_s: a.map(|p| p.tpot_s),
                    tokens_per_s_per_user: r.tokens_per_s_per_user,
                    tokens_per_s: a.map(|p| p.tokens_per_s),
                    memory_bytes: a.map(|p| p.memory_bytes),
                    max_batch: a.map(|p| p.max_batch),
                    usd_per_gpu_hour: r.usd_per_gpu_hour,
                    usd_per_hour: r.usd_per_hour,
                    usd_per_million_tokens: r.usd_per_million_tokens,
                    refusal: r.refusal.clone(),
                }
            })
            .collect()
    }

    fn human(&self) -> HumanTable {
        let i = &self.inputs;
        let title = vec![format!(
            "{} · decode · batch {} × {} cached tokens · weights {} ({}) · KV {} · at most {} GPUs{}",
            i.model,
            human::count(self.batch),
            human::count(self.ctx),
            i.weights_shown(),
            human::bytes(self.weight_bytes),
            i.kv,
            self.max_gpus,
            self.tpot_bound_s.map(|b| format!(" · TPOT ≤ {}", human::seconds(b))).unwrap_or_default()
        )];
        let dash = || "—".to_string();
        let rows = self
            .rows
            .iter()
            .map(|r| match &r.answer {
                Some(p) => vec![
                    r.gpu.clone(),
                    human::bytes(r.gpu_memory_bytes),
                    human::count(p.gpus),
                    layout_words(p.tp, p.pp, p.ep),
                    human::seconds(p.tpot_s),
                    human::sig3(1.0 / p.tpot_s),
                    human::bytes(p.memory_bytes),
                    r.usd_per_hour.map(usd).unwrap_or_else(dash),
                    r.usd_per_million_tokens.map(usd).unwrap_or_else(dash),
                ],
                None => vec![
                    r.gpu.clone(),
                    human::bytes(r.gpu_memory_bytes),
                    dash(),
                    r.refusal.clone().unwrap_or_default(),
                    dash(),
                    dash(),
                    dash(),
                    dash(),
                    dash(),
                ],
            })
            .collect();
        let header = ["GPU", "memory", "GPUs", "layout", "TPOT", "tok/s/user", "memory/GPU", "$/hour", "$/M tokens"]
            .map(String::from)
            .to_vec();
        let footer = vec![
            "GPUs = the fewest whose layout (TP, PP, EP as `plan` searches them) holds the step on its fullest GPU; of those, the fastest".into(),
            "$/hour = GPUs × the catalogue's approximate price; $/M tokens = $/hour ÷ 3600 × TPOT ÷ batch × 10⁶".into(),
            self.fit_basis.rule(self.inputs.counting).into(),
        ];
        HumanTable {
            title,
            header,
            rows,
            right_aligned: vec![1, 2, 4, 5, 6, 7, 8],
            footer,
            priority: vec![0, 2, 0, 0, 1, 2, 2, 1, 0],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_ledger_core::testing::scenario;

    #[test]
    fn the_wall_is_the_memory_models_and_a_big_model_needs_two_gpus() {
        let sc = scenario(&[("model", "llama-3-70b"), ("batch", "8")]);
        let n = NeedInputs { reserve_bytes: 2e9, tpot_bound_s: None, max_gpus: 8 };
        let on = OnGpu { gpu: sc.gpu.clone(), scenario: Ok(sc.clone()) };
        let r = NeedReport::build(&sc, &[on], n).unwrap();
        // 70.6 B parameters in bf16 are 141 GB: more than one H100's 78 GB after the reserve,
        // less than two.
        let a = r.rows[0].answer.unwrap();
        assert_eq!(a.gpus, 2, "{a:?}");
        assert_eq!((r.wall.tp * r.wall.pp * r.wall.ep, r.wall.gpus), (2, 2));
        let most = r.wall.max_batch;
        let at = |b: u64| r.wall.points.iter().find(|p| p.batch == b).unwrap();
        assert!(at(most).fits && !at(most + 1).fits);
        assert!(at(most).memory_bytes <= r.wall.available_bytes && at(most + 1).memory_bytes > r.wall.available_bytes);
        assert!(r.fit.fits);
    }
}
