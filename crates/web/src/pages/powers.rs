//! Powers of ten (the Powers of Ten walk-through): one forward step as a tree — model (the layer stack), layer,
//! operation, tile — one level at a time. The node at `at` (a zoom path, as `llm-ledger zoom
//! --at`) with its children as a table (a layer's under their block's heading), at model level
//! the rest of the step beside the model and the step = the ledger's total, the breadcrumb back
//! up, the "Does it add up?" panel (the report's own comparison and sentences), and the walk-through's
//! four experiments as links, each sentence that says which way a number moves written from the
//! numbers beside it. Every number is the CLI's `zoom` report for the same inputs.

use super::parts::{by_trend, claim, num, ratio, share_bar, thead, thead_marked};
use super::{picture, PageCtx};
use crate::error::{shown, AppError};
use crate::query::PageQuery;
use llm_ledger_app::zoom::ZoomRequest;
use llm_ledger_core::zoom::{op_path, path_steps, Flip, GapKind, Level, TileLevel};
use llm_ledger_core::{Catalog, Phase, Scenario, ZoomTree};
use llm_ledger_report::zoom::ZoomRow;
use llm_ledger_report::{human, ZoomReport};
use maud::{html, Markup};

/// The page key of the zoom path.
pub(super) const AT: &str = "at";

/// The page's keys: the zoom path, and the picture's measure and layer expansion.
pub(super) const KEYS: &[&str] = &[AT, picture::SIZE, picture::EXPAND, PIN];

/// The page key of the pinned scenario: its scenario query (`batch=8&weights=int4`), as the URL
/// of this page would carry it.
pub(super) const PIN: &str = "pin";

/// The report of the node at `at` in the query's scenario, or — when `at` is not a node of this
/// scenario (FlashAttention fused the operator away, the model has fewer layers, an MoE model's
/// MLP has other operators) — of the deepest node on its path that is, with a sentence saying
/// what changed. A control change never ends on an error page.
fn report(q: &PageQuery, catalog: &Catalog, at: &str) -> Result<(Scenario, ZoomReport, Option<String>), AppError> {
    let (sc, _, report, notice) = report_and_tree(q, catalog, at)?;
    Ok((sc, report, notice))
}

/// As [`report`], with the tree (for the picture).
fn report_and_tree(
    q: &PageQuery,
    catalog: &Catalog,
    at: &str,
) -> Result<(Scenario, ZoomTree, ZoomReport, Option<String>), AppError> {
    let r = q.resolve(catalog)?;
    let tree = ZoomTree::build(&r.scenario);
    let req = ZoomRequest { at: Some(at.to_string()) };
    let (view, notice) = req.view(&tree, &r.scenario, true).map_err(|e| q.core_error(&e))?;
    let report = q.checked(ZoomReport::new(&r.scenario, &tree, &view))?;
    drop(view);
    Ok((r.scenario, tree, report, notice))
}

fn level_word(l: Level) -> &'static str {
    match l {
        Level::Model => "model",
        Level::Layer => "layer",
        Level::Op => "operator",
        Level::Tiles => "tiles",
    }
}

/// Beside the model level: the rest of the step (embedding, final norm, LM head, their
/// collectives, a pipeline stage's send and wait), and model + rest = step = the ledger's total.
fn rest_of_step(r: &ZoomReport, link: &dyn Fn(&str) -> String, ledger_href: &str) -> Markup {
    let Some(c) = &r.step else { return html! {} };
    let clock = r.clock();
    let row = |name: &str, id: &str, t: &llm_ledger_core::zoom::Totals| {
        html! {
            tr id=(id) {
                th scope="row" { (name) }
                (num(t.cost.flops, human::flops(t.cost.flops)))
                (num(t.cost.bytes(), human::bytes(t.cost.bytes())))
                (num(t.timing.time_s, human::seconds(t.timing.time_s)))
                @let share = if c.step.timing.time_s > 0.0 { t.timing.time_s / c.step.timing.time_s } else { 0.0 };
                td.share data-value=(share) { (share_bar(share)) span { (human::percent(share)) } }
            }
        }
    };
    html! {
        section.stack #rest-of-step aria-labelledby="rest-h" {
            h2 #rest-h { "Beside the model: the rest of the step" }
            p {
                "The model level is the layer stack: the 2 × parameters shortcut counts the layer stack, which is what this "
                "page sums. The embedding, the final norm and the LM head"
                @if r.inputs.parallel.is_some() { " (and here their collectives, and a pipeline stage's send and wait)" }
                " sit beside it, outside — excluded from the model rather than silently folded in, and counted here, so "
                "the step adds up."
            }
            table.ledger #rest {
                (thead(&[("part", false), ("FLOPs", true), ("HBM bytes", true), (&format!("{clock} time"), true), ("share of the step", false)]))
                tbody {
                    (row("model: the layer stack", "model-row", &c.model))
                    @for part in &r.rest {
                        tr data-path=[part.path.as_deref()] {
                            td { @match &part.path { Some(p) => a.zoom href=(link(p)) { code { (part.name) } }, None => (part.name) } }
                            (num(part.flops, human::flops(part.flops)))
                            (num(part.bytes, human::bytes(part.bytes)))
                            (num(part.time_s, human::seconds(part.time_s)))
                            td.share data-value=(part.time_share) { (share_bar(part.time_share)) span { (human::percent(part.time_share)) } }
                        }
                    }
                }
                tfoot { (row("step = model + rest", "step-row", &c.step)) }
            }
            p #step-check data-exact=(c.exact) data-flops=(c.step.cost.flops) data-ledger-flops=(c.ledger.cost.flops) data-time=(c.step.timing.time_s) data-ledger-time=(c.ledger.timing.time_s) {
                @if c.exact {
                    "The step is the " a href=(ledger_href) { "ledger" } "'s total, exactly: "
                } @else {
                    "The step differs from the " a href=(ledger_href) { "ledger" } "'s total: "
                }
                (human::flops(c.ledger.cost.flops)) ", " (human::bytes(c.ledger.cost.bytes())) ", " (human::seconds(c.ledger.timing.time_s)) "."
            }
        }
    }
}

