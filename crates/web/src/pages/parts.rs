//! Pieces several pages use: number cells that carry their exact value, share bars, the step
//! summary, and the walk-through's one-click experiments.

use crate::query::PageQuery;
use llm_ledger_core::levers::Lever;
use llm_ledger_core::{Catalog, Ledger};
use llm_ledger_report::plot::{PlotError, PlotSize};
use llm_ledger_report::{human, LedgerReport};
use maud::{html, Markup, PreEscaped};

/// Most points (batch sizes) a page or JSON endpoint computes for one answer; the CLI streams or
/// computes more.
pub(crate) const MAX_POINTS: u64 = 2048;

/// The line linking a page's data as the CLI's JSON and CSV documents.
pub(crate) fn downloads(json: &str, csv: &str, cli: &str) -> Markup {
    html! {
        p.downloads.notes {
            "These numbers as " a href=(json) { "JSON" } ", " a href=(csv) { "CSV" }
            " — the same documents as " code { (cli) } "."
        }
    }
}

/// A plot drawn twice, by `draw`: at the page's size ([`PlotSize::default`], as it always was)
/// and at a phone's ([`PlotSize::NARROW`], its legend below the plot, class `plot-narrow` added),
/// one after the other; [`figure`] marks a figure holding both `two-sizes`, and the style sheet
/// shows the one that fits the screen (the narrow one below 600 px). Where the narrow one cannot
/// be drawn, the wide one alone.
pub(crate) fn at_both_sizes(draw: impl Fn(PlotSize) -> Result<String, PlotError>) -> Result<String, PlotError> {
    let wide = draw(PlotSize::default())?;
    Ok(match draw(PlotSize::NARROW) {
        Ok(narrow) => format!("{wide}{}", sized(&narrow, NARROW_CLASS)),
        Err(_) => wide,
    })
}

/// The class of a plot's phone drawing.
const NARROW_CLASS: &str = "plot-narrow";

/// The SVG with `class` added to the end of its root's classes.
fn sized(svg: &str, class: &str) -> String {
    const OPEN: &str = "<svg class=\"";
    match svg.find(OPEN).map(|i| i + OPEN.len()).and_then(|at| svg[at..].find('"').map(|e| at + e)) {
        Some(end) => format!("{} {class}{}", &svg[..end], &svg[end..]),
        None => svg.to_string(),
    }
}

/// A plot (inline SVG, or why it could not be drawn) with its caption; `wide` plots take the page's width.
pub(crate) fn figure(chart: &Result<String, PlotError>, wide: bool, caption: Markup) -> Markup {
    html! {
        figure.plot.wide[wide].two-sizes[chart.as_ref().is_ok_and(|svg| svg.contains(NARROW_CLASS))] {
            @match chart {
                Ok(svg) => (PreEscaped(svg)),
                Err(e) => p.error { (e) },
            }
            figcaption { (caption) }
        }
    }
}

/// A list of facts: (label, id, plain value, text, note).
pub(crate) fn facts(items: &[(&str, &str, Option<f64>, String, String)]) -> Markup {
    html! {
        dl.summary {
            @for (label, id, value, text, note) in items {
                div {
                    dt { (label) }
                    dd id=[(!id.is_empty()).then_some(id)] data-value=[value] { (text) }
                    @if !note.is_empty() { dd.sub { (note) } }
                }
            }
        }
    }
}

/// A table cell showing `text` and carrying the plain SI value in `data-value` (what tests and
/// scripts read; the text is for people).
pub(crate) fn num(value: f64, text: String) -> Markup {
    html! { td.num data-value=(value) { (text) } }
}

/// A table head; `true` marks a numeric (right-aligned) column.
pub(crate) fn thead(cols: &[(&str, bool)]) -> Markup {
    thead_marked(cols, &[])
}

/// [`thead`], the columns named in `marks` given a class too (`time`, `share`: the columns a
/// `results-first` table shows first on phones).
pub(crate) fn thead_marked(cols: &[(&str, bool)], marks: &[(&str, &str)]) -> Markup {
    html! {
        thead {
            tr {
                @for (label, numeric) in cols {
                    @let mark = marks.iter().find(|(l, _)| l == label).map(|(_, c)| *c);
                    @let class = [numeric.then_some("num"), mark].into_iter().flatten().collect::<Vec<_>>().join(" ");
                    th class=[(!class.is_empty()).then_some(class)] scope="col" { (label) }
                }
            }
        }
    }
}

