//! The pages. Each is an entry in [`PAGES`] (its path, its navigation label, one line on what it
//! shows, its own query keys) and a render function from the request to the page's body; the
//! shared layout adds the navigation, the scenario controls (with the page's own inputs) and any
//! error.
//!
//! Adding a page: write `pages/<name>.rs` with `pub fn render(ctx: &PageCtx) -> Result<Markup,
//! AppError>`, and add its [`PageInfo`] to [`PAGES`]. Routing (`crate::page_routes`),
//! navigation, the controls and the fit banner follow from the entry: the shared modules read the
//! registry and never branch on a page's name (nor does the registry use them).

mod batching;
pub(crate) mod compare;
mod cost;
mod gpus;
mod graph;
mod home;
pub(crate) mod inert;
mod kv;
mod ledger;
mod models;
mod moe;
pub(crate) mod need;
pub(crate) mod parts;
mod picture;
mod powers;
pub mod serving;
mod tiling;

pub(crate) use moe::check_cost as moe_check_cost;

use crate::error::AppError;
use crate::query::{PageQuery, Resolved};
use crate::AppState;
use llm_ledger_core::Catalog;
use maud::Markup;
use std::borrow::Cow;

/// What a page needs to render: the app state, its query, and itself.
pub struct PageCtx<'a> {
    /// Shared state.
    pub state: &'a AppState,
    /// The request's query.
    pub query: &'a PageQuery,
    /// The page being rendered.
    pub page: &'static PageInfo,
    /// Set when the answer is no longer wanted (the request's deadline, or its client gone):
    /// work that runs long checks it (`crate::work`).
    pub cancel: &'a std::sync::atomic::AtomicBool,
}

impl PageCtx<'_> {
    /// The scenario the query describes.
    pub fn resolve(&self) -> Result<Resolved<'_>, AppError> {
        self.query.resolve(&self.state.catalog)
    }

    /// The catalogue, with the uploaded model if there is one.
    pub fn catalog(&self) -> Result<Cow<'_, Catalog>, AppError> {
        self.query.catalog(&self.state.catalog)
    }

    /// A link to this page with the state and page keys, some of both replaced (`Some`) or
    /// removed (`None`).
    pub fn self_href(&self, scenario: &[(&str, Option<&str>)], page: &[(&str, Option<&str>)]) -> String {
        self.query.href_page(&self.page.path(), scenario, page)
    }
}

/// A page's body.
pub type Render = fn(&PageCtx) -> Result<Markup, AppError>;

/// A text box for one of a page's own query keys, shown with the scenario controls.
pub struct PageInput {
    /// The query key.
    pub name: &'static str,
    /// Label.
    pub label: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// Placeholder: the value used when the box is empty.
    pub placeholder: &'static str,
}

/// One page of the explorer.
pub struct PageInfo {
    /// URL path segment (`""` for the overview at `/`).
    pub slug: &'static str,
    /// Navigation label and heading.
    pub title: &'static str,
    /// One line on what the page shows.
    pub summary: &'static str,
    /// Query keys of the page's own (a zoom path, a batch range …), beside the scenario's.
    /// The controls keep them; links to other pages drop them.
    pub keys: &'static [&'static str],
    /// The keys with a text box among the controls (the others travel as hidden fields).
    pub inputs: &'static [PageInput],
    /// Scenario keys the page does not use (their controls are marked, their values kept).
    pub unused: &'static [&'static str],
    /// The body.
    pub render: Render,
    /// Show the scenario controls.
    pub controls: bool,
    /// The page's work grows with its parameters (an axis, experts, a tile grid, a zoom tree,
    /// a search over batches): it runs on the heavy-work pool (`crate::work`), off the
    /// threads that answer the other requests.
    pub heavy: bool,
    /// What the "does not fit" banner checks.
    pub fit: PageFit,
}

