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
                        td { a href=(q.href("/ledger", &[("model", Some(&m.name))])) { code { (m.name) } } }
                        td { (m.family) }
                        td.num { (m.layers) }
                        td.num { (m.hidden_size) }
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
