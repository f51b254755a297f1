//! Prices as every report prints them: a [`Bill`]'s three figures and the one line that says
//! what they were computed on, so that two prices on different bases are never read as one.

use crate::human;
use llm_ledger_core::economics::{Bill, CostBasis};
use llm_ledger_core::serving::PriceSource;
use llm_ledger_core::simulate::SimSummary;

/// `$0.43/M input · $1.95/M output · $0.0013/request` (the figures the basis has).
pub fn figures(b: &Bill) -> String {
    let parts = [
        b.usd_per_million_input_tokens.map(|v| format!("{}/M input", human::usd(v))),
        b.usd_per_million_output_tokens.map(|v| format!("{}/M output", human::usd(v))),
        b.usd_per_request.map(|v| format!("{}/request", human::usd(v))),
    ];
    parts.into_iter().flatten().collect::<Vec<_>>().join(" · ")
}

/// `$3/GPU-hour (catalogue price, approximate: set yours with --usd-per-hour)`.
pub fn price_words(b: &Bill) -> String {
    format!(
        "{}/GPU-hour ({})",
        human::usd(b.price.usd_per_hour),
        match b.price.source {
            PriceSource::CatalogueApproximate => "catalogue price, approximate: set yours with --usd-per-hour",
            PriceSource::User => "your price",
        }
    )
}

/// The basis of a bill under load, in one line: `under load: 3.81 requests/s of 2000 + 300
/// tokens, p99 TTFT 274 ms, p99 TPOT 24.8 ms, TP 8 (8 GPUs) of h100-sxm at $3/GPU-hour (…)`.
pub fn under_load_basis(b: &Bill, s: &SimSummary, lengths: &str, deployment: &str) -> String {
    load_basis(
        b,
        Load { requests_per_s: s.requests_per_s, ttft_p99_s: s.ttft_s.p99, tpot_p99_s: s.tpot_s.p99 },
        lengths,
        deployment,
    )
}

/// A load a bill was computed under: what it served and the p99s it served them at.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// Completed requests per second.
    pub requests_per_s: f64,
    /// p99 time to first token, seconds.
    pub ttft_p99_s: f64,
    /// p99 time per output token, seconds.
    pub tpot_p99_s: f64,
}

/// [`under_load_basis`] from the load's figures.
pub fn load_basis(b: &Bill, load: Load, lengths: &str, deployment: &str) -> String {
    debug_assert_eq!(b.basis, CostBasis::UnderLoad);
    format!(
        "{}: {} requests/s of {lengths} tokens, p99 TTFT {}, p99 TPOT {}, {deployment} at {}",
        basis_name(b.basis),
        human::sig3(load.requests_per_s),
        human::seconds(load.ttft_p99_s),
        human::seconds(load.tpot_p99_s),
        price_words(b),
    )
}

/// The basis's name as an answer line starts it.
pub fn basis_name(basis: CostBasis) -> &'static str {
    match basis {
        CostBasis::DecodeStep => "one decode step",
        CostBasis::StaticBatch => "a static batch",
        CostBasis::UnderLoad => "under load",
    }
}

/// How a bill under load is computed, for a footer.
pub const UNDER_LOAD_FORMULA: &str = "cost = GPUs × $/GPU-hour × the run's hours (idle time included), per request ÷ requests completed; shared between prompt and output tokens as the steps' GPU time was (each step's time split equally among its new tokens)";

/// The basis line of an answer on `basis`, pointing to the price under load where it is not one.
pub fn basis_line(basis: CostBasis) -> String {
    match basis {
        CostBasis::UnderLoad => format!("cost basis: {}", basis.words()),
        CostBasis::DecodeStep | CostBasis::StaticBatch => format!(
            "cost basis: {} — the price under load, with prefill and queueing: simulate --rate max --ttft-ms … --tpot-ms … (or plan --rate)",
            basis.words()
        ),
    }
}