/// Pin the scenario shown, or say which one is pinned and unpin it.
fn pin_bar(ctx: &PageCtx, q: &PageQuery, pin: &Option<ZoomReport>) -> Markup {
    let here = pin_of(q);
    html! {
        p.pinbar #pinbar {
            @match (q.extra(PIN), pin) {
                (Some(p), Some(r)) => {
                    "Compared with the pinned scenario " code #pinned-scenario data-pin=(shown(p)) { (r.inputs.headline()) }
                    ": every number above shows its change (Δ) and ratio. "
                    a #unpin href=(ctx.self_href(&[], &[(PIN, None)])) { "Unpin" }
                    " · "
                    a #pin href=(ctx.self_href(&[], &[(PIN, Some(&here))])) { "pin this one instead" }
                },
                _ => {
                    a #pin href=(ctx.self_href(&[], &[(PIN, Some(&here))])) { "Pin this scenario" }
                    " — then change the controls: every number shows its change against it."
                },
            }
        }
    }
}

/// The page keys for the zoom path `p`, the picture's own kept.
fn keep<'a>(q: &'a PageQuery, p: &'a str) -> Vec<(&'static str, Option<&'a str>)> {
    vec![
        (AT, Some(p)),
        (picture::SIZE, q.extra(picture::SIZE)),
        (picture::EXPAND, q.extra(picture::EXPAND)),
        (PIN, q.extra(PIN)),
    ]
}

/// The pin of the default scenario (an empty parameter would mean "no pin").
const PIN_DEFAULT: &str = "default";

/// The query's scenario as a pin (its scenario pairs, URL-encoded, or [`PIN_DEFAULT`]; an
/// uploaded model travels in the URL beside it).
fn pin_of(q: &PageQuery) -> String {
    match serde_urlencoded::to_string(&q.scenario).unwrap_or_default() {
        s if s.is_empty() => PIN_DEFAULT.to_string(),
        s => s,
    }
}

/// The tree and the report of the pinned scenario at `path` (or the deepest level of it that
/// exists there).
fn pinned(q: &PageQuery, catalog: &Catalog, path: &str) -> Option<(ZoomTree, ZoomReport)> {
    let pin = q.extra(PIN)?;
    let pq = if pin.trim() == PIN_DEFAULT { PageQuery::default() } else { PageQuery::parse(Some(pin), &[]).ok()? };
    let pq = PageQuery { config: q.config.clone(), ..pq };
    report_and_tree(&pq, catalog, path).ok().map(|(_, t, r, _)| (t, r))
}

/// A number against the pinned one: Δ and ratio.
fn delta(now: Option<f64>, pin: Option<f64>, fmt: &dyn Fn(f64) -> String, id: &str) -> Markup {
    let (Some(a), Some(b)) = (now, pin) else { return html! {} };
    let ratio = if b != 0.0 { Some(a / b) } else { None };
    let d = a - b;
    let sign = if d < 0.0 { "−" } else { "+" };
    html! {
        dd.sub.delta id=(id) data-pinned=(b) data-ratio=[ratio] {
            "pinned " (fmt(b)) " · Δ " (sign) (fmt(d.abs()))
            @if let Some(r) = ratio { " · " (human::ratio(r)) }
        }
    }
}