/// A horizontal bar for a share in 0..=1 (inline SVG: no inline style, so the CSP stays strict).
pub(crate) fn share_bar(share: f64) -> Markup {
    let w = (share.clamp(0.0, 1.0) * 100.0 * 100.0).round() / 100.0;
    html! {
        svg.bar viewBox="0 0 100 8" preserveAspectRatio="none" aria-hidden="true" focusable="false" {
            rect.track x="0" y="0" width="100" height="8" {}
            rect.fill x="0" y="0" width=(w) height="8" {}
        }
    }
}

/// The step at a glance.
pub(crate) fn summary(report: &LedgerReport) -> Markup {
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
            div { dt { "bound by" } dd #bound data-value=(memory_share) { (bound) } dd.sub { (human::percent(memory_share)) " of the time in memory-bound operators" } }
            div { dt { "FLOPs" } dd #total-flops data-value=(t.flops) { (human::flops(t.flops)) } }
            div {
                dt { "HBM bytes" }
                dd #total-bytes data-value=(t.bytes) { (human::bytes(t.bytes)) }
                dd.sub { "weights " (human::bytes(t.weight_bytes)) " · KV " (human::bytes(t.kv_bytes)) " · activations " (human::bytes(t.activation_bytes)) }
            }
            div { dt { "intensity" } dd #intensity data-value=[t.intensity] { (human::intensity(t.intensity)) " FLOP/B" } }
            div {
                dt { "memory floor" }
                dd #memory-floor data-value=(report.memory_floor_s) { (human::seconds(report.memory_floor_s)) }
                dd.sub { "all bytes at 100 % bandwidth; compute floor " (human::seconds(report.compute_floor_s)) }
            }
        }
    }
}

/// Which way a number moved: by more than [`FLAT`] of the larger, up or down; else flat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trend {
    /// It grew.
    Up,
    /// It shrank.
    Down,
    /// Within [`FLAT`].
    Flat,
}

/// A change smaller than this fraction of the larger number reads as no change.
pub(crate) const FLAT: f64 = 0.01;

impl Trend {
    /// From `before` to `after`.
    pub(crate) fn of(before: f64, after: f64) -> Trend {
        let scale = before.abs().max(after.abs());
        if (after - before).abs() <= FLAT * scale {
            Trend::Flat
        } else if after > before {
            Trend::Up
        } else {
            Trend::Down
        }
    }

    /// The attribute value the page carries (`up`, `down`, `flat`).
    pub(crate) fn word(self) -> &'static str {
        match self {
            Trend::Up => "up",
            Trend::Down => "down",
            Trend::Flat => "flat",
        }
    }
}

/// A sentence's verb for how `measure` moved, chosen from `before` and `after` (`up`, `down`,
/// `flat` are the words for each way), with the two numbers on the element (`data-before`,
/// `data-after`, `data-trend`): a sentence that says which way a number goes is written from the
/// number, so it cannot contradict it. `None` (a number that does not exist) says nothing.
pub(crate) fn claim(measure: &str, before: Option<f64>, after: Option<f64>, words: [&str; 3]) -> Markup {
    let (Some(b), Some(a)) = (before, after) else { return html! {} };
    let t = Trend::of(b, a);
    html! { span.claim data-measure=(measure) data-before=(b) data-after=(a) data-trend=(t.word()) { (by_trend(before, after, words)) } }
}

/// `after ÷ before` in the one ratio format ([`human::ratio`]: `1.15×`, `16.0×`), nothing when
/// `before` is 0.
pub(crate) fn ratio(before: f64, after: f64) -> String {
    match after / before {
        r if before == 0.0 || !r.is_finite() => String::new(),
        // A fall past a tenth as its divisor (`÷412`), which two decimals would print as `0.00×`.
        r if r > 0.0 && r < 0.1 => format!("÷{}", human::sig3(1.0 / r)),
        r => human::ratio(r),
    }
}

