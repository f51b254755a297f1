//! GEMM tiling: the CLI's `tile` report for one GEMM on the scenario's GPU — the tile grid drawn to
//! scale (tiles coloured by wave, padding hatched) with the tile, wave, occupancy and traffic
//! numbers beside it, the report's sentences, and every candidate tile (each a link that forces it).
//!
//! The GEMM's own inputs are page keys (`m`, `n`, `k`, `tile`, `output`); the GPU, the weight and
//! activation storage and the efficiencies are the scenario's keys of the same names, as the
//! `tile` command's flags are.

use super::parts::{downloads, facts, figure, num, thead};
use super::{PageCtx, PageInput};
use crate::error::AppError;
use crate::query::PageQuery;
use llm_ledger_core::tiling::GemmRequest;
use llm_ledger_report::plot::{PlotSize, TileGrid};
use llm_ledger_report::tile::gemm_lines;
use llm_ledger_report::{human, TileReport};
use maud::{html, Markup};

/// The page's keys.
pub(super) const KEYS: &[&str] = &["m", "n", "k", "tile", "output"];

/// The GEMM when none is given: Llama 3 8B's MLP up-projection for a 2,048-token prompt.
pub(super) const DEFAULT_SHAPE: (&str, &str, &str) = ("2048", "14336", "4096");

/// Their text boxes.
pub(super) const INPUTS: &[PageInput] = &[
    PageInput { name: "m", label: "M (rows: tokens)", help: "rows of A and C", placeholder: DEFAULT_SHAPE.0 },
    PageInput { name: "n", label: "N (output features)", help: "columns of B and C", placeholder: DEFAULT_SHAPE.1 },
    PageInput { name: "k", label: "K (input features)", help: "the reduction dimension", placeholder: DEFAULT_SHAPE.2 },
    PageInput {
        name: "tile",
        label: "Tile",
        help: "force BMxBNxBK or BMxBNxBKxSTAGES; empty: the fastest candidate",
        placeholder: "fastest candidate",
    },
    PageInput { name: "output", label: "Output precision", help: "storage of C", placeholder: "the activations'" },
];

/// Scenario keys the page does not use (it takes the GPU, weights, activations and efficiencies).
pub(super) const UNUSED: &[&str] = &[
    "model",
    "phase",
    "ctx",
    "batch",
    "contexts",
    "kv",
    "gemm_activations",
    "flash",
    "causal",
    "logits",
    "counting",
    "mla",
    "attend",
    "zipf",
];

/// The GEMM the query describes, as the `tile` command's request (the shape's defaults filled in).
fn request(q: &PageQuery) -> GemmRequest {
    let s = |v: Option<&str>| v.map(str::to_string);
    GemmRequest {
        m: s(q.extra("m").or(Some(DEFAULT_SHAPE.0))),
        n: s(q.extra("n").or(Some(DEFAULT_SHAPE.1))),
        k: s(q.extra("k").or(Some(DEFAULT_SHAPE.2))),
        gpu: None,
        tile: s(q.extra("tile")),
        weights: s(q.get("weights")),
        activations: s(q.get("activations")),
        output: s(q.extra("output")),
        compute_efficiency: s(q.get("compute_efficiency")),
        bandwidth_efficiency: s(q.get("bandwidth_efficiency")),
    }
}