/// The page body.
pub(super) fn render(ctx: &PageCtx) -> Result<Markup, AppError> {
    let q = ctx.query;
    let at = q.extra(AT).unwrap_or(llm_ledger_app::zoom::DEFAULT_AT);
    let catalog = &ctx.state.catalog;
    let (sc, tree, report, notice) = report_and_tree(q, catalog, at)?;
    // A block's path (`layer.0.mlp`) is the layer with its block marked: keep it as asked.
    let path = match &report.focus {
        Some(b) => format!("{}.{b}", report.path),
        None => report.path.clone(),
    };
    let measure = picture::Measure::parse(q.extra(picture::SIZE));
    let expand = q.extra(picture::EXPAND).is_some_and(|v| v.trim() == "1");
    let zoom_href = |p: &str| ctx.self_href(&[], &keep(q, p));
    let switch = |k: &str, v: Option<&str>| {
        let mut pairs = keep(q, &path);
        pairs.retain(|(key, _)| *key != k);
        pairs.push((k, v));
        ctx.self_href(&[], &pairs)
    };
    let (pin_tree, pin) = pinned(q, catalog, &path).unzip();
    let clock = llm_ledger_report::zoom::clock_word(&sc);
    let flash = sc.workload.flash_attention;
    let flash_href = ctx.self_href(&[("flash", Some(if flash { "off" } else { "on" }))], &[]);
    let (picture, dataflow) = match tree.node(&path) {
        Ok(view) => (
            picture::picture(&tree, &view, measure, expand, &zoom_href, &switch, pin_tree.as_ref(), clock),
            picture::dataflow(&view, clock, flash, &zoom_href, &flash_href),
        ),
        Err(_) => (html! {}, html! {}),
    };
    let link = |p: &str| zoom_href(p);
    let n = &report.node;
    let exact = matches!(report.level, Level::Model | Level::Layer | Level::Op);
    // The documents take the scenario and the zoom path only (not the page's pin or picture keys).
    let api = q.href_with("/api/zoom", &[(AT, &path)]);
    let api_csv = q.href_with("/api/zoom", &[(AT, &path), ("format", "csv")]);
    let what = match (report.level, &report.focus) {
        (Level::Model, _) => match sc.model.layer_kinds().as_slice() {
            [_] => format!("the layer stack, {} layers", tree.num_layers),
            kinds => format!(
                "the layer stack, {} layers: {}",
                tree.num_layers,
                kinds.iter().map(|(k, n, _)| format!("{n} × {k}")).collect::<Vec<_>>().join(", ")
            ),
        },
        (Level::Layer, Some(b)) => format!("the numbers of {}, its {b} block's operators marked below", report.path),
        _ => String::new(),
    };
    Ok(html! {
        h1 { "Powers of ten" }
        p.lead {
            "One forward pass at four magnifications. Each level's totals are built from the level below, so the levels "
            "cannot disagree — and the places where the sums stop being exact are where memory traffic and wasted "
            "arithmetic come from. Click a row to zoom in; use the breadcrumb to go back up."
        }
        p.headline #headline { (report.inputs.headline()) }
        @if let Some(n) = &notice {
            p.notice #zoom-notice role="status" data-asked=(shown(at)) { (shown(n)) }
        }
        span #zoom-top {}
        nav.breadcrumb #zoom-path aria-label="zoom path" {
            ol #breadcrumb {
                @for (i, crumb) in report.breadcrumb.iter().enumerate() {
                    li {
                        @if i + 1 == report.breadcrumb.len() {
                            span aria-current="location" data-path=(crumb) { (crumb_label(crumb)) }
                        } @else {
                            a href=(link(crumb)) data-path=(crumb) { (crumb_label(crumb)) }
                        }
                    }
                }
            }
        }
        dl.summary #node data-path=(path) data-level=(level_word(report.level)) {
            div { dt { "level" } dd { (level_word(report.level)) } dd.sub { code { (path) } @if !what.is_empty() { " · " (what) } } }
            div {
                dt { (if exact { "FLOPs" } else { "FLOPs executed" }) } dd #node-flops data-value=(n.flops) { (human::flops(n.flops)) }
                @if let Some(p) = &pin { (delta(Some(n.flops), Some(p.node.flops), &|v| human::flops(v), "node-flops-delta")) }
            }
            div {
                dt { (if exact { "HBM bytes" } else { "bytes the tiles move" }) } dd #node-bytes data-value=(n.bytes) { (human::bytes(n.bytes)) }
                @if let Some(p) = &pin { (delta(Some(n.bytes), Some(p.node.bytes), &|v| human::bytes(v), "node-bytes-delta")) }
            }
            div {
                dt { "intensity" } dd #node-intensity data-value=[n.intensity] { (human::intensity(n.intensity)) " FLOP/B" }
                @if let Some(p) = &pin { (delta(n.intensity, p.node.intensity, &|v| human::intensity(Some(v)), "node-intensity-delta")) }
            }
            div {
                dt #node-time-label data-clock=(if exact { clock } else { "tile model" }) {
                    (if exact { format!("{clock} time") } else { "tile-model time".to_string() })
                }
                dd #node-time data-value=(n.time_s) { (human::seconds(n.time_s)) }
                @if let Some(b) = &n.bound { dd.sub #node-bound data-bound=(b) { (b) "-bound (" (clock) ")" } }
                @if exact && report.inputs.engine.is_some() {
                    dd.sub #node-roofline data-value=(n.roofline_time_s) { " · roofline " (human::seconds(n.roofline_time_s)) }
                }
                @if let Some(p) = &pin {
                    (delta(Some(n.time_s), Some(p.node.time_s), &|v| human::seconds(v), "node-time-delta"))
                    @if let Some(pb) = &p.node.bound { @if Some(pb) != n.bound.as_ref() { dd.sub.delta #bound-flip { "pinned: " (pb) "-bound" } } }
                }
            }
        }
        (pin_bar(ctx, q, &pin))
        (picture)
        (dataflow)
        @if report.level == Level::Model { (rest_of_step(&report, &link, &q.href("/ledger", &[]))) }
        div.two {
            div {
                (children_table(&report, &link, &repeats(&tree, &report, expand)))
                (addup(&report, &sc, q, catalog))
            }
            (experiments(ctx, catalog, &sc, &tree, &report))
        }
        p.downloads.notes {
            "This node as "
            a href=(api) { "JSON" } ", "
            a href=(api_csv) { "CSV" }
            " — the same documents as " code { "llm-ledger zoom --at " (path) " --format json|csv" } "."
        }
    })
}