/// The one of `words` (up, down, flat) for how a number moved from `before` to `after`; empty
/// when either is missing. A reason a sentence gives for a change is chosen this way, so it is
/// only given for the change that happened.
pub(crate) fn by_trend(before: Option<f64>, after: Option<f64>, words: [&str; 3]) -> &str {
    match (before, after) {
        (Some(b), Some(a)) => match Trend::of(b, a) {
            Trend::Up => words[0],
            Trend::Down => words[1],
            Trend::Flat => words[2],
        },
        _ => "",
    }
}

/// Bytes, FLOPs per byte and step time of a scenario's step, and its attention core's bytes and
/// intensity (the attention, score, softmax and value rows).
#[derive(Debug, Clone, Copy)]
struct StepNumbers {
    step_s: f64,
    bytes: f64,
    intensity: Option<f64>,
    attention_bytes: f64,
    attention_intensity: Option<f64>,
}

impl StepNumbers {
    fn of(sc: &llm_ledger_core::Scenario) -> StepNumbers {
        StepNumbers::of_ledger(&Ledger::build(sc))
    }

    fn of_ledger(l: &Ledger) -> StepNumbers {
        use llm_ledger_core::kinds::Shard;
        let attention: llm_ledger_core::Cost = l
            .rows
            .iter()
            // Attention's kernels: the fused one, or the unfused scores, softmax and values.
            .filter(|r| r.op.facts().shard == Shard::AttentionHeads)
            .map(|r| r.cost)
            .sum();
        let s = &l.summary;
        StepNumbers {
            step_s: s.step_time_s(),
            bytes: s.cost.bytes(),
            intensity: s.cost.intensity(),
            attention_bytes: attention.bytes(),
            attention_intensity: attention.intensity(),
        }
    }
}

