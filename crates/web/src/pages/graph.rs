//! Network graph: the whole model as a graph of operators (the report crate's
//! [`NetworkGraph`] of the zoom tree) — the embedding, the layer stack, the final norm and the LM
//! head in execution order, each part a bar as wide as its time and coloured by what bounds it;
//! each run of identical layers folded into one `<details>` ("layer.0 … layer.31 × 32") that opens
//! on the layer's dataflow (the same drawing as Powers of ten's), or every layer its own with
//! `expand=1`. Every part and every operator links to its level of Powers of ten. A search box
//! (`find`) marks the operators whose name or path holds the text and opens the layers that hold
//! them: on the server (a plain form, without JavaScript) and, with the page's script, as one
//! types.

use super::parts::downloads;
use super::PageCtx;
use crate::error::{shown, AppError};
use llm_ledger_core::ZoomTree;
use llm_ledger_report::human;
use llm_ledger_report::plot::graph::{matches, NetworkGraph, PartKind};
use maud::{html, Markup};

/// The page key of the search text.
pub(super) const FIND: &str = "find";

/// The page key that gives every layer a part of its own (`1`).
pub(super) const EXPAND: &str = "expand";

/// The page's keys.
pub(super) const KEYS: &[&str] = &[FIND, EXPAND];

/// The page body.
pub(super) fn render(ctx: &PageCtx) -> Result<Markup, AppError> {
    let q = ctx.query;
    let find = q.extra(FIND).map(str::trim).filter(|s| !s.is_empty());
    let expand = match q.extra(EXPAND) {
        None | Some("0") => false,
        Some("1") => true,
        Some(v) => return Err(AppError::bad_request(format!("invalid `{EXPAND}`: {v} (0 or 1)"), Some(EXPAND))),
    };
    let sc = ctx.resolve()?.scenario;
    let tree = ZoomTree::build(&sc);
    let clock = llm_ledger_report::zoom::clock_word(&sc);
    let g = NetworkGraph::of_tree(&tree, clock, expand);
    let powers = q.hrefs_to("/powers-of-ten");
    let zoom = |path: &str| powers.with(&[("at", path)]);
    let text = find.unwrap_or("");
    // What the search form echoes: control characters escaped.
    let shown_q = q.shown();
    // Each part with its drawing inside (a run of layers) and the search's hits in it.
    let parts: Vec<_> = g
        .parts
        .iter()
        .map(|p| {
            let flow = g.dataflow(&tree, p);
            let bar_hit = matches(&p.name, &p.path, text);
            let box_hits: Vec<(String, String)> = flow
                .iter()
                .flat_map(|f| f.rows.iter().flat_map(|r| &r.boxes))
                .filter(|b| NetworkGraph::box_matches(b, text))
                .map(|b| (b.path.clone(), b.name.clone()))
                .collect();
            (p, flow, bar_hit, box_hits)
        })
        .collect();
    let hits: Vec<(String, String, String)> = parts
        .iter()
        .flat_map(|(p, _, bar, boxes)| {
            let anchor = format!("g-{}", p.path);
            let own = bar.then(|| (anchor.clone(), p.path.clone(), p.name.clone()));
            own.into_iter().chain(boxes.iter().map(move |(path, name)| (anchor.clone(), path.clone(), name.clone())))
        })
        .collect();
    let self_expand = if expand { None } else { Some("1") };
    let api = |format: Option<&str>| {
        let mut keys = vec![("at", "model")];
        if let Some(f) = format {
            keys.push(("format", f));
        }
        q.hrefs_to("/api/zoom").with(&keys)
    };
    let layers = tree.layers_phrase();
    // A model whose layers differ names each run's kind.
    let kinds = sc.model.layer_kinds().len();
    Ok(html! {
        h1 { "Network graph" }
        p.lead {
            "The model in the order a step runs it: each part as wide as its time, " span.key.memory { "memory" } "- or "
            span.key.compute { "compute" } "-bound; identical layers fold into one part, which opens on their dataflow."
        }
        p.headline #headline {
            (tree.model) " on " (sc.gpu.name) " · " (sc.workload.phase) " · batch " (human::count(sc.workload.contexts.batch()))
            " · " (layers) " (" (tree.num_layers) " layers) · step " (human::seconds(g.step_time_s)) " (" (clock) ")"
        }
        form.graph-search #graph-search role="search" action="/graph" method="get" {
            @for (k, v) in &shown_q.scenario { input type="hidden" name=(k) value=(v); }
            @if let Some(c) = &shown_q.config { input type="hidden" name="config" value=(c); }
            @if expand { input type="hidden" name=(EXPAND) value="1"; }
            label for="graph-find" { "Find an operator" }
            input #graph-find type="search" name=(FIND) value=(shown(text)) placeholder="e.g. proj, attn, up, lm_head" autocomplete="off"
                aria-describedby="graph-count";
            button type="submit" { "Find" }
            a #graph-expand .graph-fold href=(ctx.self_href(&[], &[(EXPAND, self_expand)])) {
                @if expand { "Fold identical layers" } @else { "Show every layer apart" }
            }
        }
        p #graph-count role="status" aria-live="polite" data-hits=(hits.len()) {
            @if let Some(t) = find {
                @if hits.is_empty() {
                    "Nothing matches “" (shown(t)) "”."
                } @else {
                    (hits.len()) " " (if hits.len() == 1 { "operator matches" } else { "operators match" }) " “" (shown(t)) "”"
                    @if !expand && g.parts.iter().any(|p| p.layers() > 1) { " (in each run of layers, its first)" }
                    ": "
                    @for (n, (anchor, path, name)) in hits.iter().enumerate() {
                        @if n > 0 { ", " }
                        a.hit href={ "#" (anchor) } data-path=(path) { (name) }
                    }
                    "."
                }
            }
        }
        ol.graph #graph data-parts=(g.parts.len()) {
            @for (p, flow, bar_hit, box_hits) in &parts {
                @let href = zoom(&p.path);
                li.gpart id={ "g-" (p.path) } data-path=(p.path) data-layers=(p.layers()) {
                    @match (&p.kind, flow) {
                        (PartKind::Layers { first, count, .. }, Some(f)) => {
                            (maud::PreEscaped(g.part_svg(p, Some(&href), *bar_hit)))
                            details open[!box_hits.is_empty()] {
                                summary {
                                    @if *count > 1 { "Inside: " (count) " identical layers" } @else { "Inside " (p.name) }
                                    @if kinds > 1 { @if let Some(d) = tree.layer(*first) { ": " span.kind data-kind=(d.kind) { (d.kind) } } }
                                    @if !box_hits.is_empty() { " — " (box_hits.len()) " found" }
                                }
                                div.layer-inside {
                                    p.note {
                                        @if *count > 1 {
                                            (count) " identical layers; the dataflow of " a href=(zoom(&format!("layer.{first}"))) { "layer." (first) } " stands for them all. Each in Powers of ten: "
                                            @for k in *first..(*first + *count) {
                                                @if k > *first { " " }
                                                a.layer-link href=(zoom(&format!("layer.{k}"))) { (k) }
                                            }
                                        } @else {
                                            "The dataflow of " a href=(zoom(&p.path)) { (p.path) } ":"
                                        }
                                    }
                                    figure.plot.flow {
                                        (maud::PreEscaped(f.svg_marked(Some(&zoom), &|b| NetworkGraph::box_matches(b, text))))
                                    }
                                }
                            }
                        },
                        _ => { (maud::PreEscaped(g.part_svg(p, Some(&href), *bar_hit))) },
                    }
                }
            }
        }
        p.note {
            "Bars share one scale: the slowest part is the widest (a run of layers counts all of them). Every part and "
            "operator opens its level of Powers of ten. "
            "Inside a layer the boxes have the layer's own scale; arrows carry the bytes the operator above writes."
        }
        (downloads(&api(None), &api(Some("csv")), "llm-ledger zoom --at model --format json|csv"))
    })
}
