//! The scenario controls (the Powers of Ten walk-through's: model, GPU, phase, context length, batch, weight and KV
//! precision, FlashAttention; the rest under "more inputs"). One GET form, so everything works
//! without JavaScript; the script submits it on every change. Every field of the core's
//! `ScenarioRequest` has a control (a field without a tailored one gets a text box), so a form
//! submission never loses part of the state.
//!
//! A select shows the value in the URL even when the core refuses it (marked "not recognised"),
//! so an error page still shows what was asked for.

use crate::pages::{PageInfo, PageInput};
use crate::query::{scenario_fields, PageQuery, CONFIG_KEY};
use crate::upload::{PAGE_KEY, UPLOAD_NAME};
use crate::AppState;
use llm_ledger_core::precision::PRECISION_NAMES;
use llm_ledger_core::scenario::{scenario_input, Accepted, ScenarioInput};
use llm_ledger_core::Catalog;
use llm_ledger_report::human;
use maud::{html, Markup};

/// Where a control's choices come from (the values and defaults themselves are the core's
/// [`scenario_inputs`] table).
enum Choices {
    /// The catalogue's presets (plus an uploaded model).
    Models,
    /// The catalogue's GPUs.
    Gpus,
    /// The input's closed set of words, its default first.
    Listed,
    /// Two words as a pair of radio buttons (a select when the URL holds neither).
    Toggle,
    /// Storage formats, with "" meaning the checkpoint's own.
    Weights,
    /// Free text with a placeholder showing the default.
    Text,
    /// Free text with a placeholder showing an example (the input has no fixed default).
    Example(&'static str),
}

/// A tailored control of a scenario input (its help and default are the input's).
struct Control {
    name: &'static str,
    label: &'static str,
    choices: Choices,
    advanced: bool,
}

/// The tailored controls, in display order; every other scenario input gets a text box.
const CONTROLS: &[Control] = &[
    Control { name: "model", label: "Model", choices: Choices::Models, advanced: false },
    Control { name: "gpu", label: "GPU", choices: Choices::Gpus, advanced: false },
    Control { name: "phase", label: "Phase", choices: Choices::Toggle, advanced: false },
    Control { name: "ctx", label: "Sequence / context length", choices: Choices::Text, advanced: false },
    Control { name: "batch", label: "Batch size", choices: Choices::Text, advanced: false },
    Control { name: "weights", label: "Weight precision", choices: Choices::Weights, advanced: false },
    Control { name: "kv", label: "KV-cache precision", choices: Choices::Listed, advanced: false },
    Control { name: "flash", label: "FlashAttention", choices: Choices::Toggle, advanced: false },
    Control {
        name: "contexts",
        label: "Context mix",
        choices: Choices::Example("e.g. 2048x8,32768x2"),
        advanced: true,
    },
    Control { name: "activations", label: "Activation precision", choices: Choices::Listed, advanced: true },
    Control { name: "causal", label: "Causal counting (prefill)", choices: Choices::Listed, advanced: true },
    Control { name: "logits", label: "Logits", choices: Choices::Listed, advanced: true },
    Control { name: "counting", label: "Counting", choices: Choices::Listed, advanced: true },
    Control { name: "mla", label: "MLA form", choices: Choices::Listed, advanced: true },
    Control { name: "attend", label: "Attend to at most (cached tokens)", choices: Choices::Text, advanced: true },
    Control { name: "compute_efficiency", label: "Compute efficiency", choices: Choices::Text, advanced: true },
    Control { name: "bandwidth_efficiency", label: "Bandwidth efficiency", choices: Choices::Text, advanced: true },
    Control { name: "time_model", label: "Time model", choices: Choices::Listed, advanced: false },
    Control { name: "engine", label: "Engine", choices: Choices::Listed, advanced: false },
    Control { name: "zipf", label: "MoE routing skew", choices: Choices::Text, advanced: true },
];

/// The label of a scenario input without a tailored control (its name where none is known).
fn other_label(name: &'static str) -> &'static str {
    match name {
        "gemm_activations" => "GEMM input precision (W8A8)",
        "expert_loads" => "Measured expert loads",
        "tp" => "Tensor-parallel GPUs (TP)",
        "pp" => "Pipeline stages (PP)",
        "ep" => "Expert-parallel groups (EP)",
        "dp" => "Data-parallel replicas (DP)",
        "micro_batches" => "Pipeline micro-batches",
        "interconnect" => "Interconnect",
        "link_efficiency" => "Link efficiency",
        other => other,
    }
}

/// One line of help: the input's, and what it accepts where a text box cannot show it.
fn help_of(name: &str) -> String {
    let input = input_of(name);
    match &input.accepted {
        Accepted::OneOf(values) => format!("{} (one of {})", input.help, values.join(", ")),
        Accepted::Range(r) => format!("{} ({})", input.help, r.expected()),
        Accepted::Text(shape) => format!("{} ({shape})", input.help),
        Accepted::Model | Accepted::Gpu => input.help.to_string(),
    }
}

/// A log-scale slider beside a text box (batch, context length): shown by the script, which
/// writes the box as it moves; it has no name, so a plain form sends the box alone.
struct Slider {
    /// log2 of the smallest and the largest value.
    min_log2: f64,
    max_log2: f64,
}

/// The slider of a control, if it has one.
fn slider(name: &str) -> Option<Slider> {
    match name {
        "batch" => Some(Slider { min_log2: 0.0, max_log2: 12.0 }),
        "ctx" => Some(Slider { min_log2: 7.0, max_log2: 17.0 }),
        _ => None,
    }
}

impl Slider {
    /// The slider of the control labelled `label`, named after it for assistive technology.
    fn render(&self, id: &str, label: &str, value: &str, disabled: bool) -> Markup {
        let v = value.trim().replace(['_', ','], "").parse::<f64>().ok().filter(|v| *v >= 1.0).unwrap_or(1.0);
        let at = v.log2().clamp(self.min_log2, self.max_log2);
        html! {
            input.slider #{ (id) "-slider" } type="range" hidden min=(self.min_log2) max=(self.max_log2) step="0.05"
                value=(format!("{at:.2}")) data-for=(id) aria-label={ (label) ", log scale" } disabled[disabled];
        }
    }
}

/// The scenario input a control stands for.
fn input_of(name: &str) -> &'static ScenarioInput {
    scenario_input(name).expect("every control is a scenario input (checked by a test)")
}

/// The input's default as the form spells it ("" where it depends on other inputs).
fn input_default(name: &str) -> &'static str {
    input_of(name).default.as_deref().unwrap_or("")
}

