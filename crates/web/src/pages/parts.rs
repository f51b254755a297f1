//! Pieces several pages use: number cells that carry their exact value, share bars, the step
//! summary, and the seed's one-click experiments.

use crate::query::PageQuery;
use llm_ledger_core::{summarise, Catalog};
use llm_ledger_report::plot::PlotError;
use llm_ledger_report::{human, LedgerReport};
use maud::{html, Markup, PreEscaped};

/// Most points (batch sizes) a page or JSON endpoint computes for one answer; the CLI streams or
/// computes more.
pub const MAX_POINTS: u64 = 2048;

/// The line linking a page's data as the CLI's JSON and CSV documents.
pub fn downloads(json: &str, csv: &str, cli: &str) -> Markup {
    html! {
        p.downloads.notes {
            "These numbers as " a href=(json) { "JSON" } ", " a href=(csv) { "CSV" }
            " — the same documents as " code { (cli) } "."
        }
    }
}

/// A plot (inline SVG, or why it could not be drawn) with its caption; `wide` plots take the page's width.
pub fn figure(chart: &Result<String, PlotError>, wide: bool, caption: Markup) -> Markup {
    html! {
        figure.plot.wide[wide] {
            @match chart {
                Ok(svg) => (PreEscaped(svg)),
                Err(e) => p.error { (e) },
            }
            figcaption { (caption) }
        }
    }
}

/// A list of facts: (label, id, plain value, text, note).
pub fn facts(items: &[(&str, &str, Option<f64>, String, String)]) -> Markup {
    html! {
        dl.summary {
            @for (label, id, value, text, note) in items {
                div {
                    dt { (label) }
                    dd id=[(!id.is_empty()).then_some(id)] data-value=[value] { (text) }
                    @if !note.is_empty() { small { (note) } }
                }
            }
        }
    }
}

/// A table cell showing `text` and carrying the plain SI value in `data-value` (what tests and
/// scripts read; the text is for people).
pub fn num(value: f64, text: String) -> Markup {
    html! { td.num data-value=(value) { (text) } }
}

/// A table head; `true` marks a numeric (right-aligned) column.
pub fn thead(cols: &[(&str, bool)]) -> Markup {
    html! {
        thead {
            tr {
                @for (label, numeric) in cols {
                    th class=[numeric.then_some("num")] scope="col" { (label) }
                }
            }
        }
    }
}

/// A horizontal bar for a share in 0..=1 (inline SVG: no inline style, so the CSP stays strict).
pub fn share_bar(share: f64) -> Markup {
    let w = (share.clamp(0.0, 1.0) * 100.0 * 100.0).round() / 100.0;
    html! {
        svg.bar viewBox="0 0 100 8" preserveAspectRatio="none" aria-hidden="true" focusable="false" {
            rect.track x="0" y="0" width="100" height="8" {}
            rect.fill x="0" y="0" width=(w) height="8" {}
        }
    }
}

