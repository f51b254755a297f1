//! The `plan --rate` report: deployments found by simulation that hold p99 TTFT and p99 TPOT
//! bounds at an arrival rate, ranked by dollars per request under load (the one cost model,
//! [`llm_ledger_core::economics::Bill::under_load`]), and the Pareto front of cost against p99
//! end-to-end latency.
//!
//! JSON keys (stable): `inputs`, `rate_per_s`, `ttft_bound_s`, `tpot_bound_s`, `max_gpus`,
//! `usd_per_hour`, `price_source`, `requests_per_candidate`, `seed`, `layouts`, `candidates`,
//! `disaggregated_candidates`, `simulations`, `ranked[]` and `pareto[]` (each with `tp`, `pp`,
//! `ep`, `gpus_per_replica`, `replicas`, `gpus`, `max_seqs`, `chunk_tokens`,
//! `rate_per_replica_per_s`, `ttft_p99_s`, `tpot_p99_s`, `e2e_p99_s`, `output_tokens_per_s`,
//! `usd_per_million_input_tokens`, `usd_per_million_output_tokens`, `usd_per_request`, `meets_sla`, `serving` (`aggregated` or `disaggregated`), and for a
//! disaggregated deployment `prefill_instances`, `prefill_tp`, `prefill_ep`,
//! `decode_instances`, `decode_tp`, `decode_ep`, null when aggregated; a disaggregated point's
//! `tp`/`pp`/`ep` are its decode pool's, its `replicas` 1). CSV: the ranked deployments.

use crate::bill;
use crate::human::{self, usd};
use crate::ledger::Inputs;
use crate::render::{to_csv, to_json, to_markdown, to_table, Format, HumanTable, Report};
use llm_ledger_core::economics::{Bill, CostBasis};
use llm_ledger_core::parallel::layout_words;
use llm_ledger_core::plan_refusal::ServingRefused;
use llm_ledger_core::plan_serving::{ServingPlan, ServingPoint, SplitPoint};
use llm_ledger_core::serving::{Price, PriceSource};
use llm_ledger_core::simulate::PoolLayout;
use serde::Serialize;

/// Ranked deployments shown in the table (all are in JSON).
pub const SHOWN: usize = 10;

/// The `plan --rate` report.
#[derive(Debug, Clone, Serialize)]
pub struct ServingPlanReport {
    /// Inputs (model, GPU, precisions).
    pub inputs: Inputs,
    /// Arrival rate, requests per second.
    pub rate_per_s: f64,
    /// p99 TTFT bound, seconds.
    pub ttft_bound_s: f64,
    /// p99 TPOT bound, seconds.
    pub tpot_bound_s: f64,
    /// Most GPUs per replica.
    pub max_gpus: u64,
    /// Price, USD per GPU-hour.
    pub usd_per_hour: f64,
    /// Where the price comes from.
    pub price_source: PriceSource,
    /// The requests' prompt and output lengths in words (`2000 + 300`).
    pub lengths: String,
    /// Requests simulated per candidate.
    pub requests_per_candidate: u64,
    /// Seed of the draws.
    pub seed: u64,
    /// Layouts the simulator takes within the budget.
    pub layouts: usize,
    /// Candidates assessed: aggregated (layout × max sequences × chunk) and disaggregated.
    pub candidates: usize,
    /// Of the candidates, the disaggregated ones (prefill layout × decode layout × max sequences).
    pub disaggregated_candidates: usize,
    /// Simulations run.
    pub simulations: u64,
    /// Candidates not assessed: the search stopped at its budget or deadline (the most GPUs).
    pub unassessed: usize,
    /// The fewest replicas of each candidate holding both SLAs, cheapest first.
    pub ranked: Vec<ServingPoint>,
    /// Cost against p99 end-to-end latency.
    pub pareto: Vec<ServingPoint>,
}