/// The input's accepted words, its default first.
fn listed(name: &str) -> Vec<&'static str> {
    let Accepted::OneOf(values) = input_of(name).accepted else { return Vec::new() };
    let default = input_default(name);
    let mut v: Vec<&'static str> = values.iter().copied().filter(|v| *v == default).collect();
    v.extend(values.iter().copied().filter(|v| *v != default));
    v
}

/// Page inputs shown before the rest fold under "more … inputs" (a page with many, such as
/// Serving, would otherwise fill the screen).
const PAGE_INPUTS_SHOWN: usize = 6;

/// The id of the collapsible panel of every control (`<details>`: it opens and closes without
/// JavaScript; the script remembers its state).
pub(crate) const PANEL_ID: &str = "panel";

/// The scenario: a one-line bar of its values, each a link to its control, above the page's
/// result; then the panel of every control (collapsed unless the script remembers it open), with
/// the upload form. Controls that do nothing on the page are disabled, with the reason.
pub(crate) fn controls(state: &AppState, page: &PageInfo, q: &PageQuery, error_field: Option<&str>) -> Markup {
    // The uploaded model is listed when it decodes; a broken one is reported by the page itself.
    let catalog = q.catalog(&state.catalog).unwrap_or(std::borrow::Cow::Borrowed(&state.catalog));
    let other: Vec<&'static str> =
        scenario_fields().iter().copied().filter(|f| !CONTROLS.iter().any(|c| c.name == *f)).collect();
    let inert = crate::pages::inert::inert(page, q);
    let why = |name: &str| inert.iter().find(|(k, _)| *k == name).map(|(_, w)| *w);
    let (shown, folded) = page.inputs.split_at(page.inputs.len().min(PAGE_INPUTS_SHOWN));
    html! {
        section.controls #scenario aria-label="scenario" {
            (bar(&catalog, page, q, error_field, &why))
            details.panel #(PANEL_ID) {
                summary #panel-summary { "All inputs" span.count { " (" (scenario_fields().len() + page.inputs.len()) ")" } }
                form #controls method="get" action=(page.path()) {
                    div.grid {
                        @for c in CONTROLS.iter().filter(|c| !c.advanced) { (control(c, &catalog, q, error_field, why(c.name))) }
                    }
                    @if !page.inputs.is_empty() {
                        fieldset.page-inputs {
                            legend { (page.title) " inputs" }
                            div.grid {
                                @for i in shown { (page_input(i, q, error_field)) }
                            }
                            @if !folded.is_empty() {
                                details.more-page-inputs open[folded.iter().any(|i| q.extra(i.name).is_some() || error_field == Some(i.name))] {
                                    summary { "more " (page.title) " inputs (" (folded.len()) ")" }
                                    div.grid {
                                        @for i in folded { (page_input(i, q, error_field)) }
                                    }
                                }
                            }
                        }
                    }
                    details open[CONTROLS.iter().any(|c| c.advanced && changed(c, q)) || other.iter().any(|f| q.get(f).is_some())] {
                        summary { "more inputs" }
                        div.grid {
                            @for c in CONTROLS.iter().filter(|c| c.advanced) { (control(c, &catalog, q, error_field, why(c.name))) }
                            @for f in &other {
                                (control(&Control { name: f, label: other_label(f), choices: Choices::Text, advanced: true }, &catalog, q, error_field, why(f)))
                            }
                        }
                    }
                    @if let Some(c) = &q.config {
                        input type="hidden" name=(CONFIG_KEY) value=(c);
                    }
                    @for (k, v) in q.extra.iter().filter(|(k, _)| !page.inputs.iter().any(|i| i.name == k)) {
                        input type="hidden" name=(k) value=(v);
                    }
                    div.actions {
                        button type="submit" { "Show" }
                        a.reset href=(page.path()) { "reset to the default scenario" }
                        @if !inert.is_empty() {
                            span.help { "greyed inputs do nothing on this page (each says why); their values are kept for the others" }
                        }
                    }
                }
                form #upload method="post" action="/upload" enctype="multipart/form-data" {
                    input type="hidden" name=(PAGE_KEY) value=(page.slug);
                    @for (k, v) in q.scenario.iter().filter(|(k, _)| k != "model").chain(&q.extra) {
                        input type="hidden" name=(k) value=(v);
                    }
                    label for="f-config" { "Your own model: " }
                    input #f-config type="file" name=(CONFIG_KEY) accept=".json,application/json";
                    button type="submit" { "Upload config.json" }
                    span.help { "read here and carried in the URL; at most 64 KiB; never stored" }
                    @if q.config.is_some() {
                        " · " a.forget href=(forget_upload(page, q)) { "forget the uploaded model" }
                    }
                }
            }
        }
    }
}

