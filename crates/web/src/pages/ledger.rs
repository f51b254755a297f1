//! The ledger page: the step summary, the roofline chart, and one row per operator with its
//! share of the step time — the CLI's `ledger` table, with the same numbers.

use super::parts::{at_both_sizes, experiments, figure, num, share_bar, summary, thead_marked};
use super::PageCtx;
use crate::error::AppError;
use llm_ledger_core::kinds::{Block, OpClass};
use llm_ledger_core::model::LayerSpec;
use llm_ledger_core::ops::{OpBuilder, OpKind};
use llm_ledger_core::zoom::block_name;
use llm_ledger_core::{Ledger, Scenario};
use llm_ledger_report::plot::{Roofline, RooflinePoint};
use llm_ledger_report::{human, LedgerReport, RowView};
use maud::{html, Markup};

/// The page body.
pub(super) fn render(ctx: &PageCtx) -> Result<Markup, AppError> {
    let r = ctx.resolve()?;
    let sc = &r.scenario;
    let ledger = Ledger::build(sc);
    let report = ctx.query.checked(LedgerReport::new(sc, &ledger))?;
    // Each operator's name links to it in Powers of ten (the first layer that has it).
    let first = first_layers(sc);
    let powers = ctx.query.hrefs_to("/powers-of-ten");
    let zoom: Vec<Option<String>> =
        ledger.rows.iter().map(|r| zoom_path(&first, r.op).map(|at| powers.with(&[("at", &at)]))).collect();
    // Each operator's marker links to its row below (the row's id is `op-<name>`).
    let page = ctx.self_href(&[], &[]);
    let link = |p: &RooflinePoint| Some(format!("{page}#{}", row_id(&p.op)));
    let roofline = Roofline::from_report(&report, &sc.gpu);
    let chart = at_both_sizes(|size| roofline.svg_linked(size, Some(&link)));
    let q = ctx.query;
    // Under the measured clock each row shows both clocks, as the CLI's table does.
    let measured = report.inputs.engine.is_some();
    let time_cols: &[(&str, bool)] =
        if measured { &[("roofline", true), ("expected", true)] } else { &[("time", true)] };
    let mut cols: Vec<(&str, bool)> = vec![
        ("operator", false),
        ("n", true),
        ("FLOPs", true),
        ("weights", true),
        ("KV", true),
        ("activations", true),
        ("bytes", true),
        ("FLOP/B", true),
        ("math", false),
    ];
    cols.extend_from_slice(time_cols);
    if measured {
        cols.push(("achieved", true));
    }
    cols.extend([("share of step", false), ("bound", false)]);
    Ok(html! {
        h1 { "Ledger" }
        p.headline #headline { (report.inputs.headline()) }
        (summary(&report))
        div.two {
            (figure(&chart, false, html! {
                    "Roofline on " (sc.gpu.display) ": each operator at its FLOPs per HBM byte and its attained FLOP/s. "
                    "Below a format's ridge point an operator is memory-bound. "
                    a href=(q.href("/plot/roofline.svg", &[])) download="roofline.svg" { "SVG" }
            }))
            (experiments(q, &r.catalog, &ctx.page.path(), &ledger, &report))
        }
        // On phones the time and its share come first, after the operator (app.css).
        table.ledger.results-first #ledger {
            caption { "Per operator, summed over the layers it occurs in" }
            (thead_marked(&cols, &[(time_cols[time_cols.len() - 1].0, "time"), ("share of step", "share")]))
            tbody {
                @for (i, row) in report.rows.iter().enumerate() { (row_html(row, zoom.get(i).cloned().flatten(), measured)) }
            }
            tfoot { (total_html(&report.total, measured)) }
        }
        div.notes {
            p { (report.counting_note) }
            @if let Some(engine) = &report.inputs.engine {
                p #clock-note {
                    "Expected per operator: the measured clock for " (engine) " (achievable bandwidth and peak, kernel costs, "
                    "fusion; docs/fidelity.md); the step is the sum of the rows. Roofline per operator: max(FLOPs ÷ "
                    (human::percent(report.inputs.compute_efficiency)) " of peak, bytes ÷ "
                    (human::percent(report.inputs.bandwidth_efficiency)) " of bandwidth). "
                    (llm_ledger_report::ledger::ACHIEVED_RULE) "."
                }
            } @else {
                p #clock-note {
                    "Roofline per operator: max(FLOPs ÷ " (human::percent(report.inputs.compute_efficiency)) " of peak, bytes ÷ "
                    (human::percent(report.inputs.bandwidth_efficiency)) " of bandwidth); the step is the sum of the rows."
                }
            }
            p #sources {
                strong { "Which numbers are these? " }
                "Hover a time to see where it comes from (" code { "time_source" } " in the JSON and CSV): "
                code { "table:…" } " the engine's measured kernel in AIConfigurator's tables for this GPU, engine and version; "
                code { "fitted:…" } " the measured clock's fitted model of that kind of kernel, where no table holds it; "
                code { "fused" } " the time it adds inside the kernel before it; "
                code { "link-model" } " a collective at α + bytes ÷ β; "
                code { "roofline" } " FLOPs and bytes at the efficiency inputs."
                @let fitted: Vec<&str> = report.rows.iter().filter(|r| r.time_source.as_deref().is_some_and(|s| s.starts_with("fitted:")) && r.time_share >= 0.01).map(|r| r.op.as_str()).collect();
                @if !fitted.is_empty() { " Here the fitted model times " (fitted.join(", ")) "." }
            }
            @for n in &report.notes { p.note { "note: " (n) } }
            p.downloads {
                "This ledger as "
                a href=(q.href("/api/ledger", &[])) { "JSON" } ", "
                a href=(q.href_with("/api/ledger", &[("format", "csv")])) { "CSV" }
                " — the same documents as " code { "llm-ledger ledger --format json|csv" } "."
            }
        }
    })
}

