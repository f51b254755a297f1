//! Which scenario controls do nothing on a page, and why: the page's `unused` keys (its render
//! function never reads them), the keys a page's numbers never depend on (a page that counts
//! bytes and shows no time has no use for the time model), and the keys the query's own clock
//! makes inert (the engine under the roofline clock; the efficiencies under the measured clock,
//! which times kernels from measured tables and leaves the efficiencies only the roofline
//! column). The controls are disabled with the reason as their help; their values travel on.

use super::PageInfo;
use crate::query::PageQuery;

/// Why the page's `unused` keys do nothing there, by page (a page not listed: a general reason).
fn why_unused(page: &PageInfo) -> &'static str {
    match page.slug {
        "cost" => "not used on Cost: it builds its steps from the prompt and output lengths",
        "serving" => "not used on Serving: the simulation builds its own steps from the arriving requests",
        "gemm-tiling" => {
            "not used on GEMM tiling: one GEMM on one GPU takes only the GPU, the weight and activation storage \
             and the efficiencies"
        }
        "need" => "not used on What do I need: it searches the layouts itself, in decode",
        _ => "not used on this page",
    }
}

/// Keys a page's numbers never depend on, beyond its `unused` list, with the reason.
fn page_inert(page: &PageInfo) -> &'static [(&'static str, &'static str)] {
    const NO_TIME: &str = "not used on KV cache: it counts bytes and capacity, and shows no time";
    const ONE_GEMM: &str = "not used on GEMM tiling: the tile model times one GEMM's tiles itself";
    const ONE_GPU: &str = "not used on GEMM tiling: one GEMM on one GPU";
    match page.slug {
        "kv-cache" => &[
            ("time_model", NO_TIME),
            ("engine", NO_TIME),
            ("compute_efficiency", NO_TIME),
            ("bandwidth_efficiency", NO_TIME),
        ],
        "gemm-tiling" => &[
            ("time_model", ONE_GEMM),
            ("engine", ONE_GEMM),
            ("tp", ONE_GPU),
            ("pp", ONE_GPU),
            ("ep", ONE_GPU),
            ("dp", ONE_GPU),
            ("micro_batches", ONE_GPU),
            ("interconnect", ONE_GPU),
            ("link_efficiency", ONE_GPU),
            ("expert_loads", ONE_GPU),
        ],
        _ => &[],
    }
}

/// The pages that show a roofline time (a column, a chart's achieved roofs, a node's roofline
/// time beside its expected one): there the efficiencies matter under either clock.
fn shows_roofline(page: &PageInfo) -> bool {
    matches!(page.slug, "ledger" | "powers-of-ten" | "gemm-tiling")
}

/// The pages whose numbers come from one GPU's step, where data-parallel replicas (copies of the
/// whole step on more GPUs) change nothing.
fn one_replica(page: &PageInfo) -> bool {
    matches!(
        page.slug,
        "" | "powers-of-ten"
            | "ledger"
            | "batching"
            | "kv-cache"
            | "cost"
            | "serving"
            | "gemm-tiling"
            | "moe"
            | "graph"
    )
}

/// The time model the query asks for (`measured` unless it says `roofline`).
fn roofline_clock(q: &PageQuery) -> bool {
    q.get("time_model").is_some_and(|v| v.trim().eq_ignore_ascii_case("roofline"))
}

/// Every scenario key that does nothing on `page` for the query `q`, with the reason, in no
/// particular order; a key appears once.
pub(crate) fn inert(page: &PageInfo, q: &PageQuery) -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = page.unused.iter().map(|k| (*k, why_unused(page))).collect();
    let mut add = |k: &'static str, why: &'static str| {
        if !out.iter().any(|(o, _)| *o == k) {
            out.push((k, why));
        }
    };
    for (k, why) in page_inert(page) {
        add(k, why);
    }
    if one_replica(page) {
        add(
            "dp",
            "data-parallel replicas each run this same step on GPUs of their own: no number on this page changes \
             (Serving's replicas input routes requests among copies)",
        );
    }
    if roofline_clock(q) {
        if page.slug != "serving" {
            add(
                "engine",
                "the roofline clock has no engine: set the time model to measured to time an engine's kernels",
            );
        }
    } else if !shows_roofline(page) {
        const MEASURED: &str = "the measured clock times kernels from measured tables; these set only the roofline \
                                time, which this page does not show (set the time model to roofline to use them)";
        add("compute_efficiency", MEASURED);
        add("bandwidth_efficiency", MEASURED);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pages::{find, PAGES};

    #[test]
    fn each_key_once_and_the_clock_decides_the_efficiencies_and_the_engine() {
        let q = |s: &str| PageQuery::parse(Some(s), &[]).unwrap();
        for page in PAGES {
            let keys: Vec<&str> = inert(page, &q("")).into_iter().map(|(k, _)| k).collect();
            let mut dedup = keys.clone();
            dedup.sort();
            dedup.dedup();
            assert_eq!(dedup.len(), keys.len(), "{}: {keys:?}", page.slug);
            for k in &keys {
                assert!(crate::query::scenario_fields().contains(k), "{}: {k} is not a scenario key", page.slug);
            }
        }
        let ledger = find("ledger").unwrap();
        let has = |p: &PageInfo, s: &str, k: &str| inert(p, &q(s)).iter().any(|(key, _)| *key == k);
        assert!(!has(ledger, "", "compute_efficiency"), "the ledger shows the roofline column");
        assert!(has(find("batching").unwrap(), "", "compute_efficiency"));
        assert!(!has(find("batching").unwrap(), "time_model=roofline", "compute_efficiency"));
        assert!(has(ledger, "time_model=roofline", "engine"));
        assert!(!has(find("serving").unwrap(), "time_model=roofline", "engine"), "Serving's host time is the engine's");
        assert!(has(find("kv-cache").unwrap(), "", "time_model") && has(find("gemm-tiling").unwrap(), "", "engine"));
        assert!(has(ledger, "", "dp"));
    }
}