/// The scenario in one line: model · GPU · phase · batch · context · precisions, then every other
/// input the query sets (the page's own too), each a link to its control in the panel (the
/// script opens the panel and focuses it; without the script the browser opens the panel to the
/// fragment). A value the page does not use is marked, with the reason as its title.
fn bar(
    catalog: &Catalog,
    page: &PageInfo,
    q: &PageQuery,
    error_field: Option<&str>,
    why: &dyn Fn(&str) -> Option<&'static str>,
) -> Markup {
    let resolved = q.request().ok().and_then(|r| r.resolve(catalog).ok());
    let inputs = resolved.as_ref().map(llm_ledger_report::ledger::Inputs::of);
    // (key, label, value): the shown value is the resolved scenario's where it resolves.
    let raw = |k: &str| q.get(k).map(str::to_string).unwrap_or_else(|| input_default(k).to_string());
    let mut chips: Vec<(&str, &str, String)> = Vec::new();
    match &inputs {
        Some(i) => {
            chips.push(("model", "model", i.model.clone()));
            chips.push(("gpu", "GPU", i.gpu.clone()));
            chips.push(("phase", "phase", i.phase.to_string()));
            chips.push(("batch", "batch", human::count(i.batch)));
            match (i.ctx, q.get("contexts")) {
                (Some(c), None) => chips.push(("ctx", "context", human::count(c))),
                _ => chips.push(("contexts", "contexts", format!("mix of {}", human::count(i.contexts.len() as u64)))),
            }
            chips.push(("weights", "weights", i.weights_shown()));
            chips.push(("kv", "KV", i.kv.name()));
            chips.push(("activations", "activations", i.activations.name()));
        }
        None => {
            for (k, label) in [
                ("model", "model"),
                ("gpu", "GPU"),
                ("phase", "phase"),
                ("batch", "batch"),
                ("ctx", "context"),
                ("weights", "weights"),
                ("kv", "KV"),
                ("activations", "activations"),
            ] {
                let v = raw(k);
                chips.push((k, label, if v.is_empty() { "default".to_string() } else { v }));
            }
        }
    }
    if q.get("flash").is_some_and(|v| v.trim() != input_default("flash")) {
        chips.push(("flash", "FlashAttention", raw("flash")));
    }
    let shown: Vec<&str> = chips.iter().map(|(k, _, _)| *k).collect();
    let label_of =
        |k: &str| CONTROLS.iter().find(|c| c.name == k).map(|c| c.label).unwrap_or_else(|| other_label_any(k));
    let more: Vec<(&str, String, String)> = q
        .scenario
        .iter()
        .filter(|(k, _)| !shown.contains(&k.as_str()) && scenario_fields().contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), label_of(k).to_string(), v.clone()))
        .chain(q.extra.iter().filter_map(|(k, v)| {
            let i = page.inputs.iter().find(|i| i.name == k)?;
            Some((i.name, i.label.to_string(), v.clone()))
        }))
        .collect();
    let chip = |key: &str, label: &str, value: &str| {
        let reason = why(key);
        let invalid = error_field == Some(key);
        html! {
            li.chip.unused[reason.is_some()].invalid[invalid] {
                a href={ "#f-" (key) } data-control={ "f-" (key) } title=[reason] {
                    span.k { (label) } " " span.v { (value) }
                }
            }
        }
    };
    html! {
        div.bar #scenario-bar {
            ul.chips aria-label="the scenario: each value opens its control" {
                @for (k, label, v) in &chips { (chip(k, label, v)) }
                @for (k, label, v) in &more { (chip(k, label, v)) }
            }
        }
    }
}