/// The `/api/tile` query of a request on a GPU.
fn api_href(req: &GemmRequest, gpu: &str, format: Option<&str>) -> String {
    let pairs: Vec<(&str, &str)> = [
        ("m", req.m.as_deref()),
        ("n", req.n.as_deref()),
        ("k", req.k.as_deref()),
        ("gpu", Some(gpu)),
        ("tile", req.tile.as_deref()),
        ("weights", req.weights.as_deref()),
        ("activations", req.activations.as_deref()),
        ("output", req.output.as_deref()),
        ("compute_efficiency", req.compute_efficiency.as_deref()),
        ("bandwidth_efficiency", req.bandwidth_efficiency.as_deref()),
        ("format", format),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect();
    format!("/api/tile?{}", serde_urlencoded::to_string(&pairs).unwrap_or_default())
}

/// The page body.
pub(super) fn render(ctx: &PageCtx) -> Result<Markup, AppError> {
    let q = ctx.query;
    let r = ctx.resolve()?;
    let gpu = &r.scenario.gpu;
    let req = request(q);
    let inputs = req.resolve().map_err(|e| q.core_error(&e))?;
    let report = q.checked(TileReport::build(&inputs, gpu).map_err(|e| q.core_error(&e))?)?;
    let t = &report.tiling;
    let grid = TileGrid { tiling: t, title: None }.svg_with_reread(PlotSize { width: 820, height: 560 });
    let sh = &t.shape;
    let items = vec![
        (
            "tile",
            "tile",
            None,
            format!("{}×{}×{}", report.tile_m, report.tile_n, report.tile_k),
            format!(
                "{} stages, {} warps; {}",
                report.stages,
                t.tile.warps,
                if report.forced { "forced" } else { "the fastest candidate" }
            ),
        ),
        (
            "tiles",
            "tiles",
            Some(t.tiles as f64),
            human::count(t.tiles),
            format!(
                "{} rows × {} columns, {} K steps",
                human::count(t.tiles_m),
                human::count(t.tiles_n),
                human::count(t.tiles_k)
            ),
        ),
        (
            "waves",
            "waves",
            Some(t.waves as f64),
            human::count(t.waves),
            format!(
                "of {} ({} SMs × {} CTA/SM); the last {} full",
                t.wave_size,
                t.sm_count,
                report.ctas_per_sm,
                human::percent(t.tail_utilisation)
            ),
        ),
        (
            "occupancy",
            "ctas-per-sm",
            Some(report.ctas_per_sm as f64),
            format!("{} CTA/SM", report.ctas_per_sm),
            format!("limited by {}; {} of shared memory per CTA", report.limiter, human::bytes(t.smem_bytes as f64)),
        ),
        (
            "executed FLOPs",
            "padded-flops",
            Some(t.padded_flops),
            human::flops(t.padded_flops),
            format!(
                "for {} useful ({:+.1} % padding)",
                human::flops(t.flops),
                (t.padded_flops / t.flops - 1.0) * 100.0
            ),
        ),
        (
            "reuse factor",
            "reuse-factor",
            Some(t.reuse_factor),
            human::ratio(t.reuse_factor),
            format!("{} moved by the tiles vs {} read once", human::bytes(t.tiled_bytes), human::bytes(t.ideal_bytes)),
        ),
        (
            "DRAM (L2 sharing)",
            "dram-bytes",
            Some(t.dram_bytes),
            human::bytes(t.dram_bytes),
            format!("{} read-once, waves sharing panels through L2", human::ratio(t.dram_bytes / t.ideal_bytes)),
        ),
        (
            "modelled time",
            "time",
            Some(t.time_s),
            human::seconds(t.time_s),
            format!("{}-bound; the roofline says {}", t.bound.name(), human::seconds(report.roofline_time_s)),
        ),
    ];
    Ok(html! {
        h1 { "GEMM tiling" }
        p.lead {
            "One matrix product C[M×N] = A[M×K]·B[K×N] as the GPU runs it: cut into thread-block tiles, the tiles run in "
            "waves of one per free slot on the SMs, and every strip of A and B is re-read by each tile that needs it. "
            "Padding, a partial last wave and the re-reads are what the operator's roofline does not see."
        }
        p.headline #headline {
            "GEMM " (human::count(sh.m)) " × " (human::count(sh.n)) " × " (human::count(sh.k)) " (A " (sh.a) " · B " (sh.b) " → C " (sh.c) ", "
            (t.math.name()) " math) on " (gpu.display) " (" (t.sm_count) " SMs)"
        }
        (facts(&items))
        (figure(&grid, true, html! {
                "The output C drawn to scale, one rectangle per tile, coloured by the wave it runs in (tiles launch in "
                "groups of 8 tile rows, column by column); hatched: padding the tile computes past M or N. Hover a tile for its wave. "
                "Outlined: one tile, the tiles of its row (each re-reads the same strip of A) and of its column (the same strip "
                "of B) — the re-reads the reuse factor counts."
        }))
        section.addup aria-label="why" {
            h2 { "Why this tile, and what it costs" }
            p #reason { (report.reason) }
            ul.explanation {
                @for line in gemm_lines(t, report.roofline_time_s) { li { (line) } }
            }
        }
        table.ledger #candidates {
            caption { "Every candidate tile on this GPU (click one to force it)" }
            (thead(&[("tile", false), ("from", false), ("CTA/SM", true), ("limit", false), ("tiles", true), ("waves", true),
                ("tail", true), ("executed", true), ("tiled bytes", true), ("DRAM", true), ("time", true)]))
            tbody {
                @for c in &report.candidates {
                    tr data-tile=(c.tile) aria-current=[c.chosen.then_some("true")] class=[(!c.fits).then_some("rejected")] {
                        td {
                            @if c.fits { a href=(ctx.self_href(&[], &[("tile", Some(&c.tile))])) { code { (c.tile) } } }
                            @else { code { (c.tile) } }
                        }
                        td { (c.source) }
                        td.num { (c.ctas_per_sm.map(|v| v.to_string()).unwrap_or_default()) }
                        td { (c.limiter.clone().or_else(|| c.rejection.clone()).unwrap_or_default()) }
                        td.num { (c.tiles.map(human::count).unwrap_or_default()) }
                        td.num { (c.waves.map(|v| v.to_string()).unwrap_or_default()) }
                        td.num { (c.tail_utilisation.map(human::percent).unwrap_or_default()) }
                        @match c.padded_flops { Some(v) => (num(v, human::flops(v))), None => td {} }
                        @match c.tiled_bytes { Some(v) => (num(v, human::bytes(v))), None => td {} }
                        @match c.dram_bytes { Some(v) => (num(v, human::bytes(v))), None => td {} }
                        @match c.time_s { Some(v) => (num(v, human::seconds(v))), None => td {} }
                    }
                }
            }
        }
        @if report.forced {
            p { a href=(ctx.self_href(&[], &[("tile", None)])) { "Back to the fastest candidate" } }
        }
        (downloads(&api_href(&req, &gpu.name, None), &api_href(&req, &gpu.name, Some("csv")),
            &format!("llm-ledger tile --m {} --n {} --k {} --gpu {} --format json|csv", sh.m, sh.n, sh.k, gpu.name)))
    })
}