/// The Powers of Ten walk-through's "try this" experiments that the ledger can show (the tile-level one needs the
/// Powers of ten page), and the reference calculator's cache levers, as links from the current scenario, each
/// with what it changes before and after; every sentence that says which way a number moves is
/// written from those numbers ([`claim`]). `ledger` is the ledger of `q`'s scenario, the one
/// `report` reports.
pub(crate) fn experiments(
    q: &PageQuery,
    catalog: &Catalog,
    path: &str,
    ledger: &Ledger,
    report: &LedgerReport,
) -> Markup {
    let i = &report.inputs;
    let decode = i.phase == llm_ledger_core::Phase::Decode;
    let batch_up = (i.batch.saturating_mul(8)).clamp(8, llm_ledger_core::limits::MAX_BATCH).to_string();
    let now = Some(StepNumbers::of_ledger(ledger));
    let after = |overrides: &[(&str, Option<&str>)]| {
        q.clone_with(overrides).resolve(catalog).ok().map(|r| StepNumbers::of(&r.scenario))
    };
    let phase = [("phase", Some(if decode { "prefill" } else { "decode" }))];
    let batch = [("phase", Some("decode")), ("batch", Some(batch_up.as_str())), ("contexts", None)];
    let int4 = [("weights", Some("int4"))];
    let fp8 = [("kv", Some("fp8"))];
    let attend_tokens = llm_ledger_core::levers::ATTEND_TOKENS.to_string();
    let attend = [("attend", Some(attend_tokens.as_str()))];
    let (p, b, w, k) = (after(&phase), after(&batch), after(&int4), after(&fp8));
    // Reading fewer cached tokens applies where some attention layer reads more than that now.
    let longest = i.contexts.iter().map(|b| b.tokens).max().unwrap_or(0);
    let a = (longest > llm_ledger_core::levers::ATTEND_TOKENS).then(|| after(&attend)).flatten();
    let get = |n: &Option<StepNumbers>, f: fn(&StepNumbers) -> Option<f64>| n.as_ref().and_then(f);
    let intensity = |n: &StepNumbers| n.intensity;
    let bytes = |n: &StepNumbers| Some(n.bytes);
    let att_bytes = |n: &StepNumbers| Some(n.attention_bytes);
    let att_intensity = |n: &StepNumbers| n.attention_intensity;
    let step = |n: &StepNumbers| Some(n.step_s);
    // "Here: intensity a → b FLOP/B, step x → y."
    let effect = |to: &Option<StepNumbers>| -> Markup {
        let (Some(n), Some(t)) = (&now, to) else { return html! {} };
        html! {
            " " span.effect {
                "Here: intensity " (human::intensity(n.intensity)) " → " (human::intensity(t.intensity))
                " FLOP/B, step " (human::seconds(n.step_s)) " → " (human::seconds(t.step_s)) "."
            }
        }
    };
    let moved = |to: &Option<StepNumbers>, f: fn(&StepNumbers) -> Option<f64>, measure: &str, words: [&str; 3]| {
        claim(measure, get(&now, f), get(to, f), words)
    };
    let link = |title: &str, overrides: &[(&str, Option<&str>)]| html! { a.experiment href=(q.href(path, overrides)) { (title) } };
    html! {
        section.experiments aria-label="try this" {
            h2 { "Try this" }
            ol {
                li {
                    (link(if decode { "Switch phase to prefill" } else { "Switch phase from prefill to decode" }, &phase))
                    ": the step's arithmetic intensity "
                    (moved(&p, intensity, "intensity", ["rises", "falls", "barely moves"]))
                    (get(&now, intensity).zip(get(&p, intensity)).map(|(a, z)| format!(" ({})", ratio(a, z))).unwrap_or_default())
                    ". Nothing about the model changes, only how many query rows share the fetched weights."
                    (effect(&p))
                }
                li {
                    (link("Raise the batch size in decode", &batch))
                    " (to " (batch_up) "): the step's intensity "
                    (moved(&b, intensity, "intensity", ["climbs", "falls", "barely moves"]))
                    (get(&now, intensity).zip(get(&b, intensity)).map(|(a, z)| format!(" ({})", ratio(a, z))).unwrap_or_default())
                    (by_trend(get(&now, intensity), get(&b, intensity), [
                        ", as the same fetched weights serve more rows.",
                        ".",
                        ": the bytes grow with the rows too (the KV cache).",
                    ]))
                    (effect(&b))
                }
                @if i.weights != "int4" {
                    li {
                        (link("Drop the weights to INT4", &int4))
                        ": the step's bytes " (moved(&w, bytes, "bytes", ["rise", "fall", "barely move"]))
                        " and its intensity " (moved(&w, intensity, "intensity", ["rises", "falls", "barely moves"]))
                        "; an operator can flip from memory-bound to compute-bound without its FLOPs changing."
                        (effect(&w))
                        " " span.quality { "Quality: " (Lever::W4a16.quality()) "." }
                    }
                }
                @if i.kv.name() != "fp8" {
                    li {
                        (link("Store the KV cache in FP8", &fp8))
                        ": attention's bytes " (moved(&k, att_bytes, "attention bytes", ["grow", "shrink", "barely move"]))
                        (get(&now, att_bytes).zip(get(&k, att_bytes)).map(|(a, z)| format!(" ({})", ratio(a, z))).unwrap_or_default())
                        " and its intensity " (moved(&k, att_intensity, "attention intensity", ["rises", "falls", "barely moves"]))
                        (get(&now, att_intensity).zip(get(&k, att_intensity)).map(|(a, z)| format!(" ({})", ratio(a, z))).unwrap_or_default())
                        " (the reference calculator's cache-side lever); the step "
                        (moved(&k, step, "step time", ["slows", "speeds up", "barely changes"])) "."
                        (effect(&k))
                        " " span.quality { "Quality: " (Lever::KvFp8.quality()) "." }
                    }
                }
                @if a.is_some() {
                    li {
                        (link(&format!("Attend to at most {} cached tokens", human::count(llm_ledger_core::levers::ATTEND_TOKENS)), &attend))
                        " (a window, eviction or sparse attention, the reference calculator's \"reading less of it\"): attention's bytes "
                        (moved(&a, att_bytes, "attention bytes", ["grow", "shrink", "barely move"]))
                        (get(&now, att_bytes).zip(get(&a, att_bytes)).map(|(x, z)| format!(" ({})", ratio(x, z))).unwrap_or_default())
                        " and the step " (moved(&a, step, "step time", ["slows", "speeds up", "barely changes"])) "."
                        (effect(&a))
                        " " span.quality { "Quality: " (Lever::Attend.quality()) "." }
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
}