impl ServingPlanReport {
    /// Build from a plan.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        inputs: Inputs,
        rate_per_s: f64,
        ttft_bound_s: f64,
        tpot_bound_s: f64,
        max_gpus: u64,
        price: Price,
        lengths: String,
        requests_per_candidate: u64,
        seed: u64,
        plan: ServingPlan,
    ) -> ServingPlanReport {
        ServingPlanReport {
            inputs,
            rate_per_s,
            ttft_bound_s,
            tpot_bound_s,
            max_gpus,
            usd_per_hour: price.usd_per_hour,
            price_source: price.source,
            lengths,
            requests_per_candidate,
            seed,
            layouts: plan.layouts,
            candidates: plan.candidates,
            disaggregated_candidates: plan.disaggregated_candidates,
            simulations: plan.simulations,
            unassessed: plan.unassessed,
            ranked: plan.ranked,
            pareto: plan.pareto,
        }
    }

    fn table(&self, title: Vec<String>, points: &[ServingPoint], rank: bool, footer: Vec<String>) -> HumanTable {
        let rows = points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut r = vec![
                    serving_words(p),
                    match p.split() {
                        None => layout_words(p.tp, p.pp, p.ep),
                        Some(s) => format!("prefill {}, decode {}", pool_words(s.prefill), pool_words(s.decode)),
                    },
                    human::count(p.replicas),
                    human::count(p.gpus),
                    human::count(p.max_seqs),
                    human::count(p.chunk_tokens),
                    human::seconds(p.ttft_p99_s),
                    human::seconds(p.tpot_p99_s),
                    human::seconds(p.e2e_p99_s),
                    human::count(p.output_tokens_per_s.round() as u64),
                    usd(p.usd_per_million_input_tokens),
                    usd(p.usd_per_million_output_tokens),
                    usd(p.usd_per_request),
                ];
                if rank {
                    r.insert(0, (i + 1).to_string());
                }
                r
            })
            .collect();
        let mut header: Vec<String> = [
            "serving",
            "layout",
            "replicas",
            "GPUs",
            "max seqs",
            "chunk",
            "p99 TTFT",
            "p99 TPOT",
            "p99 e2e",
            "tok/s",
            "$/M in",
            "$/M out",
            "$/request",
        ]
        .map(String::from)
        .to_vec();
        let mut right_aligned: Vec<usize> = (2..=12).collect();
        let mut priority = vec![0, 0, 0, 0, 1, 1, 0, 0, 2, 2, 1, 0, 1];
        if rank {
            header.insert(0, "#".into());
            right_aligned = (0..=13).filter(|i| *i != 1 && *i != 2).collect();
            priority.insert(0, 1);
        }
        HumanTable { title, header, rows, right_aligned, footer, priority }
    }

    /// A point's prices as the one cost model's bill under load.
    fn bill(&self, p: &ServingPoint) -> Bill {
        Bill {
            basis: CostBasis::UnderLoad,
            price: Price { usd_per_hour: self.usd_per_hour, source: self.price_source },
            gpus: p.gpus,
            usd_per_million_input_tokens: Some(p.usd_per_million_input_tokens),
            usd_per_million_output_tokens: Some(p.usd_per_million_output_tokens),
            usd_per_request: Some(p.usd_per_request),
        }
    }

    fn ranked_table(&self) -> HumanTable {
        let i = &self.inputs;
        let title = vec![format!(
            "{} on {} · {} requests/s · p99 TTFT ≤ {} · p99 TPOT ≤ {} · at most {} GPUs per replica · ${}/GPU-hour",
            i.model,
            i.gpu,
            human::sig3(self.rate_per_s),
            human::seconds(self.ttft_bound_s),
            human::seconds(self.tpot_bound_s),
            self.max_gpus,
            self.usd_per_hour
        )];
        let shown: Vec<ServingPoint> = self.ranked.iter().take(SHOWN).copied().collect();
        let mut footer = Vec::new();
        if let Some(b) = self.ranked.first() {
            let deployment = match b.split() {
                None => replicas_words(b.replicas, b.tp, b.pp, b.ep),
                Some(s) => format!("{}, {} GPUs in all", split_words(&s), b.gpus),
            };
            let bill = self.bill(b);
            footer.push(format!(
                "answer: {deployment}, max {} sequences, chunks of {} tokens: {}",
                human::count(b.max_seqs),
                human::count(b.chunk_tokens),
                bill::figures(&bill),
            ));
            let load =
                bill::Load { requests_per_s: self.rate_per_s, ttft_p99_s: b.ttft_p99_s, tpot_p99_s: b.tpot_p99_s };
            footer.push(format!("cost basis: {}", bill::load_basis(&bill, load, &self.lengths, &deployment)));
        }
        match self.ranked.len().saturating_sub(SHOWN) {
            0 => {}
            n => footer.push(format!("{n} more deployments hold the SLAs (--format json lists all)")),
        }
        if self.unassessed > 0 {
            footer.push(format!(
                "partial: the search stopped at its budget with {} of {} candidates assessed, the fewest GPUs first; the {} not assessed (more GPUs per replica) might be cheaper",
                self.candidates - self.unassessed,
                self.candidates,
                self.unassessed
            ));
        }
        footer.push(format!(
            "searched {} layouts, {} candidates ({} aggregated: layout × max seqs × chunk; {} disaggregated: prefill layout × decode layout × max seqs), {} simulations of {} requests each (Poisson, seed {}); each replica is simulated at rate ÷ replicas, each disaggregated deployment at the rate",
            self.layouts,
            self.candidates,
            self.candidates - self.disaggregated_candidates,
            self.disaggregated_candidates,
            self.simulations,
            self.requests_per_candidate,
            self.seed
        ));
        footer.push(format!("{}; ranked by $/request", bill::UNDER_LOAD_FORMULA));
        self.table(title, &shown, true, footer)
    }

    fn pareto_table(&self) -> HumanTable {
        let title =
            vec!["Pareto front: cost against p99 end-to-end latency (every simulated deployment holding the SLAs)"
                .into()];
        let footer =
            vec!["each point beats every other on $/request or on p99 latency; more replicas cost more and wait less"
                .into()];
        self.table(title, &self.pareto, false, footer)
    }
}

