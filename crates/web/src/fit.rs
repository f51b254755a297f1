//! The "does not fit in memory" banner every page with a scenario shows when the scenario does not
//! fit: the core's one fit rule ([`Fit`]), on the basis the page's numbers use (a step; on *Cost*
//! the requests' peak), with the page's memory reserve.

use crate::pages::PageInfo;
use crate::query::PageQuery;
use crate::AppState;
use llm_ledger_core::memory::{Fit, Requests};
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_report::human;
use maud::{html, Markup};

/// Pages whose numbers do not come from the scenario's model (the banner would be about nothing
/// they show).
const NO_MODEL: &[&str] = &["gemm-tiling"];

/// The fit of the page's scenario, if it resolves and the page shows one.
pub fn page_fit(state: &AppState, page: &PageInfo, q: &PageQuery) -> Option<Fit> {
    if !page.controls || NO_MODEL.contains(&page.slug) {
        return None;
    }
    if page.slug == "cost" {
        let none: Vec<(&str, Option<&str>)> = ["phase", "ctx", "contexts"].iter().map(|k| (*k, None)).collect();
        let sc = q.clone_with(&none).resolve(&state.catalog).ok()?.scenario;
        let serving: ServingRequest = q.extras_as(&["prompt", "output", "reserve"]).ok()?;
        let s = serving.resolve(&sc).ok()?;
        let r = Requests {
            batch: sc.workload.contexts.batch(),
            prompt_tokens: s.prompt_tokens,
            output_tokens: s.output_tokens,
        };
        return Fit::requests(&sc, &r, s.reserve_bytes).ok();
    }
    // Serving builds its own steps: its fit is the scenario's without the step's shape.
    let q = &if page.slug == "serving" { crate::pages::serving::without_step_shape(q) } else { q.clone() };
    let sc = q.resolve(&state.catalog).ok()?.scenario;
    let keys: &[&str] = if page.keys.contains(&"reserve") { &["reserve"] } else { &[] };
    let serving: ServingRequest = q.extras_as(keys).ok()?;
    let s = serving.resolve(&sc).ok()?;
    Some(Fit::step(&sc, s.reserve_bytes))
}

/// The banner, when the scenario does not fit.
pub fn banner(state: &AppState, page: &PageInfo, q: &PageQuery) -> Option<Markup> {
    let fit = page_fit(state, page, q)?;
    if fit.fits() {
        return None;
    }
    let f = &fit.footprint;
    Some(html! {
        div.error.notice.nofit #fit-banner role="alert" data-needed=(f.memory_bytes) data-available=(f.available_bytes) {
            strong { "Does not fit in memory. " }
            "This scenario needs " (human::bytes(f.memory_bytes)) " (weights " (human::bytes(f.weight_bytes))
            ", KV cache " (human::bytes(f.kv_cache_bytes)) ", workspace " (human::bytes(f.workspace_bytes)) ") where "
            (human::bytes(f.available_bytes)) " is available (" (human::bytes(f.capacity_bytes)) " − "
            (human::bytes(f.reserve_bytes)) " reserve); it cannot run as given. "
            @match fit.max_batch {
                Some(0) => "Not even one sequence fits: choose a larger GPU, fewer-bit weights, or several GPUs. ",
                Some(b) => { "The largest batch that fits is " strong #fit-max-batch data-value=(b) { (human::count(b)) } ". " },
                None => {},
            }
            "The times below are what the step would take if it fitted."
        }
    })
}
