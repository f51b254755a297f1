//! The model presets (the CLI's `models` listing), each linking to its ledger.

use super::parts::{num, thead};
use super::PageCtx;
use crate::error::AppError;
use llm_ledger_report::catalog::ModelList;
use llm_ledger_report::human;
use maud::{html, Markup};

/// The page body.
pub(super) fn render(ctx: &PageCtx) -> Result<Markup, AppError> {
    let q = ctx.query;
    // The scenario is checked as on every page (the links below carry it to the ledger).
    let r = ctx.resolve()?;
    let list = ModelList::new(&r.catalog);
    let current = Some(r.scenario.model.name.clone());
    Ok(html! {
        h1 { "Models" }
        p.lead {
            "Parameter counts are computed from the shapes (embedding + layers + untied LM head); active = per token "
            "(MoE: router, top-k and shared experts). Pick a model to see its ledger with the rest of your scenario. "
            a href=(q.config_only().href("/api/models", &[])) { "JSON" }
        }
        table.listing #models {
            (thead(&[
                ("model", false), ("family", false), ("layers", true), ("hidden", true), ("params", true), ("active", true),
                ("KV per token (bf16)", true), ("description", false),
            ]))
            tbody {
                @for m in &list.models {
                    tr data-model=(m.name) aria-current=[(current.as_deref() == Some(m.name.as_str())).then_some("true")] {
                        td {
                            @match link(q, &r.catalog, &m.name) {
                                Link::Kept(href) => a href=(href) { code { (m.name) } },
                                Link::Without(href, why) => {
                                    a href=(href) { code { (m.name) } }
                                    " " small.why-link { "(" (why) ")" }
                                },
                                Link::None(why) => { code { (m.name) } " " small.why-link { "(" (why) ")" } },
                            }
                        }
                        td { (m.family) }
                        td.num { (human::count(m.layers)) }
                        td.num { (human::count(m.hidden_size)) }
                        (num(m.params as f64, human::params(m.params)))
                        (num(m.active_params as f64, human::params(m.active_params)))
                        (num(m.kv_bytes_per_token_bf16 as f64, human::bytes(m.kv_bytes_per_token_bf16 as f64)))
                        td { (m.display) }
                    }
                }
            }
        }
    })
}

/// Where a model's row links: its ledger with the rest of the scenario, or — when the scenario's
/// layout cannot run that model (tensor parallelism over a head count it does not divide, say) —
/// its ledger on one GPU, saying why; or no link when even that is refused.
enum Link {
    /// The ledger with the whole scenario.
    Kept(String),
    /// The ledger without the parallel layout, and the scenario's refusal.
    Without(String, String),
    /// No ledger: the refusal.
    None(String),
}

/// The parallel layout's keys.
const LAYOUT: &[&str] = &["tp", "pp", "ep", "dp", "micro_batches", "interconnect", "link_efficiency"];

fn link(q: &crate::query::PageQuery, catalog: &llm_ledger_core::Catalog, model: &str) -> Link {
    let with = [("model", Some(model))];
    let resolves = |q: &crate::query::PageQuery| q.request().ok().map(|r| r.resolve(catalog));
    match resolves(&q.clone_with(&with)) {
        Some(Ok(_)) => Link::Kept(q.href("/ledger", &with)),
        Some(Err(e)) => {
            let mut without: Vec<(&str, Option<&str>)> = LAYOUT.iter().map(|k| (*k, None)).collect();
            without.extend(with);
            match resolves(&q.clone_with(&without)) {
                Some(Ok(_)) if LAYOUT.iter().any(|k| q.get(k).is_some()) => {
                    Link::Without(q.href("/ledger", &without), format!("on one GPU: {e}"))
                }
                _ => Link::None(e.to_string()),
            }
        }
        None => Link::None("the scenario is refused".into()),
    }
}
