//! The "does not fit in memory" banner every page with a scenario shows when the scenario does not
//! fit: the core's one fit rule ([`Fit`]), on the basis the page's numbers use (its registry
//! entry's [`PageFit`]: a step, or the requests' peak), with the page's memory reserve.

use crate::pages::{PageFit, PageInfo};
use crate::query::PageQuery;
use crate::AppState;
use llm_ledger_core::memory::{Fit, Requests};
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_report::human;
use maud::{html, Markup};

/// The fit of the page's scenario, if it resolves and the page shows one (its entry's
/// [`PageFit`]).
pub(crate) fn page_fit(state: &AppState, page: &PageInfo, q: &PageQuery) -> Option<Fit> {
    if !page.controls {
        return None;
    }
    let dropped = |without: &[&str]| {
        let none: Vec<(&str, Option<&str>)> = without.iter().map(|k| (*k, None)).collect();
        q.clone_with(&none)
    };
    match page.fit {
        PageFit::None => None,
        PageFit::Requests { without } => {
            let sc = dropped(without).resolve(&state.catalog).ok()?.scenario;
            let serving: ServingRequest = q.extras_as(&["prompt", "output", "reserve"]).ok()?;
            let s = serving.resolve(&sc).ok()?;
            let r = Requests {
                batch: sc.workload.contexts.batch(),
                prompt_tokens: s.prompt_tokens,
                output_tokens: s.output_tokens,
            };
            Fit::requests(&sc, &r, s.reserve_bytes).ok()
        }
        PageFit::Step { without } => {
            let sc = dropped(without).resolve(&state.catalog).ok()?.scenario;
            let keys: &[&str] = if page.keys.contains(&"reserve") { &["reserve"] } else { &[] };
            let serving: ServingRequest = q.extras_as(keys).ok()?;
            let s = serving.resolve(&sc).ok()?;
            Some(Fit::step(&sc, s.reserve_bytes))
        }
    }
}

/// The banner, when the scenario does not fit.
pub(crate) fn banner(state: &AppState, page: &PageInfo, q: &PageQuery) -> Option<Markup> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The banner checks the fit its registry entry names, whatever the page is called: the
    /// requests' peak, one step, or none.
    #[test]
    fn the_banner_checks_the_fit_of_the_entry_not_of_the_page_name() {
        let state = AppState::builtin();
        let cost = crate::pages::find("cost").unwrap();
        let page = |slug: &'static str, fit: PageFit| PageInfo {
            slug,
            title: "a page",
            summary: "",
            keys: cost.keys,
            inputs: &[],
            unused: &[],
            render: cost.render,
            controls: true,
            heavy: false,
            fit,
        };
        let q = PageQuery::parse(Some("batch=64&prompt=100000&output=1000"), cost.keys).unwrap();
        let requests = PageFit::Requests { without: &["phase", "ctx", "contexts"] };
        let peak = page_fit(&state, &page("renamed", requests), &q).unwrap();
        let step = page_fit(&state, &page("cost", PageFit::Step { without: &[] }), &q).unwrap();
        // 101,000 tokens per request against the step's 2,048: the peak holds far more KV cache.
        assert!(peak.footprint.kv_cache_bytes > 10.0 * step.footprint.kv_cache_bytes);
        assert!(page_fit(&state, &page("cost", PageFit::None), &q).is_none());
    }
}