/// The label of any scenario input (a tailored control's, or [`other_label`]).
fn other_label_any(name: &str) -> &'static str {
    scenario_fields().iter().find(|f| **f == name).map(|f| other_label(f)).unwrap_or("input")
}

/// A text box for one of the page's own keys.
fn page_input(i: &PageInput, q: &PageQuery, error_field: Option<&str>) -> Markup {
    let id = format!("f-{}", i.name);
    let invalid = error_field == Some(i.name);
    html! {
        div.field {
            label for=(id) { (i.label) }
            input #(id) type="text" name=(i.name) value=[q.extra(i.name)] placeholder=(i.placeholder) autocomplete="off"
                spellcheck="false" data-default="" aria-invalid=[invalid.then_some("true")] aria-describedby={ (id) "-help" };
            small #{ (id) "-help" } { (i.help) }
        }
    }
}

/// The value a control stands for when its parameter is absent.
fn default_of(c: &Control, q: &PageQuery) -> &'static str {
    match c.choices {
        Choices::Models if q.config.is_some() => UPLOAD_NAME,
        Choices::Models | Choices::Gpus | Choices::Listed | Choices::Toggle => input_default(c.name),
        Choices::Weights | Choices::Text | Choices::Example(_) => "",
    }
}

/// Whether the query sets a control to something other than its default (a plain form sends
/// every field, defaults included).
fn changed(c: &Control, q: &PageQuery) -> bool {
    q.get(c.name).is_some_and(|v| !v.trim().eq_ignore_ascii_case(default_of(c, q)))
}

/// The same page without the uploaded model (and without `model=uploaded`).
fn forget_upload(page: &PageInfo, q: &PageQuery) -> String {
    let without = PageQuery { config: None, ..q.clone() };
    let model = q.get("model").filter(|m| !m.eq_ignore_ascii_case(UPLOAD_NAME));
    without.href_page(&page.path(), &[("model", model)], &[])
}

/// A choice of a select or a toggle: its value, its label, and what follows the label after a
/// dash (a preset's or a GPU's full name).
type Choice<'a> = (&'a str, &'a str, Option<&'a str>);