impl Report for ServingPlanReport {
    type CsvRow = ServingPoint;

    fn csv_rows(&self) -> Vec<ServingPoint> {
        self.ranked.clone()
    }

    fn human(&self) -> HumanTable {
        self.ranked_table()
    }

    fn layout(&self, format: Format) -> String {
        match format {
            Format::Table => format!("{}\n{}", to_table(&self.ranked_table()), to_table(&self.pareto_table())),
            Format::Md => format!("{}\n{}", to_markdown(&self.ranked_table()), to_markdown(&self.pareto_table())),
            Format::Json => to_json(self),
            Format::Csv => to_csv(&self.csv_rows()),
        }
    }
}

/// `aggregated`, or `disagg 1:3` (prefill instances : decode instances).
fn serving_words(p: &ServingPoint) -> String {
    match p.split() {
        None => "aggregated".into(),
        Some(s) => format!("disagg {}:{}", s.prefill_instances, s.decode_instances),
    }
}

/// A pool's layout in short: `TP 2`, `TP 1`, `TP 2 × EP 4`.
fn pool_words(l: PoolLayout) -> String {
    if l.ep > 1 {
        format!("TP {} × EP {}", l.tp, l.ep)
    } else {
        format!("TP {}", l.tp)
    }
}

/// `disagg 1:3 (prefill TP 2, decode TP 1)`.
fn split_words(s: &SplitPoint) -> String {
    format!(
        "disagg {}:{} (prefill {}, decode {})",
        s.prefill_instances,
        s.decode_instances,
        pool_words(s.prefill),
        pool_words(s.decode)
    )
}

/// `1 replica of 1 GPU`, `3 replicas of TP 2 (2 GPUs), 6 GPUs in all`.
fn replicas_words(replicas: u64, tp: u64, pp: u64, ep: u64) -> String {
    let layout = layout_words(tp, pp, ep);
    match replicas {
        1 => format!("1 replica of {layout}"),
        r => format!("{r} replicas of {layout}, {} GPUs in all", r * tp * pp * ep),
    }
}

/// A plan-under-load refusal in words, one line, naming inputs through `name_of` (the CLI's
/// `--ttft-ms`): no deployment holds both p99 SLAs at the rate, and the p99s the closest reached.
pub fn refusal_message(r: &ServingRefused, name_of: &dyn Fn(&str) -> String) -> String {
    let (ttft, tpot) = (name_of("ttft_ms"), name_of("tpot_ms"));
    let head = format!(
        "invalid `{ttft}`/`{tpot}`: no deployment of {} on {} (at most {} GPUs per replica) holds p99 TTFT ≤ {:.3} ms and p99 TPOT ≤ {:.3} ms at {} requests/s",
        r.model,
        r.gpu,
        r.max_gpus,
        r.ttft_bound_s * 1e3,
        r.tpot_bound_s * 1e3,
        human::sig3(r.rate_per_s)
    );
    match &r.closest {
        Some(c) if c.ttft_p99_s > 0.0 => format!(
            "{head}; the closest, {}, with max {} sequences and chunks of {} tokens, reaches p99 TTFT {:.3} ms and p99 TPOT {:.3} ms",
            replicas_words(c.replicas, c.layout.tp, c.layout.pp, c.layout.ep),
            c.max_seqs,
            c.chunk_tokens,
            c.ttft_p99_s * 1e3,
            c.tpot_p99_s * 1e3
        ),
        Some(c) => format!(
            "{head}; the fastest layout, {}, takes {:.3} ms per output token even alone",
            layout_words(c.layout.tp, c.layout.pp, c.layout.ep),
            c.tpot_p99_s * 1e3
        ),
        None => format!("{head}; no layout within `{}` can serve one request", name_of("max_gpus")),
    }
}
