//! The overview: the scenario at a glance, the model and the GPU behind it, the walk-through's
//! experiments, and a map of the pages.

use super::parts::{experiments, summary};
use super::{PageCtx, PAGES};
use crate::error::AppError;
use llm_ledger_core::{Ledger, MathFormat};
use llm_ledger_report::{human, LedgerReport};
use maud::{html, Markup};

/// The page body.
pub(super) fn render(ctx: &PageCtx) -> Result<Markup, AppError> {
    let r = ctx.resolve()?;
    let sc = &r.scenario;
    let ledger = Ledger::build(sc);
    let report = ctx.query.checked(LedgerReport::new(sc, &ledger))?;
    let q = ctx.query;
    let m = &sc.model;
    let g = &sc.gpu;
    let largest = report.rows.iter().max_by(|a, b| a.time_share.total_cmp(&b.time_share));
    Ok(html! {
        h1 { "Overview" }
        p.lead {
            "One forward step of " strong { (m.name) } " on " strong { (g.display) } ", counted per operator: "
            "the FLOPs it does, the HBM bytes it moves, and "
            @match &report.inputs.engine {
                Some(engine) => { "the time they take by the measured clock for " (engine) " (the expected time; the roofline's beside it in the ledger). " },
                None => { "the roofline time that follows. " },
            }
            "Change any control above; every page below follows the same scenario."
        }
        p.headline #headline { (report.inputs.headline()) }
        (summary(&report))
        @if let Some(top) = largest {
            p #largest {
                "The largest item is " code { (top.op) } " at " (human::percent(top.time_share)) " of the step ("
                (top.bound) "-bound, " (human::intensity(top.intensity)) " FLOP/B against a "
                (top.math.map(|m| m.name()).unwrap_or("")) " ridge of " (human::intensity(top.ridge_flops_per_byte)) "). "
                a href=(q.href("/ledger", &[])) { "See every operator in the ledger →" }
            }
        }
        div.cards {
            section.card #model-card {
                h2 { "Model" }
                dl {
                    dt { "name" } dd { (m.name) }
                    dt { "family" } dd { (m.family) }
                    dt { "layers" } dd { (human::count(m.num_layers())) }
                    dt { "hidden size" } dd { (human::count(m.hidden_size)) }
                    dt { "parameters" } dd data-value=(m.total_params()) { (human::params(m.total_params())) }
                    dt { "active per token" } dd data-value=(m.active_params()) { (human::params(m.active_params())) }
                    dt { "KV per token" } dd { (human::bytes(m.kv_elements_per_token() as f64 * sc.workload.kv.bytes())) " at " (sc.workload.kv.name()) }
                }
                a href=(q.href("/models", &[])) { "all models →" }
            }
            section.card #gpu-card {
                h2 { "GPU" }
                dl {
                    dt { "name" } dd { (g.display) }
                    dt { "bf16 peak" } dd { (human::rate(g.peak_flops_per_s.bf16, "FLOP")) }
                    @if let Some(p) = g.peak_flops_per_s.fp8 { dt { "fp8 peak" } dd { (human::rate(p, "FLOP")) } }
                    dt { "HBM bandwidth" } dd { (human::rate(g.memory_bandwidth_bytes_per_s, "B")) }
                    dt { "capacity" } dd { (human::bytes(g.memory_bytes)) }
                    dt { "bf16 ridge" } dd { (human::intensity(Some(g.ridge_flops_per_byte(MathFormat::Bf16)))) " FLOP/B" }
                }
                a href=(q.href("/gpus", &[])) { "all GPUs →" }
            }
        }
        (experiments(q, &r.catalog, "/ledger", &ledger, &report))
        section.directory aria-label="pages" {
            h2 { "Pages" }
            ul {
                @for p in PAGES.iter().skip(1) {
                    li {
                        a href=(q.href(&p.path(), &[])) { (p.title) }
                        " — " (p.summary)
                    }
                }
            }
        }
    })
}