/// A breadcrumb's label: `layer.0`, an operator with its block (`mlp.up`), `tiles`, `lm_head`.
fn crumb_label(path: &str) -> String {
    let steps = path_steps(path);
    match steps.as_slice() {
        [layer, block, op] if layer.starts_with("layer.") => format!("{block}.{op}"),
        [.., last] => last.clone(),
        [] => "model".into(),
    }
}

/// At model level, for each child row: how many identical layers its group holds (on the first
/// layer of a run of identical neighbours), or 0 for the rest of the run (hidden unless the page
/// expands the layers); 1 elsewhere.
fn repeats(tree: &ZoomTree, r: &ZoomReport, expand: bool) -> Vec<usize> {
    let g = &tree.layer_group;
    r.children
        .iter()
        .map(|c| {
            let Some(i) =
                c.path.as_deref().and_then(|p| p.strip_prefix("layer.")).and_then(|i| i.parse::<usize>().ok())
            else {
                return 1;
            };
            if r.level != Level::Model || expand {
                return 1;
            }
            let Some(j) = i.checked_sub(tree.first_layer) else { return 1 };
            if j > 0 && g.get(j - 1) == g.get(j) {
                return 0;
            }
            g.get(j..).map_or(1, |rest| rest.iter().take_while(|x| **x == g[j]).count())
        })
        .collect()
}

fn children_table(r: &ZoomReport, link: &dyn Fn(&str) -> String, repeats: &[usize]) -> Markup {
    let exact = r.children.iter().all(|c| c.weight_bytes.is_some());
    let a = &r.addup.addup;
    // Tile classes have no time of their own: their share is of the bytes.
    let total_bytes: f64 = r.children.iter().map(|c| c.bytes).sum();
    let share = |c: &ZoomRow| {
        if exact {
            c.time_share
        } else if total_bytes > 0.0 {
            c.bytes / total_bytes
        } else {
            0.0
        }
    };
    let clock = r.clock();
    let time_col = if exact { format!("{clock} time") } else { "tile-model time".to_string() };
    // A hybrid's recurrent layers read and write per-sequence state: a column beside the KV.
    let with_state = r.children.iter().any(|c| c.state_bytes.unwrap_or(0.0) > 0.0);
    let cols = 9 + usize::from(exact && with_state);
    let mut exact_head = vec![("child", false), ("FLOPs", true), ("weights", true), ("KV", true)];
    if with_state {
        exact_head.push(("state", true));
    }
    exact_head.extend([
        ("activations", true),
        ("bytes", true),
        ("FLOP/B", true),
        (time_col.as_str(), true),
        ("share of time", false),
    ]);
    // A model whose layers differ names each layer's kind under its name.
    let kinds_differ = r.level == Level::Model
        && r.children.iter().filter_map(|c| c.kind.as_deref()).any(|k| Some(k) != r.children[0].kind.as_deref());
    // At layer level the operators come under their block's heading (attention, then the MLP).
    let heading = |i: usize| -> Option<&str> {
        let b = r.children.get(i)?.block.as_deref()?;
        (r.level == Level::Layer && (i == 0 || r.children[i - 1].block.as_deref() != Some(b))).then_some(b)
    };
    let focus = r.focus.as_deref();
    html! {
        // On phones the time and its share come first, after the child (app.css).
        table.ledger.results-first #children {
            caption {
                @if r.children.is_empty() { "No children: " (r.path) " is a leaf" }
                @else if r.level == Level::Model { "What the model is made of: its layers (click a row to zoom in)" }
                @else if r.level == Level::Layer { "What this layer is made of: its operators, by block (click a row to zoom in)" }
                @else if exact { "What this level is made of (click a row to zoom in)" }
                @else { "The tiles, by class: how many, what they compute and what they load" }
            }
            @if exact {
                (thead_marked(&exact_head, &[(&time_col, "time"), ("share of time", "share")]))
            } @else {
                (thead_marked(&[("child", false), ("count", true), ("useful FLOPs", true), ("executed FLOPs", true),
                    ("bytes", true), ("FLOP/B", true), (&time_col, true), ("share of bytes", false)],
                    &[(&time_col, "time"), ("share of bytes", "share")]))
            }
            tbody {
                @for (i, (c, n)) in r.children.iter().zip(repeats.iter().copied().chain(std::iter::repeat(1))).enumerate() {
                    @if let Some(b) = heading(i) {
                        tr.block-heading data-block=(b) class=[(focus == Some(b)).then_some("focus")] {
                            th colspan=(cols) scope="rowgroup" { (block_title(b)) }
                        }
                    }
                    @let marked = focus.is_some() && c.block.as_deref() == focus;
                    tr data-path=[c.path.as_deref()] data-block=[c.block.as_deref()] class=[(n == 0).then_some("repeat").or(marked.then_some("focus"))] {
                        td {
                            @match &c.path {
                                Some(p) => a.zoom href=(link(p)) { code { (c.name) } },
                                None => (c.name),
                            }
                            @if n > 1 { " " span.times title="identical layers: the numbers are one layer's" { "× " (n) } }
                            @if kinds_differ { @if let Some(k) = &c.kind { br; span.kind data-kind=(k) { (k) } } }
                        }
                        @if exact {
                            (num(c.flops, human::flops(c.flops)))
                            (opt_bytes(c.weight_bytes))
                            (opt_bytes(c.kv_bytes))
                            @if with_state { (opt_bytes(c.state_bytes)) }
                            (opt_bytes(c.activation_bytes))
                        } @else {
                            td.num data-value=(c.count) { (human::si(c.count, "").trim_end()) }
                            (num(c.flops, human::flops(c.flops)))
                            (num(c.executed_flops, human::flops(c.executed_flops)))
                        }
                        (num(c.bytes, human::bytes(c.bytes)))
                        td.num data-value=[c.intensity] { (human::intensity(c.intensity)) }
                        @if c.time_s > 0.0 { td.num.time data-value=(c.time_s) { (human::seconds(c.time_s)) } } @else { td.num.time {} }
                        td.share data-value=(share(c)) { (share_bar(share(c))) span { (human::percent(share(c))) } }
                    }
                }
            }
            @if !a.leaf {
                tfoot {
                    tr #sum {
                        th scope="row" { @if r.level == Level::Model { "Σ children = the model" } @else { "Σ children" } }
                        @if exact {
                            (num(a.children_flops, human::flops(a.children_flops)))
                            td {} td {} td {}
                            @if with_state { td {} }
                        } @else {
                            td {}
                            @let useful: f64 = r.children.iter().map(|c| c.flops).sum();
                            (num(useful, human::flops(useful)))
                            (num(a.children_flops, human::flops(a.children_flops)))
                        }
                        (num(a.children_bytes, human::bytes(a.children_bytes)))
                        td {} td.time {} td.share {}
                    }
                }
            }
        }
    }
}