/// The id of an operator's row (what its roofline marker links to).
pub(super) fn row_id(op: &str) -> String {
    format!("op-{op}")
}

/// Each operator kind of the layer stack with the first layer that has it (the operators are those
/// of [`OpBuilder::layer`], as Powers of ten lists them; each distinct layer is built once, without
/// tiling).
fn first_layers(sc: &Scenario) -> Vec<(OpKind, usize)> {
    let b = OpBuilder::new(sc);
    let layers = sc.model.layers();
    let mut seen: Vec<&LayerSpec> = Vec::new();
    let mut first: Vec<(OpKind, usize)> = Vec::new();
    for (i, layer) in layers.iter().enumerate() {
        if seen.contains(&layer) {
            continue;
        }
        seen.push(layer);
        b.layer(layer, &mut |op| {
            if !first.iter().any(|(k, _)| *k == op.kind) {
                first.push((op.kind, i));
            }
        });
    }
    first
}

/// The zoom path of an operator kind (`first`: [`first_layers`]): the embedding, the final norm
/// and the LM head by name, a layer's operator in the first layer that has it; `None` for what
/// Powers of ten does not show (communication rows).
fn zoom_path(first: &[(OpKind, usize)], op: OpKind) -> Option<String> {
    match op.facts().class {
        OpClass::Collective(..) | OpClass::PipelineSend | OpClass::PipelineWait | OpClass::Host => None,
        OpClass::Gather
        | OpClass::Gemm
        | OpClass::FusedAttention
        | OpClass::UnfusedAttention
        | OpClass::Recurrence
        | OpClass::Scoring
        | OpClass::Elementwise => match op.block() {
            Block::Embedding | Block::Head => Some(op.short().to_string()),
            Block::Attention | Block::Mlp => {
                let (_, i) = first.iter().find(|(k, _)| *k == op)?;
                Some(format!("layer.{i}.{}.{}", block_name(op.block()), op.short()))
            }
        },
    }
}

/// One operator's row, its name a link to it in Powers of ten; `measured` adds the roofline time
/// and the achieved fraction beside the expected time.
fn row_html(r: &RowView, zoom: Option<String>, measured: bool) -> Markup {
    html! {
        tr data-op=(r.op) id=(row_id(&r.op)) {
            td {
                @match zoom {
                    Some(href) => a.zoomto href=(href) title="this operator in Powers of ten" { code { (r.op) } },
                    None => code { (r.op) },
                }
            }
            (cells(r, measured))
        }
    }
}

/// The total row.
fn total_html(r: &RowView, measured: bool) -> Markup {
    html! {
        tr data-op=(r.op) {
            th scope="row" { (r.op) }
            (cells(r, measured))
        }
    }
}

/// A row's numbers.
fn cells(r: &RowView, measured: bool) -> Markup {
    html! {
            td.num { (r.layers) }
            (num(r.flops, human::flops(r.flops)))
            (num(r.weight_bytes, human::bytes(r.weight_bytes)))
            (num(r.kv_bytes, human::bytes(r.kv_bytes)))
            (num(r.activation_bytes, human::bytes(r.activation_bytes)))
            (num(r.bytes, human::bytes(r.bytes)))
            td.num data-value=[r.intensity] { (human::intensity(r.intensity)) }
            td { (r.math.map(|m| m.name()).unwrap_or("")) }
            @if measured {
                td.num.roofline data-value=(r.roofline_time_s) { (human::seconds(r.roofline_time_s)) }
            }
            td.num.time data-value=(r.time_s) data-source=[r.time_source.as_deref()]
                title=[r.time_source.as_deref().map(|s| format!("time from: {s}"))] { (human::seconds(r.time_s)) }
            @if measured {
                td.num.achieved data-value=[r.achieved] { (r.achieved.map(human::percent).unwrap_or_else(|| "—".into())) }
            }
            td.share data-value=(r.time_share) { (share_bar(r.time_share)) span { (human::percent(r.time_share)) } }
            td class=(format!("bound {}", r.bound)) { (r.bound) }
    }
}
