//! The GPU catalogue (the CLI's `gpus` listing), each linking to the ledger on that GPU.

use super::parts::{num, thead};
use super::PageCtx;
use crate::error::AppError;
use llm_ledger_report::catalog::GpuList;
use llm_ledger_report::human;
use maud::{html, Markup};

/// The page body.
pub(super) fn render(ctx: &PageCtx) -> Result<Markup, AppError> {
    let q = ctx.query;
    // The scenario is checked as on every page (the links below carry it to the ledger).
    let r = ctx.resolve()?;
    let list = GpuList::new(&r.catalog);
    let current = Some(r.scenario.gpu.name.clone());
    let peak = |v: Option<f64>| match v {
        Some(v) => num(v, human::sig3(v / 1e12)),
        None => html! { td.num { "—" } },
    };
    Ok(html! {
        h1 { "GPUs" }
        p.lead {
            "Dense tensor-core peaks (no 2:4 sparsity) in TFLOP/s; ridge = peak ÷ bandwidth in FLOP per byte: "
            "an operator with less intensity than its format's ridge is memory-bound. Prices are approximate on-demand list prices. "
            a href=(q.config_only().href("/api/gpus", &[])) { "JSON" }
        }
        table.listing #gpus {
            (thead(&[
                ("GPU", false), ("bf16", true), ("fp8", true), ("int8", true), ("fp4", true), ("HBM bandwidth", true),
                ("capacity", true), ("ridge bf16", true), ("ridge fp8", true), ("SMs", true), ("$/h ≈", true), ("description", false),
            ]))
            tbody {
                @for g in &list.gpus {
                    tr data-gpu=(g.name) aria-current=[(current.as_deref() == Some(g.name.as_str())).then_some("true")] {
                        td { a href=(q.href("/ledger", &[("gpu", Some(&g.name))])) { code { (g.name) } } }
                        (peak(Some(g.bf16_flops_per_s)))
                        (peak(g.fp8_flops_per_s))
                        (peak(g.int8_flops_per_s))
                        (peak(g.fp4_flops_per_s))
                        (num(g.memory_bandwidth_bytes_per_s, human::rate(g.memory_bandwidth_bytes_per_s, "B")))
                        (num(g.memory_bytes, human::bytes(g.memory_bytes)))
                        (num(g.ridge_bf16_flops_per_byte, human::intensity(Some(g.ridge_bf16_flops_per_byte))))
                        @match g.ridge_fp8_flops_per_byte {
                            Some(r) => (num(r, format!("{r:.0}"))),
                            None => td.num { "—" },
                        }
                        td.num { (g.sm_count) }
                        @match g.usd_per_gpu_hour {
                            Some(u) => (num(u, format!("{u:.2}"))),
                            None => td.num { "—" },
                        }
                        td { (g.display) }
                    }
                }
            }
        }
    })
}