/// A block's heading at layer level.
fn block_title(b: &str) -> &str {
    match b {
        "attn" => "attention (attn)",
        "mlp" => "MLP (mlp)",
        other => other,
    }
}

fn opt_bytes(v: Option<f64>) -> Markup {
    match v {
        Some(b) => num(b, human::bytes(b)),
        None => html! { td.num {} },
    }
}

/// The "Does it add up?" panel: parent against children, the report's sentences, and the walk-through's
/// three "why" notes where they apply.
fn addup(r: &ZoomReport, sc: &Scenario, q: &PageQuery, catalog: &Catalog) -> Markup {
    // At the tile level the comparison that matters is one level up: the operator against its
    // tiles (the tile classes add up to the tiles exactly).
    let op_level = (r.level == Level::Tiles)
        .then(|| report(q, catalog, r.path.trim_end_matches(".tiles")).ok().map(|(_, op, _)| op.addup))
        .flatten();
    let view = op_level.as_ref().unwrap_or(&r.addup);
    let a = &view.addup;
    let (parent, children) = match r.level {
        Level::Tiles | Level::Op => ("the operator", "its tiles"),
        _ => ("this node", "Σ children"),
    };
    let tiles = matches!(r.level, Level::Op | Level::Tiles) && r.tiles.as_ref().is_some_and(|t| t.totals().is_some());
    let gemm = r.tiles.as_ref().and_then(|t| match t {
        TileLevel::Gemm { shape, choice } => Some((shape, choice)),
        _ => None,
    });
    html! {
        section.addup #addup data-exact=(a.exact) aria-labelledby="addup-h" {
            h2 #addup-h { "Does it add up?" }
            @if a.leaf {
                p { "This node has no children to add up." }
            } @else {
                p.verdict class=(if a.exact { "exact" } else { "inexact" }) {
                    @if a.exact { "Yes: the children add up to this node exactly." }
                    @else { "No: zoomed into tiles, the numbers grow — and that growth is the point." }
                }
                table.addup {
                    (thead(&[("measure", false), (parent, true), (children, true), ("difference", true), ("ratio", true)]))
                    tbody {
                        tr {
                            th scope="row" { "FLOPs" }
                            (num(a.parent_flops, human::flops(a.parent_flops)))
                            (num(a.children_flops, human::flops(a.children_flops)))
                            (num(a.flops_difference, human::flops(a.flops_difference)))
                            td.num #flops-ratio data-value=(view.flops_ratio) { (human::ratio(view.flops_ratio)) }
                        }
                        tr {
                            th scope="row" { "bytes" }
                            (num(a.parent_bytes, human::bytes(a.parent_bytes)))
                            (num(a.children_bytes, human::bytes(a.children_bytes)))
                            (num(a.bytes_difference, human::bytes(a.bytes_difference)))
                            td.num #bytes-ratio data-value=(view.bytes_ratio) { (human::ratio(view.bytes_ratio)) }
                        }
                    }
                }
            }
            @if let Some((_, choice)) = gemm {
                p.reuse {
                    "Reuse factor " strong #reuse-factor data-value=(choice.best.reuse_factor) { (human::ratio(choice.best.reuse_factor)) }
                    ": the tiles move " (human::bytes(choice.best.tiled_bytes)) " where an ideal machine, reading each operand once, moves "
                    (human::bytes(choice.best.ideal_bytes)) "."
                }
            }
            ul.explanation {
                @for line in &r.explanation { li { (line.trim_start()) } }
            }
            @if let Some(g) = &r.gap {
                table.gap #gap {
                    caption { "FLOPs per token of the model (the layer stack) against 2 × its parameters, by part" }
                    (thead(&[("part", false), ("FLOPs per token", true)]))
                    tbody {
                        tr { th scope="row" { "2 × the stack's parameters" } (num(g.two_params_flops, human::flops(g.two_params_flops))) }
                        @for item in &g.items {
                            tr { td { (gap_name(item.kind)) } (num(item.flops_per_token, signed_flops(item.flops_per_token))) }
                        }
                        tr #gap-model { th scope="row" { "= FLOPs per token of the model" } (num(g.flops_per_token, human::flops(g.flops_per_token))) }
                        tr { th scope="row" colspan="2" { "the rest of the step, beside the model: against 2 × its parameters" } }
                        @for item in g.outside.iter().filter(|i| i.kind != GapKind::FinalNorm || sc.model.final_norm.is_some()) {
                            tr { td { (gap_name(item.kind)) } (num(item.flops_per_token, signed_flops(item.flops_per_token))) }
                        }
                    }
                    tfoot {
                        tr { th scope="row" { "2 × all parameters" } (num(g.step_two_params_flops, human::flops(g.step_two_params_flops))) }
                        tr #gap-step { th scope="row" { "= FLOPs per token of the step" } (num(g.step_flops_per_token, human::flops(g.step_flops_per_token))) }
                    }
                }
            }
            @if tiles {
                p.why {
                    strong { "Why don't the bytes add up at the tile level? " }
                    "A tile cannot keep the whole matrix: every left-hand strip is re-read by each tile in its row, and every "
                    "right-hand strip by each tile in its column. The arithmetic is counted correctly at every level; only the "
                    "traffic grows as you look closer, by the factor tiling exists to minimise."
                }
                p.why {
                    strong { "Why do the FLOPs sometimes not add up either? " }
                    "A tile grid that does not divide the output computes rows and columns that are thrown away. Small or "
                    "awkwardly shaped matrices pay this; large ones barely notice."
                }
            }
            @if r.level == Level::Model {
                p.why {
                    strong { "Why is the model total not the model's parameter count × 2? " }
                    "That shortcut counts the layer stack, which is what this page sums. The embedding table and the projection "
                    "onto the vocabulary sit outside it, and are excluded here rather than silently folded in (they are the rest "
                    "of the step, beside the model). Within the stack, attention scores are FLOPs without parameters, norms and "
                    "activations are vector work, and MoE experts a token skips do nothing; the table above adds the parts up."
                }
            }
            @if let Some((shape, _)) = gemm {
                p {
                    a #open-tiling href=(tiling_href(q, sc, shape)) { "Open this GEMM in GEMM tiling →" }
                    " (" (human::count(shape.m)) " × " (human::count(shape.n)) " × " (human::count(shape.k))
                    @if shape.batch > 1 { ", one of " (human::count(shape.batch)) " instances" }
                    ")"
                }
            }
        }
    }
}