fn control(c: &Control, catalog: &Catalog, q: &PageQuery, error_field: Option<&str>, inert: Option<&str>) -> Markup {
    let id = format!("f-{}", c.name);
    let raw = q.get(c.name);
    let invalid = error_field == Some(c.name);
    let text_box = matches!(c.choices, Choices::Text | Choices::Example(_));
    let help = match (inert, text_box) {
        (Some(why), _) => why.to_string(),
        (None, true) => help_of(c.name),
        (None, false) => input_of(c.name).help.to_string(),
    };
    let class = if inert.is_some() { "field unused" } else { "field" };
    let disabled = inert.is_some();
    // A disabled control is not sent: its value travels in a hidden field, for the other pages.
    let carried = html! {
        @if let (true, Some(v)) = (disabled, raw) { input type="hidden" name=(c.name) value=(v); }
    };
    // Borrowed from the catalogue and the input tables.
    let (options, default): (Vec<Choice>, &str) = match &c.choices {
        Choices::Models => (
            catalog.presets().iter().map(|p| (p.name.as_str(), p.name.as_str(), Some(p.display.as_str()))).collect(),
            default_of(c, q),
        ),
        Choices::Gpus => (
            catalog.gpus().iter().map(|g| (g.name.as_str(), g.name.as_str(), Some(g.display.as_str()))).collect(),
            default_of(c, q),
        ),
        Choices::Listed | Choices::Toggle => {
            (listed(c.name).iter().map(|v| (*v, *v, None)).collect(), default_of(c, q))
        }
        Choices::Weights => {
            let mut o = vec![("", "checkpoint's own (bf16 unless quantised)", None)];
            o.extend(PRECISION_NAMES.iter().map(|v| (*v, *v, None)));
            (o, "")
        }
        Choices::Text | Choices::Example(_) => {
            let placeholder = match c.choices {
                Choices::Example(e) => e,
                _ => input_default(c.name),
            };
            return html! {
                div class=(class) {
                    label for=(id) { (c.label) }
                    input #(id) type="text" name=(c.name) value=[raw] placeholder=(placeholder) autocomplete="off"
                        spellcheck="false" data-default="" disabled[disabled] aria-invalid=[invalid.then_some("true")] aria-describedby={ (id) "-help" };
                    @if let Some(sl) = slider(c.name) { (sl.render(&id, c.label, raw.unwrap_or(placeholder), disabled)) }
                    small #{ (id) "-help" } { (help) }
                    (carried)
                }
            };
        }
    };
    let selected = selected_value(c, catalog, raw, &options, default);
    let known = options.iter().any(|(v, _, _)| *v == selected);
    if matches!(c.choices, Choices::Toggle) && known {
        // A pair of radio buttons: one click, and a plain form still sends the value. The group is
        // named by its label (`aria-labelledby`), each button by its word.
        return html! {
            div class=(class) {
                span.label #{ (id) "-label" } { (c.label) }
                div.toggle #(id) role="radiogroup" aria-labelledby={ (id) "-label" } aria-invalid=[invalid.then_some("true")] aria-describedby={ (id) "-help" } {
                    @for (value, text, _) in &options {
                        label.toggle-option {
                            input #{ (id) "-" (value) } type="radio" name=(c.name) value=(value) checked[*value == selected] disabled[disabled] data-default=(default);
                            span { (text) }
                        }
                    }
                }
                small #{ (id) "-help" } { (help) }
                (carried)
            }
        };
    }
    html! {
        div class=(class) {
            label for=(id) { (c.label) }
            select #(id) name=(c.name) data-default=(default) disabled[disabled] aria-invalid=[invalid.then_some("true")] aria-describedby={ (id) "-help" } {
                @if !known {
                    // A value the list does not hold: refused by the core ("not recognised"), or
                    // one it accepts beyond the list (an engine version: `vllm@0.19`).
                    option value=(selected) selected { (selected) @if invalid { " (not recognised)" } }
                }
                @for (value, label, more) in &options {
                    option value=(value) selected[*value == selected] { (label) @if let Some(m) = more { " — " (m) } }
                }
            }
            small #{ (id) "-help" } { (help) }
            (carried)
        }
    }
}