/// The fit the shared "does not fit in memory" banner (`crate::fit`) checks on a page: the
/// basis its numbers use.
pub enum PageFit {
    /// None: the page's numbers do not come from the scenario's model (one GEMM).
    None,
    /// One step of the scenario with the page's memory reserve (its `reserve` key, if it has
    /// one), the scenario keys `without` dropped first (a page that builds its own steps).
    Step {
        /// Scenario keys the page's steps do not use.
        without: &'static [&'static str],
    },
    /// The peak of the requests (`prompt` and `output` of the page's keys) at the scenario's
    /// batch, with the page's reserve, the scenario keys `without` dropped first.
    Requests {
        /// Scenario keys the requests replace.
        without: &'static [&'static str],
    },
}

impl PageInfo {
    /// The page's path.
    pub fn path(&self) -> String {
        format!("/{}", self.slug)
    }
}

const RESERVE: PageInput = PageInput {
    name: "reserve",
    label: "Memory reserve",
    help: "kept back for the CUDA context and allocator: bytes, or 2GB, 1.5GiB",
    placeholder: "2GB",
};

/// Scenario keys that only shape a step's contexts (the Cost page builds its own from prompt and output).
const STEP_SHAPE: &[&str] = &["phase", "ctx", "contexts"];

/// Every page, in navigation order.
pub static PAGES: &[PageInfo] = &[
    PageInfo {
        slug: "",
        title: "Overview",
        summary: "The scenario at a glance: step time, throughput, what bounds it, and where to look next.",
        keys: &[],
        inputs: &[],
        unused: &[],
        render: home::render,
        controls: true,
        heavy: false,
        fit: PageFit::Step { without: &[] },
    },
    PageInfo {
        slug: "powers-of-ten",
        title: "Powers of ten",
        summary: "One forward pass at four magnifications — model, layer, operator, GEMM tile — each built from the level below.",
        keys: powers::KEYS,
        inputs: &[],
        unused: &[],
        render: powers::render,
        controls: true,
        heavy: true,
        fit: PageFit::Step { without: &[] },
    },
    PageInfo {
        slug: "ledger",
        title: "Ledger",
        summary: "Per-operator FLOPs, bytes, intensity and time (expected and roofline), with the roofline chart.",
        keys: &[],
        inputs: &[],
        unused: &[],
        render: ledger::render,
        controls: true,
        heavy: false,
        fit: PageFit::Step { without: &[] },
    },
    PageInfo {
        slug: "batching",
        title: "Batching",
        summary: "Step time and tokens per second against batch size, with the memory wall and the KV crossover.",
        keys: &[batching::BATCHES, "reserve"],
        inputs: &[batching::BATCHES_INPUT, RESERVE],
        unused: &[],
        render: batching::render,
        controls: true,
        heavy: true,
        fit: PageFit::Step { without: &[] },
    },
    PageInfo {
        slug: "kv-cache",
        title: "KV cache",
        summary: "The memory decode spends its time reading: cache size per token, per sequence, and what fits.",
        keys: &["reserve"],
        inputs: &[RESERVE],
        unused: &[],
        render: kv::render,
        controls: true,
        heavy: false,
        fit: PageFit::Step { without: &[] },
    },
    PageInfo {
        slug: "cost",
        title: "Cost",
        summary: "All of it in dollars: cost per million tokens from the step time and the GPU's hourly price.",
        keys: cost::KEYS,
        inputs: cost::INPUTS,
        unused: STEP_SHAPE,
        render: cost::render,
        controls: true,
        heavy: true,
        fit: PageFit::Requests { without: STEP_SHAPE },
    },
    PageInfo {
        slug: "serving",
        title: "Serving",
        summary: "One serving instance under load: TTFT, TPOT and ITL percentiles, throughput and goodput from a step-by-step simulation.",
        keys: serving::KEYS,
        inputs: serving::INPUTS,
        unused: serving::UNUSED,
        render: serving::render,
        controls: true,
        heavy: true,
        fit: PageFit::Step { without: serving::UNUSED },
    },
    PageInfo {
        slug: "gemm-tiling",
        title: "GEMM tiling",
        summary: "One GEMM's tile grid drawn to scale: tiles coloured by wave, padding shaded, re-read traffic counted.",
        keys: tiling::KEYS,
        inputs: tiling::INPUTS,
        unused: tiling::UNUSED,
        render: tiling::render,
        controls: true,
        heavy: true,
        fit: PageFit::None,
    },
    PageInfo {
        slug: "moe",
        title: "Mixture of experts",
        summary: "Experts touched per step against batch, and what that does to the weight bytes.",
        keys: moe::KEYS,
        inputs: moe::INPUTS,
        unused: &[],
        render: moe::render,
        controls: true,
        heavy: true,
        fit: PageFit::Step { without: &[] },
    },
    PageInfo {
        slug: "compare",
        title: "Compare",
        summary: "Saved scenarios side by side, and the Pareto front of tokens/s per GPU against tokens/s per user over every layout and batch.",
        keys: compare::KEYS,
        inputs: compare::INPUTS,
        unused: &[],
        render: compare::render,
        controls: true,
        heavy: true,
        fit: PageFit::Step { without: &[] },
    },
    PageInfo {
        slug: "graph",
        title: "Network graph",
        summary: "The whole model as a searchable graph of operators, each as wide as its time; identical layers fold, and open on their dataflow.",
        keys: graph::KEYS,
        inputs: &[],
        unused: &[],
        render: graph::render,
        controls: true,
        heavy: true,
        fit: PageFit::Step { without: &[] },
    },
    PageInfo {
        slug: "need",
        title: "What do I need",
        summary: "Which GPUs, and how many, for this model at this batch and context (or arrival rate), across the catalogue, with the memory wall.",
        keys: need::KEYS,
        inputs: need::INPUTS,
        unused: need::UNUSED,
        render: need::render,
        controls: true,
        heavy: true,
        fit: PageFit::None,
    },
    PageInfo {
        slug: "models",
        title: "Models",
        summary: "The model presets (and an uploaded config.json) with their computed parameter counts.",
        keys: &[],
        inputs: &[],
        unused: &[],
        render: models::render,
        controls: false,
        heavy: false,
        fit: PageFit::None,
    },
    PageInfo {
        slug: "gpus",
        title: "GPUs",
        summary: "The GPU catalogue: peaks per math format, bandwidth, capacity and ridge points.",
        keys: &[],
        inputs: &[],
        unused: &[],
        render: gpus::render,
        controls: false,
        heavy: false,
        fit: PageFit::None,
    },
];