fn signed_flops(v: f64) -> String {
    if v < 0.0 {
        format!("−{}", human::flops(-v))
    } else {
        format!("+{}", human::flops(v))
    }
}

fn gap_name(k: GapKind) -> &'static str {
    match k {
        GapKind::EmbeddingGather => "embedding: a gather, not a product",
        GapKind::FinalNorm => "final norm: vector work on its scales",
        GapKind::LmHead => "LM head: only the tokens that get logits",
        GapKind::InactiveExperts => "MoE experts a token is not routed to",
        GapKind::AttentionScores => "attention over the context (no parameters)",
        GapKind::Elementwise => "norms, RoPE, activations, residuals, softmax",
        GapKind::LayerWeights => "layer GEMMs against their parameters",
    }
}

/// The GEMM tiling page with this GEMM's shape and precisions (the scenario's GPU and efficiencies
/// travel with the state).
fn tiling_href(q: &PageQuery, _sc: &Scenario, shape: &llm_ledger_core::tiling::GemmShape) -> String {
    let (m, n, k) = (shape.m.to_string(), shape.n.to_string(), shape.k.to_string());
    let (a, b, c) = (shape.a.name(), shape.b.name(), shape.c.name());
    let base = PageQuery { extra: Vec::new(), ..q.clone() };
    base.href_page(
        "/gemm-tiling",
        &[("weights", Some(&b)), ("activations", Some(&a))],
        &[("m", Some(&m)), ("n", Some(&n)), ("k", Some(&k)), ("output", (c != a).then_some(c.as_str()))],
    )
}

