//! The `plan --pareto` report: every deployment of the plan's search (each layout within the GPU
//! budget that fits, at each candidate batch up to the memory wall) with its tokens per second
//! per user and per GPU, and the Pareto front between the two ([`llm_ledger_core::plan::frontier`]).
//!
//! JSON keys (stable): `inputs`, `ctx`, `tpot_bound_s` (`null` without a bound), `max_gpus`,
//! `usd_per_hour`, `price_source`, `reserve_bytes`, `layouts`, `deployments[]` and `front[]`
//! (each with the `plan` point's keys — `tp`, `pp`, `ep`, `gpus`, `batch`, `tpot_s`,
//! `tokens_per_s`, `tokens_per_s_per_gpu`, `usd_per_million_tokens`, `memory_bytes`,
//! `weight_bytes`, `max_batch`, `link_share`, `meets_bound`, `replicas` — and
//! `tokens_per_s_per_user`, `front`), `refused[]` (`tp`, `pp`, `ep`, `reason`: `does_not_fit`
//! with `memory_bytes`, `available_bytes`, or `no_given_batch` with `max_batch`), `fit_basis` and the fit of the front's first point as
//! every report's [`crate::fit::FitView`]. CSV: every deployment, one row each.

use crate::human::{self, usd};
use crate::ledger::Inputs;
use crate::render::{HumanTable, Report};
use llm_ledger_core::error::Result;
use llm_ledger_core::parallel::layout_words;
use llm_ledger_core::plan::{frontier_within, Deployment, Frontier, PlanRequest, Refused};
use llm_ledger_core::serving::{Price, PriceSource};
use llm_ledger_core::stop::Stop;
use llm_ledger_core::sweep::Axis;
use llm_ledger_core::Scenario;
use serde::Serialize;

/// The `plan --pareto` report.
#[derive(Debug, Clone, Serialize)]
pub struct FrontierReport {
    /// Inputs (model, GPU, precisions).
    pub inputs: Inputs,
    /// Cached tokens per sequence.
    pub ctx: u64,
    /// The TPOT bound each deployment is checked against, seconds (none: every one meets it).
    pub tpot_bound_s: Option<f64>,
    /// Most GPUs per replica.
    pub max_gpus: u64,
    /// Price, USD per GPU-hour.
    pub usd_per_hour: f64,
    /// Where the price comes from.
    pub price_source: PriceSource,
    /// Runtime reserve per GPU, bytes.
    pub reserve_bytes: f64,
    /// Layouts the model can take within the budget.
    pub layouts: usize,
    /// Every deployment that fits.
    pub deployments: Vec<Deployment>,
    /// The Pareto front, fastest per user first.
    pub front: Vec<Deployment>,
    /// Layouts that do not fit one sequence.
    pub refused: Vec<Refused>,
    /// The basis of every fit.
    pub fit_basis: llm_ledger_core::memory::FitBasis,
    /// The fit of the front's first deployment (every deployment listed fits).
    #[serde(flatten)]
    pub fit: crate::fit::FitView,
}

/// One deployment as a CSV row (the JSON's keys, flat).
#[derive(Debug, Clone, Serialize)]
pub struct FrontierRow {
    /// Tensor-parallel GPUs.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Expert-parallel groups.
    pub ep: u64,
    /// GPUs per replica.
    pub gpus: u64,
    /// Sequences per step.
    pub batch: u64,
    /// Time per output token, seconds.
    pub tpot_s: f64,
    /// Output tokens per second of one sequence.
    pub tokens_per_s_per_user: f64,
    /// Output tokens per second of the replica.
    pub tokens_per_s: f64,
    /// Output tokens per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// USD per million output tokens.
    pub usd_per_million_tokens: f64,
    /// Memory of the fullest GPU, bytes.
    pub memory_bytes: f64,
    /// Largest batch that fits.
    pub max_batch: u64,
    /// Share of the step on links.
    pub link_share: f64,
    /// TPOT ≤ the bound (always true without one).
    pub meets_bound: bool,
    /// On the Pareto front.
    pub front: bool,
}

impl FrontierRow {
    fn of(d: &Deployment) -> FrontierRow {
        let p = &d.point;
        FrontierRow {
            tp: p.tp,
            pp: p.pp,
            ep: p.ep,
            gpus: p.gpus,
            batch: p.batch,
            tpot_s: p.tpot_s,
            tokens_per_s_per_user: d.tokens_per_s_per_user,
            tokens_per_s: p.tokens_per_s,
            tokens_per_s_per_gpu: p.tokens_per_s_per_gpu,
            usd_per_million_tokens: p.usd_per_million_tokens,
            memory_bytes: p.memory_bytes,
            max_batch: p.max_batch,
            link_share: p.link_share,
            meets_bound: p.meets_bound,
            front: d.front,
        }
    }
}

impl FrontierReport {
    /// Search the deployments of `sc` (its context is the search's) within `max_gpus` GPUs at
    /// `price` and `reserve_bytes` per GPU, each checked against `tpot_bound_s` when given: the
    /// one builder of every front end.
    pub fn build(
        sc: &Scenario,
        price: Price,
        reserve_bytes: f64,
        tpot_bound_s: Option<f64>,
        max_gpus: u64,
        batches: Option<Axis>,
    ) -> Result<FrontierReport> {
        Self::build_within(sc, price, reserve_bytes, tpot_bound_s, max_gpus, batches, Stop::NEVER)
    }