/// The option a raw value selects: itself, its case-insensitive match, or the canonical name of a
/// catalogue alias (`H100` → `h100-sxm`).
fn selected_value(c: &Control, catalog: &Catalog, raw: Option<&str>, options: &[Choice], default: &str) -> String {
    let Some(raw) = raw.map(str::trim) else { return default.to_string() };
    if let Some((v, _, _)) = options.iter().find(|(v, _, _)| v.eq_ignore_ascii_case(raw)) {
        return v.to_string();
    }
    let canonical = match c.choices {
        Choices::Models => catalog.preset(raw).ok().map(|p| p.name.clone()),
        Choices::Gpus => catalog.gpu(raw).ok().map(|g| g.name.clone()),
        _ => None,
    };
    canonical.unwrap_or_else(|| raw.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_ledger_core::scenario::scenario_inputs;
    use llm_ledger_core::ScenarioRequest;

    /// Every value a select offers is one the core accepts (so the form never offers an error).
    #[test]
    fn every_offered_choice_resolves() {
        let catalog = Catalog::builtin();
        for c in CONTROLS {
            let values: Vec<String> = match c.choices {
                Choices::Listed | Choices::Toggle => listed(c.name).iter().map(|s| s.to_string()).collect(),
                Choices::Weights => PRECISION_NAMES.iter().map(|s| s.to_string()).collect(),
                Choices::Gpus => catalog.gpus().iter().map(|g| g.name.clone()).collect(),
                Choices::Models => catalog.presets().iter().map(|p| p.name.clone()).collect(),
                Choices::Text | Choices::Example(_) => continue,
            };
            assert!(!values.is_empty(), "{} offers nothing", c.name);
            for v in values {
                let q = PageQuery::parse(Some(&format!("{}={}", c.name, v)), &[]).unwrap();
                let req: ScenarioRequest = q.request().unwrap();
                // Prefill needs a prompt; the default ctx 2048 is one. MLA forms need an MLA model only to matter.
                assert!(req.resolve(&catalog).is_ok(), "{}={v} is offered but refused", c.name);
            }
        }
    }

    #[test]
    fn every_control_is_a_scenario_input_and_lists_its_default_first() {
        for c in CONTROLS {
            assert!(scenario_input(c.name).is_some(), "{} is not a scenario input", c.name);
            if let Choices::Listed | Choices::Toggle = c.choices {
                assert_eq!(listed(c.name)[0], input_default(c.name), "{}", c.name);
            }
        }
        assert_eq!(
            listed("kv"),
            ["bf16", "fp32", "fp16", "fp8", "fp8-b128", "int8", "int4", "int4-g128", "fp4", "mxfp4", "nvfp4"]
        );
        assert_eq!(listed("activations"), ["bf16", "fp32", "fp16", "fp8", "int8"]);
    }

    /// The form has one control per scenario input and no other scenario
    /// control, and each control's default (a select's `data-default`, a text box's placeholder)
    /// is the core's table default.
    #[test]
    fn the_form_has_a_control_per_scenario_input_with_the_table_default() {
        let state = AppState::new(Catalog::builtin());
        let page =
            crate::pages::PAGES.iter().find(|p| p.controls && p.inputs.is_empty()).expect("a page with controls");
        let html = controls(&state, page, &PageQuery::default(), None).into_string();
        let form = &html[..html.find("id=\"upload\"").expect("the upload form follows")];
        let names: Vec<&str> = form.split(" name=\"").skip(1).map(|r| &r[..r.find('"').unwrap()]).collect();
        let inputs: Vec<&str> = scenario_inputs().iter().map(|i| i.name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        // A toggle's radio buttons share their input's name.
        sorted.dedup();
        let mut expected = inputs.clone();
        expected.sort();
        assert_eq!(sorted, expected, "form controls vs scenario inputs");
        for input in scenario_inputs() {
            let at = form.find(&format!(" name=\"{}\"", input.name)).unwrap();
            let tag = &form[form[..at].rfind('<').unwrap()..at + form[at..].find('>').unwrap()];
            if let Some(d) = &input.default {
                assert!(
                    tag.contains(&format!("data-default=\"{d}\"")) || tag.contains(&format!("placeholder=\"{d}\"")),
                    "{}: default {d} not shown in {tag}",
                    input.name
                );
            }
        }
    }
}