/// The zoom path of the tiles of the first layer's MLP up-projection, or else of its slowest GEMM
/// (the Powers of Ten walk-through's fourth experiment), in the first layer the GPU shown runs.
fn largest_gemm_tiles(tree: &ZoomTree) -> Option<String> {
    let index = tree.first_layer;
    let layer = tree.layer(index)?;
    let gemms = layer.ops.iter().filter(|o| matches!(o.tiles, TileLevel::Gemm { .. }));
    let op = gemms
        .clone()
        .find(|o| o.name() == "up")
        .or_else(|| gemms.reduce(|a, b| if b.timing.time_s > a.timing.time_s { b } else { a }))?;
    Some(format!("{}.tiles", op_path(index, op)))
}

/// The Powers of Ten walk-through's third experiment made visible (the app's
/// [`int4_flip`](llm_ledger_app::zoom::int4_flip), [`llm_ledger_core::zoom::weight_flip`]: the first power-of-two decode batch
/// at which the operator the tile experiment uses is compute-bound with INT4 weights, and
/// memory-bound there with the scenario's own, each by the scenario's clock), with its zoom path.
fn int4_flip(q: &PageQuery, catalog: &Catalog, sc: &Scenario, tree: &ZoomTree) -> Option<(Flip, String)> {
    let path = largest_gemm_tiles(tree)?.trim_end_matches(".tiles").to_string();
    let view = tree.node(&path).ok()?;
    let int4 = || q.clone_with(&[("weights", Some("int4"))]).resolve(catalog).map(|r| r.scenario);
    llm_ledger_app::zoom::int4_flip(sc, &view, int4).ok()?.map(|f| (f, path))
}

/// One side of the flip in words: `memory-bound with bf16 weights (math 12.3 µs < memory 20.1 µs)`.
fn flip_side(side: &llm_ledger_core::zoom::FlipSide, weights: &str) -> Markup {
    let t = &side.timing;
    let cmp = if t.compute_s > t.memory_s { ">" } else { "≤" };
    html! {
        span.flip-side data-bound=(side.bound.name()) data-compute=(t.compute_s) data-memory=(t.memory_s) data-intensity=[side.intensity] {
            (side.bound.name()) "-bound with " (weights) " weights (math " (human::seconds(t.compute_s)) " " (cmp)
            " memory " (human::seconds(t.memory_s)) ", " (human::intensity(side.intensity)) " FLOP/B)"
        }
    }
}

/// The numbers of the current node and of the same node in another scenario.
struct After {
    intensity: Option<f64>,
    bytes: f64,
    time_s: f64,
}