/// The page at `slug`.
pub fn find(slug: &str) -> Option<&'static PageInfo> {
    PAGES.iter().find(|p| p.slug == slug)
}

/// The overview.
pub fn home() -> &'static PageInfo {
    &PAGES[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Batching and MoE pages' keys are the app's `sweep` and `moe` input tables, in order,
    /// the batch axis named `batches` (the page's `batch` is the scenario's current batch) and
    /// the context the scenario's own; each key has a text box.
    #[test]
    fn the_axis_pages_keys_are_the_apps_input_tables() {
        let page_keys = |t: &[llm_ledger_app::Input]| -> Vec<&str> {
            t.iter()
                .filter(|i| i.name != "ctx")
                .map(|i| if i.name == "batch" { batching::BATCHES } else { i.name })
                .collect()
        };
        for (slug, table) in [("batching", llm_ledger_app::sweep::inputs()), ("moe", llm_ledger_app::moe::inputs())] {
            let page = find(slug).unwrap();
            assert_eq!(page.keys, page_keys(table), "{slug}");
            assert_eq!(page.inputs.iter().map(|i| i.name).collect::<Vec<_>>(), page.keys, "{slug}");
        }
        // The Powers of Ten page's zoom path is `zoom`'s input, beside the page's own keys.
        let powers = find("powers-of-ten").unwrap();
        assert!(llm_ledger_app::zoom::inputs().iter().all(|i| powers.keys.contains(&i.name)));
    }
}