/// The step at a glance.
pub fn summary(report: &LedgerReport) -> Markup {
    let t = &report.total;
    let memory_share: f64 = report.rows.iter().filter(|r| r.bound == "memory").map(|r| r.time_share).sum();
    let bound = if memory_share >= 0.5 { "memory" } else { "compute" };
    let unit = match report.inputs.phase {
        llm_ledger_core::Phase::Decode => "tokens generated per second",
        llm_ledger_core::Phase::Prefill => "prompt tokens processed per second",
    };
    html! {
        dl.summary {
            div { dt { "step time" } dd #step-time data-value=(report.step_time_s) { (human::seconds(report.step_time_s)) } }
            div { dt { (unit) } dd #tokens-per-s data-value=(report.tokens_per_s) { (human::sig3(report.tokens_per_s)) } }
            div { dt { "bound by" } dd #bound data-value=(memory_share) { (bound) } small { (human::percent(memory_share)) " of the time in memory-bound operators" } }
            div { dt { "FLOPs" } dd #total-flops data-value=(t.flops) { (human::flops(t.flops)) } }
            div {
                dt { "HBM bytes" }
                dd #total-bytes data-value=(t.bytes) { (human::bytes(t.bytes)) }
                small { "weights " (human::bytes(t.weight_bytes)) " · KV " (human::bytes(t.kv_bytes)) " · activations " (human::bytes(t.activation_bytes)) }
            }
            div { dt { "intensity" } dd #intensity data-value=[t.intensity] { (human::intensity(t.intensity)) " FLOP/B" } }
            div {
                dt { "memory floor" }
                dd #memory-floor data-value=(report.memory_floor_s) { (human::seconds(report.memory_floor_s)) }
                small { "all bytes at 100 % bandwidth; compute floor " (human::seconds(report.compute_floor_s)) }
            }
        }
    }
}

/// One of the seed's experiments: what to change, what to watch, and a link that changes it.
struct Experiment {
    title: &'static str,
    watch: &'static str,
    changes: Vec<(&'static str, Option<String>)>,
}

/// Seed 000's "try this" experiments that the ledger can show (the tile-level one needs the
/// Powers of ten page), and seed 004's cache levers, as links from the current scenario, each with
/// the step's intensity and time before and after.
pub fn experiments(q: &PageQuery, catalog: &Catalog, path: &str, report: &LedgerReport) -> Markup {
    let i = &report.inputs;
    let decode = i.phase == llm_ledger_core::Phase::Decode;
    let batch_up = (i.batch.saturating_mul(8)).clamp(8, llm_ledger_core::limits::MAX_BATCH);
    let list = [
        Experiment {
            title: if decode { "Switch phase to prefill" } else { "Switch phase from prefill to decode" },
            watch: "and watch the arithmetic intensity collapse (or recover): nothing about the model changes, only how many query rows share the fetched weights.",
            changes: vec![("phase", Some(if decode { "prefill" } else { "decode" }.into()))],
        },
        Experiment {
            title: "Raise the batch size in decode",
            watch: "Intensity climbs roughly linearly, because the same fetched weights now serve more rows.",
            changes: vec![("phase", Some("decode".into())), ("batch", Some(batch_up.to_string())), ("contexts", None)],
        },
        Experiment {
            title: "Drop the weights to INT4",
            watch: "Bytes fall, intensity rises, and an operator can flip from memory-bound to compute-bound without its FLOPs changing.",
            changes: vec![("weights", Some("int4".into()))],
        },
        Experiment {
            title: "Halve the KV cache with FP8",
            watch: "Attention bytes halve and attention intensity doubles (the reference calculator's cache-side lever).",
            changes: vec![("kv", Some("fp8".into()))],
        },
    ];
    html! {
        section.experiments aria-label="try this" {
            h2 { "Try this" }
            ol {
                @for e in &list {
                    @let overrides: Vec<(&str, Option<&str>)> = e.changes.iter().map(|(k, v)| (*k, v.as_deref())).collect();
                    @let after = q.clone_with(&overrides).resolve_summary(catalog);
                    li {
                        a.experiment href=(q.href(path, &overrides)) { (e.title) }
                        " " (e.watch)
                        @if let Some((step, intensity)) = after {
                            " " span.effect {
                                "Here: intensity " (human::intensity(report.total.intensity)) " → " (human::intensity(intensity))
                                " FLOP/B, step " (human::seconds(report.step_time_s)) " → " (human::seconds(step)) "."
                            }
                        }
                    }
                }
            }
        }
    }
}

impl PageQuery {
    /// The same query with some scenario keys replaced or removed.
    pub fn clone_with(&self, overrides: &[(&str, Option<&str>)]) -> PageQuery {
        let mut q = self.clone();
        q.scenario.retain(|(k, _)| !overrides.iter().any(|(o, _)| o == k));
        q.scenario.extend(overrides.iter().filter_map(|(k, v)| v.map(|v| (k.to_string(), v.to_string()))));
        q
    }

    /// Step time and intensity of the query's scenario, if it resolves.
    fn resolve_summary(&self, catalog: &Catalog) -> Option<(f64, Option<f64>)> {
        let r = self.resolve(catalog).ok()?;
        let s = summarise(&r.scenario);
        Some((s.step_time_s(), s.cost.intensity()))
    }
}