/// The Powers of Ten walk-through's four "try this" experiments, from the current node, each with what it changes there
/// before and after; every sentence that says which way a number moves is written from the
/// numbers beside it ([`claim`]).
fn experiments(ctx: &PageCtx, catalog: &Catalog, sc: &Scenario, tree: &ZoomTree, r: &ZoomReport) -> Markup {
    let q = ctx.query;
    let decode = sc.workload.phase == Phase::Decode;
    let batch = sc.workload.contexts.batch();
    let batch_up = batch.saturating_mul(8).clamp(8, llm_ledger_core::limits::MAX_BATCH).to_string();
    let at = match &r.focus {
        Some(b) => format!("{}.{b}", r.path),
        None => r.path.clone(),
    };
    let here = After { intensity: r.node.intensity, bytes: r.node.bytes, time_s: r.node.time_s };
    let after = |scenario: &[(&str, Option<&str>)]| -> Option<After> {
        let (_, r2, notice) = report(&q.clone_with(scenario), catalog, &at).ok()?;
        // The same node only: another level's numbers are not a before and after.
        (notice.is_none() && r2.level == r.level).then_some(After {
            intensity: r2.node.intensity,
            bytes: r2.node.bytes,
            time_s: r2.node.time_s,
        })
    };
    let clock = r.clock();
    let effect = |a: &Option<After>| -> Markup {
        match a {
            Some(a) => html! {
                span.effect {
                    "Here: intensity " (human::intensity(here.intensity)) " → " span.after data-value=[a.intensity] { (human::intensity(a.intensity)) }
                    " FLOP/B, bytes " (human::bytes(here.bytes)) " → " (human::bytes(a.bytes)) ", " (clock) " time "
                    (human::seconds(here.time_s)) " → " (human::seconds(a.time_s)) "."
                }
            },
            None => html! {},
        }
    };
    let intensity =
        |a: &Option<After>, words| claim("intensity", here.intensity, a.as_ref().and_then(|a| a.intensity), words);
    let bytes = |a: &Option<After>, words| claim("bytes", Some(here.bytes), a.as_ref().map(|a| a.bytes), words);
    let times = |a: &Option<After>| match (here.intensity, a.as_ref().and_then(|a| a.intensity)) {
        (Some(x), Some(y)) => format!(" ({})", ratio(x, y)),
        _ => String::new(),
    };
    let phase_to = if decode { "prefill" } else { "decode" };
    let phase_overrides = [("phase", Some(phase_to))];
    let batch_overrides = [("phase", Some("decode")), ("batch", Some(batch_up.as_str())), ("contexts", None)];
    let int4 = [("weights", Some("int4"))];
    let tiles_at = largest_gemm_tiles(tree);
    let now = pin_of(q);
    let compare = |overrides: &[(&str, Option<&str>)], id: &str| -> Markup {
        html! {
            " " a.compare id=(id) href=(ctx.self_href(overrides, &[(PIN, Some(&now))])) title="show it with this scenario pinned: every number with its change" {
                "compare →"
            }
        }
    };
    let (ap, ab, aw) = (after(&phase_overrides), after(&batch_overrides), after(&int4));
    let in_int4 = sc.weights.mlp.name() == "int4";
    let flip = if in_int4 { None } else { int4_flip(q, catalog, sc, tree) };
    html! {
        section.experiments aria-label="try this" {
            h2 { "Try this" }
            ol {
                li {
                    a.experiment #exp-phase href=(ctx.self_href(&phase_overrides, &[])) {
                        @if decode { "Switch phase from decode to prefill" } @else { "Switch phase from prefill to decode" }
                    }
                    @if ap.is_some() {
                        ": here the arithmetic intensity " (intensity(&ap, ["recovers", "collapses", "barely moves"])) (times(&ap)) "."
                    } @else { "." }
                    " Nothing about the model changes — only how many query rows share the weights that had to be fetched. "
                    (effect(&ap))
                    (compare(&phase_overrides, "cmp-phase"))
                }
                li {
                    a.experiment #exp-batch href=(ctx.self_href(&batch_overrides, &[])) { "Raise the batch size in decode (to " (batch_up) ")" }
                    @if ab.is_some() {
                        ": here intensity " (intensity(&ab, ["climbs", "falls", "barely moves"])) (times(&ab))
                        (by_trend(here.intensity, ab.as_ref().and_then(|a| a.intensity), [
                            ", because the same fetched weights now serve more rows. ",
                            ". ",
                            ": here the bytes grow with the rows too (the KV cache, activations, padded tiles). ",
                        ]))
                    } @else { ". " }
                    (effect(&ab))
                    (compare(&batch_overrides, "cmp-batch"))
                }
                @if !in_int4 {
                    li {
                        a.experiment #exp-int4 href=(ctx.self_href(&int4, &[])) { "Drop the weights to INT4" }
                        @if aw.is_some() {
                            ": here bytes " (bytes(&aw, ["rise", "fall", "barely move"])) " and intensity " (intensity(&aw, ["rises", "falls", "barely moves"])) (times(&aw)) "; "
                        } @else { ": " }
                        "an operation can flip from memory-bound to compute-bound without its FLOPs changing. "
                        (effect(&aw))
                        (compare(&int4, "cmp-int4"))
                        @if let Some((f, path)) = &flip {
                            @let b = f.batch.to_string();
                            @let at_b = q.clone_with(&[("batch", Some(&b)), ("contexts", None), ("phase", Some("decode"))]);
                            @let pin_b = pin_of(&at_b);
                            " " span.effect #int4-flip data-batch=(f.batch) data-clock=(clock) {
                                "The flip needs a batch: at decode batch " (human::count(f.batch)) " (the smallest power of two where it happens, by the "
                                (clock) " clock) " code { (path) } " is "
                                (flip_side(&f.from, &sc.weights.mlp.name())) " and " (flip_side(&f.to, "int4")) ". "
                                a.compare #cmp-int4-flip href=(q.href_page(&ctx.page.path(), &[("batch", Some(&b)), ("contexts", None), ("phase", Some("decode")), ("weights", Some("int4"))], &[(AT, Some(path)), (PIN, Some(&pin_b))])) {
                                    "See the flip →"
                                }
                            }
                        }
                    }
                }
                @if let Some(t) = &tiles_at {
                    li {
                        @if r.path == *t {
                            "You are at the tile level of " code { (t.trim_end_matches(".tiles")) } ": compare the bytes the tiles move with the bytes an ideal machine would move. "
                        } @else {
                            a.experiment #exp-tiles href=(ctx.self_href(&[], &[(AT, Some(t))])) { "Go to the tile level" }
                            " of " code { (t.trim_end_matches(".tiles")) } " and compare the bytes the tiles move with the bytes an ideal machine would move. "
                        }
                        "That ratio is the reuse factor."
                        @if let Some(g) = tree.node(t).ok().and_then(|v| v.op()).and_then(|n| n.tiles.gemm().copied()) {
                            " " span.effect {
                                "Here: " (human::bytes(g.tiled_bytes)) " moved against " (human::bytes(g.ideal_bytes))
                                " read once, a reuse factor of " (human::ratio(g.reuse_factor)) "."
                            }
                        }
                    }
                }
            }
        }
    }
}