    /// [`FrontierReport::build`], stopped when `stop` is set while the search runs.
    pub fn build_within(
        sc: &Scenario,
        price: Price,
        reserve_bytes: f64,
        tpot_bound_s: Option<f64>,
        max_gpus: u64,
        batches: Option<Axis>,
        stop: Stop<'_>,
    ) -> Result<FrontierReport> {
        let ctx = sc.workload.contexts.max_tokens();
        let request = PlanRequest {
            ctx,
            tpot_bound_s: tpot_bound_s.unwrap_or(f64::INFINITY),
            max_gpus,
            price,
            reserve_bytes,
            batches,
        };
        let f = frontier_within(sc, &request, stop)?;
        Ok(FrontierReport::new(sc, &request, tpot_bound_s, f))
    }

    fn new(sc: &Scenario, req: &PlanRequest, tpot_bound_s: Option<f64>, f: Frontier) -> FrontierReport {
        let capacity = sc.gpu.memory_bytes;
        let first = f.front.first().map(|d| d.point);
        let fit = crate::fit::FitView {
            fits: first.is_some_and(|p| p.memory_bytes <= capacity - req.reserve_bytes),
            memory_bytes: first.map_or(0.0, |p| p.memory_bytes),
            gpu_memory_bytes: capacity,
            plan_command: None,
        };
        FrontierReport {
            inputs: Inputs::of(sc),
            ctx: req.ctx,
            tpot_bound_s,
            max_gpus: req.max_gpus,
            usd_per_hour: req.price.usd_per_hour,
            price_source: req.price.source,
            reserve_bytes: req.reserve_bytes,
            layouts: f.layouts,
            deployments: f.deployments,
            front: f.front,
            refused: f.refused,
            fit_basis: f.fit_basis,
            fit,
        }
    }

    /// The deployment of this layout at this batch, if the search has it.
    pub fn find(&self, tp: u64, pp: u64, ep: u64, batch: u64) -> Option<&Deployment> {
        self.deployments.iter().find(|d| {
            let p = &d.point;
            (p.tp, p.pp, p.ep, p.batch) == (tp, pp, ep, batch)
        })
    }
}

impl Report for FrontierReport {
    type CsvRow = FrontierRow;

    fn csv_rows(&self) -> Vec<FrontierRow> {
        self.deployments.iter().map(FrontierRow::of).collect()
    }

    fn human(&self) -> HumanTable {
        let i = &self.inputs;
        let title = vec![format!(
            "{} on {} · decode at {} cached tokens · weights {} · KV {} · at most {} GPUs · ${}/GPU-hour",
            i.model,
            i.gpu,
            human::count(self.ctx),
            i.weights_shown(),
            i.kv,
            self.max_gpus,
            self.usd_per_hour
        )];
        let rows = self
            .front
            .iter()
            .map(|d| {
                let p = &d.point;
                vec![
                    layout_words(p.tp, p.pp, p.ep),
                    human::count(p.batch),
                    human::seconds(p.tpot_s),
                    human::sig3(d.tokens_per_s_per_user),
                    human::count(p.tokens_per_s.round() as u64),
                    human::sig3(p.tokens_per_s_per_gpu),
                    usd(p.usd_per_million_tokens),
                    human::bytes(p.memory_bytes),
                ]
            })
            .collect();
        let header = ["layout", "batch", "TPOT", "tok/s/user", "tok/s", "tok/s/GPU", "$/M tokens", "memory/GPU"]
            .map(String::from)
            .to_vec();
        let mut footer = vec![
            format!(
                "Pareto front of {} deployments ({} layouts that fit of {} tried, each at batches up to the largest that fits): none beats another on both tok/s per user and tok/s per GPU",
                self.deployments.len(),
                self.layouts - self.refused.len(),
                self.layouts
            ),
            "tok/s/user = 1 ÷ TPOT; tok/s/GPU = batch ÷ TPOT ÷ GPUs; faster per user costs throughput per GPU".into(),
        ];
        if let Some(b) = self.tpot_bound_s {
            let n = self.front.iter().filter(|d| d.point.meets_bound).count();
            footer.push(format!("{n} of the {} on the front meet TPOT ≤ {}", self.front.len(), human::seconds(b)));
        }
        footer.push(crate::bill::basis_line(llm_ledger_core::economics::CostBasis::DecodeStep));
        footer.push(self.fit_basis.rule(self.inputs.counting).into());
        HumanTable {
            title,
            header,
            rows,
            right_aligned: (1..=7).collect(),
            footer,
            priority: vec![0, 0, 0, 0, 2, 0, 1, 2],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Format;
    use llm_ledger_core::testing::scenario;

    fn report(pairs: &[(&str, &str)], max_gpus: u64) -> FrontierReport {
        let sc = scenario(pairs);
        let price = Price { usd_per_hour: 3.0, source: PriceSource::User };
        FrontierReport::build(&sc, price, 2e9, None, max_gpus, None).unwrap()
    }

    #[test]
    fn the_csv_has_every_deployment_and_the_table_the_front() {
        let r = report(&[], 2);
        let csv = r.render(Format::Csv).unwrap();
        assert_eq!(csv.lines().count(), r.deployments.len() + 1);
        assert!(csv.starts_with("tp,pp,ep,gpus,batch,tpot_s,tokens_per_s_per_user,"), "{csv}");
        let table = r.render(Format::Table).unwrap();
        assert!(table.contains("Pareto front of"), "{table}");
        let json: serde_json::Value = serde_json::from_str(&r.render(Format::Json).unwrap()).unwrap();
        assert_eq!(json["front"].as_array().unwrap().len(), r.front.len());
        assert!(json["front"][0]["front"].as_bool().unwrap());
        assert!(json["tpot_bound_s"].is_null());
        assert!(json["fits"].as_bool().unwrap());
    }
}
