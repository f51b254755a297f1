//! One GEMM's tile grid drawn to scale: the output `C[M×N]` cut into `BM × BN` thread-block
//! tiles, each tile coloured by the wave it runs in, the padding a tile computes past `M` or `N`
//! shaded, and the tile, wave, occupancy and traffic numbers beside it
//! (`shared/research/gemm-tiling.md` §2–§6; the numbers are the core's [`GemmTiling`]).
//!
//! - **Scale**: one user unit is the same number of output elements across and down, so a
//!   128 × 256 tile is twice as wide as it is tall and the shaded padding is its true share.
//! - **Waves**: tiles launch in Triton's grouped order (`GROUP_M` = 8 tile rows at a time, column
//!   by column inside a group — the raster the DRAM model of [`llm_ledger_core::tiling::gemm`]
//!   assumes), `wave_size` = SMs × CTAs per SM at a time, so tile `i` of that order runs in wave
//!   `⌊i ÷ wave_size⌋`. Colours repeat every eight waves.
//! - **Large grids** are drawn in cells of `f × f` tiles (`f` a power of two, the fewest that keeps
//!   at most [`MAX_CELLS`] cells); a cell takes the colour of its first tile's wave.
//! - **Long grids** (decode's single tile row, or a tall skinny product) are wrapped into bands
//!   along their long side, each band labelled with the tile rows or columns it holds, so a tile
//!   keeps its proportions instead of shrinking to a sliver.
//!
//! Only the first of several instances (`batch`, e.g. MoE experts) is drawn; the wave numbers
//! count from it.

use super::svg::{plain, Anchor, Overlay, FG};
use super::{PlotError, PlotSize};
use crate::human;
use llm_ledger_core::tiling::gemm::{GemmTiling, GROUP_M};

/// Most cells drawn (each is one SVG element with a tooltip).
pub const MAX_CELLS: u64 = 1024;

/// Wave colours: mid-tones that read on light and dark pages, neighbours far apart.
pub const WAVE_COLOURS: [&str; 8] =
    ["#3B82F6", "#E8710A", "#2DA44E", "#A371F7", "#E5484D", "#1B9AAA", "#BF8700", "#DB61A2"];

/// Width of the numbers column, user units.
const SIDE_W: f64 = 250.0;
const FONT: f64 = 12.0;
/// Gap between bands, and the room for a band's label, user units.
const BAND_GAP: f64 = 6.0;
const LABEL_ROOM: f64 = 13.0;

/// A tile grid's data.
#[derive(Debug, Clone)]
pub struct TileGrid<'a> {
    /// The tiling to draw.
    pub tiling: &'a GemmTiling,
    /// Title line above the grid.
    pub title: Option<String>,
}

/// The wave tile `(row, col)` runs in, launched in grouped order.
pub fn wave_of(t: &GemmTiling, row: u64, col: u64) -> u64 {
    let group = row / GROUP_M;
    let rows_in_group = GROUP_M.min(t.tiles_m - group * GROUP_M);
    let index = group * GROUP_M * t.tiles_n + col * rows_in_group + (row - group * GROUP_M);
    index / t.wave_size.max(1)
}

/// The layout of the grid: cell size in tiles, cells per band along the long side, bands, and
/// the scale (user units per output element) that fits them in the box.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Layout {
    /// Tiles per cell side.
    f: u64,
    /// Cell rows and columns.
    rows: u64,
    cols: u64,
    /// Whether bands split the columns (a wide grid, bands stacked down) or the rows (a tall one,
    /// bands side by side).
    wide: bool,
    /// Cells per band along the split side, and bands.
    per_band: u64,
    bands: u64,
    /// User units per output element.
    scale: f64,
}

impl Layout {
    /// One band's size in output elements (the padded grid).
    fn band_elements(&self, t: &GemmTiling) -> (f64, f64) {
        let f = self.f as f64;
        let (bm, bn) = (t.tile.bm as f64, t.tile.bn as f64);
        if self.wide {
            (self.per_band as f64 * f * bn, self.rows as f64 * f * bm)
        } else {
            (self.cols as f64 * f * bn, self.per_band as f64 * f * bm)
        }
    }

    /// Room for a band's label above it.
    fn label_room(&self) -> f64 {
        if self.bands > 1 && self.wide {
            LABEL_ROOM
        } else {
            0.0
        }
    }

    /// The drawn size, user units.
    fn drawn(&self, t: &GemmTiling) -> (f64, f64) {
        let (bw, bh) = self.band_elements(t);
        let nb = self.bands as f64;
        if self.wide {
            (bw * self.scale, nb * (bh * self.scale + self.label_room()) + (nb - 1.0) * BAND_GAP)
        } else {
            (nb * bw * self.scale + (nb - 1.0) * BAND_GAP, bh * self.scale)
        }
    }
}

/// Cells of `f × f` tiles, the fewest that keep at most [`MAX_CELLS`] cells; then the number of
/// bands that draws the grid largest in a `w × h` box.
fn layout(t: &GemmTiling, w: f64, h: f64) -> Layout {
    let mut f = 1u64;
    while t.tiles_m.div_ceil(f).saturating_mul(t.tiles_n.div_ceil(f)) > MAX_CELLS {
        f *= 2;
    }
    let (rows, cols) = (t.tiles_m.div_ceil(f), t.tiles_n.div_ceil(f));
    let wide = (cols * t.tile.bn) as f64 >= (rows * t.tile.bm) as f64;
    let cells = if wide { cols } else { rows };
    let mut best = Layout { f, rows, cols, wide, per_band: cells, bands: 1, scale: 0.0 };
    for bands in 1..=cells.min(64) {
        let per_band = cells.div_ceil(bands);
        let mut l = Layout { per_band, bands: cells.div_ceil(per_band), scale: 1.0, ..best };
        let (ew, eh) = l.band_elements(t);
        let nb = l.bands as f64;
        l.scale = if wide {
            (w / ew).min((h - nb * l.label_room() - (nb - 1.0) * BAND_GAP) / (nb * eh))
        } else {
            ((w - (nb - 1.0) * BAND_GAP) / (nb * ew)).min(h / eh)
        };
        // More bands only for a clearly larger drawing.
        if l.scale > best.scale * 1.05 {
            best = l;
        }
    }
    best
}

/// The colour of wave `w` of `waves`: the categorical [`WAVE_COLOURS`] for up to eight waves, else
/// a ramp from the first wave's colour to the last's (so the order of the waves shows).
pub fn wave_colour(w: u64, waves: u64) -> String {
    if waves <= WAVE_COLOURS.len() as u64 {
        return WAVE_COLOURS[w as usize].to_string();
    }
    const STOPS: [(f64, f64, f64); 3] = [(59.0, 130.0, 246.0), (45.0, 164.0, 78.0), (232.0, 113.0, 10.0)];
    let x = w as f64 / (waves - 1) as f64 * 2.0;
    let i = (x.floor() as usize).min(1);
    let u = x - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |p: f64, q: f64| (p + (q - p) * u).round() as u8;
    format!("#{:02X}{:02X}{:02X}", mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Outline colours of one tile's re-read strips (A's row, B's column).
const STRIP_A: &str = "#E5484D";
const STRIP_B: &str = "#1B9AAA";

/// An outlined rectangle with a class (a re-read strip's cell).
fn strip_rect(x: f64, y: f64, w: f64, h: f64, class: &str, stroke: &str, width: f64) -> String {
    format!(
        "<rect class=\"{class}\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{width}\"/>"
    )
}

/// The hover text of a cell of tiles `rows × cols` (half-open tile ranges) running in waves
/// `w0`…`w1`: which tiles, the output elements they cover (padding past M or N named), the wave.
fn cell_tip(t: &GemmTiling, (r0, r1): (u64, u64), (c0, c1): (u64, u64), (w0, w1): (u64, u64)) -> String {
    let (bm, bn) = (t.tile.bm, t.tile.bn);
    let span = |lo: u64, hi: u64, tile: u64, of: u64, what: &str| {
        let (a, b) = (lo * tile + 1, hi * tile);
        let pad = b.saturating_sub(of);
        let range = format!("{what} {}–{}", human::count(a), human::count(b.min(of)));
        if pad > 0 {
            format!("{range} (+{} padding past {})", human::count(pad), human::count(of))
        } else {
            range
        }
    };
    let which = if r1 - r0 == 1 && c1 - c0 == 1 {
        format!("tile row {}, column {}", r0 + 1, c0 + 1)
    } else {
        format!("tile rows {}–{}, columns {}–{}", r0 + 1, r1, c0 + 1, c1)
    };
    let waves = if w0 == w1 {
        format!("wave {} of {}", w0 + 1, t.waves)
    } else {
        format!("waves {}–{} of {}", w0.min(w1) + 1, w0.max(w1) + 1, t.waves)
    };
    format!(
        "{which}: {waves}\noutput {} × {} elements\ntile {bm}×{bn}",
        span(r0, r1, bm, t.shape.m, "rows"),
        span(c0, c1, bn, t.shape.n, "columns")
    )
}

/// The hatching of padding (one `<pattern>`, referenced by the padded parts of tiles).
const HATCH_ID: &str = "tile-grid-padding";

impl TileGrid<'_> {
    /// Render as an inline `<svg>` element (see [`super::standalone`] for a file). The height is
    /// at most `size.height`, less when the grid and its numbers need less.
    pub fn svg(&self, size: PlotSize) -> Result<String, PlotError> {
        self.draw(size, None)
    }

    /// As [`TileGrid::svg`], with one tile's re-read strips outlined: the tile in the middle of the
    /// grid, the tiles of its row (each reads the same rows of A: that strip is read `tiles_n`
    /// times) and of its column (each reads the same columns of B: read `tiles_m` times). The
    /// reuse factor is these re-reads summed over the grid.
    pub fn svg_with_reread(&self, size: PlotSize) -> Result<String, PlotError> {
        let t = self.tiling;
        self.draw(size, Some((t.tiles_m / 2, t.tiles_n / 2)))
    }

    fn draw(&self, size: PlotSize, reread: Option<(u64, u64)>) -> Result<String, PlotError> {
        let t = self.tiling;
        if t.tiles_m == 0 || t.tiles_n == 0 || t.wave_size == 0 {
            return Err(PlotError("a tiling with no tiles".into()));
        }
        if f64::from(size.width) < SIDE_W + 200.0 || size.height < 300 {
            return Err(PlotError(format!("a {}×{} plot is too small", size.width, size.height)));
        }
        let top = if self.title.is_some() { 34.0 } else { 14.0 };
        let left = 12.0;
        let avail_w = f64::from(size.width) - SIDE_W - left - 16.0;
        let avail_h = f64::from(size.height) - top - 12.0;
        let l = layout(t, avail_w, avail_h);
        let scale = l.scale;
        if !(scale.is_finite() && scale > 0.0) {
            return Err(PlotError("the grid does not fit the plot".into()));
        }
        let (bm, bn) = (t.tile.bm as f64, t.tile.bn as f64);
        let f = l.f as f64;
        let (band_w, band_h) = l.band_elements(t);
        let label_room = l.label_room();

        let mut o = Overlay::default();
        o.raw(&format!(
            "<defs><pattern id=\"{HATCH_ID}\" patternUnits=\"userSpaceOnUse\" width=\"5\" height=\"5\" patternTransform=\"rotate(45)\"><rect width=\"2\" height=\"5\" fill=\"{FG}\" fill-opacity=\"0.55\"/></pattern></defs>"
        ));
        let hatch = format!("url(#{HATCH_ID})");
        if let Some(title) = &self.title {
            o.text(((f64::from(size.width) / 2.0) as i32, 20), title, FONT + 1.0, FG, Anchor::Middle, 0.0);
        }
        let (m, n) = (t.shape.m as f64, t.shape.n as f64);
        for band in 0..l.bands {
            let (bx, by) = if l.wide {
                (left, top + band as f64 * (band_h * scale + label_room + BAND_GAP))
            } else {
                (left + band as f64 * (band_w * scale + BAND_GAP), top)
            };
            let first = band * l.per_band;
            let last = ((band + 1) * l.per_band).min(if l.wide { l.cols } else { l.rows });
            // The band's label (wide grids): the tile columns it holds.
            let (lo, hi) = (first * l.f, (last * l.f).min(if l.wide { t.tiles_n } else { t.tiles_m }));
            if label_room > 0.0 {
                let label = format!("tile columns {}–{}", human::count(lo + 1), human::count(hi));
                o.text((bx as i32, (by + 10.0) as i32), &label, FONT - 2.0, FG, Anchor::Start, 0.0);
            }
            let gy = by + label_room;
            let (rows, cols) = if l.wide { (0..l.rows, first..last) } else { (first..last, 0..l.cols) };
            let cell_px = (f * bn * scale).min(f * bm * scale);
            for r in rows.clone() {
                for c in cols.clone() {
                    let (r0, c0) = (r * l.f, c * l.f);
                    let (r1, c1) = (((r + 1) * l.f).min(t.tiles_m), ((c + 1) * l.f).min(t.tiles_n));
                    let (dr, dc) = if l.wide { (r, c - first) } else { (r - first, c) };
                    let x = bx + dc as f64 * f * bn * scale;
                    let y = gy + dr as f64 * f * bm * scale;
                    let (w, h) = ((c1 - c0) as f64 * bn * scale, (r1 - r0) as f64 * bm * scale);
                    let (w0, w1) = (wave_of(t, r0, c0), wave_of(t, r1 - 1, c1 - 1));
                    let tip = cell_tip(t, (r0, r1), (c0, c1), (w0, w1));
                    let colour = wave_colour(w0, t.waves);
                    // Padding: the part of the cell past M (below) or past N (right), faded and hatched.
                    let (real_h, real_w) = (
                        ((m - (r0 as f64) * bm) * scale).clamp(0.0, h),
                        ((n - (c0 as f64) * bn) * scale).clamp(0.0, w),
                    );
                    // The tile's own rectangle carries its outline (when cells are big enough to
                    // show one) and its tooltip; the real part and the padding are drawn over it.
                    if cell_px >= 4.0 {
                        o.cell_outlined((x, y, w, h), &colour, 0.3, "tile", &tip, 0.6);
                    } else {
                        o.cell(x, y, w, h, &colour, 0.3, "tile", Some(&tip));
                    }
                    o.cell(x, y, real_w, real_h, &colour, 0.9, "real", None);
                    if real_w < w {
                        o.cell(x + real_w, y, w - real_w, h, &hatch, 1.0, "pad", None);
                    }
                    if real_h < h {
                        o.cell(x, y + real_h, real_w, h - real_h, &hatch, 1.0, "pad", None);
                    }
                    if let Some((tr, tc)) = reread {
                        let (in_row, in_col) = ((r0..r1).contains(&tr), (c0..c1).contains(&tc));
                        if in_row && in_col {
                            o.raw(&strip_rect(x, y, w, h, "reread-tile", FG, 3.0));
                        } else if in_row {
                            o.raw(&strip_rect(x, y, w, h, "reread-a", STRIP_A, 2.0));
                        } else if in_col {
                            o.raw(&strip_rect(x, y, w, h, "reread-b", STRIP_B, 2.0));
                        }
                    }
                }
            }
            let (bw, bh) = if l.wide {
                ((hi - lo) as f64 * bn * scale, t.tiles_m as f64 * bm * scale)
            } else {
                (t.tiles_n as f64 * bn * scale, (hi - lo) as f64 * bm * scale)
            };
            o.outline(bx, gy, bw, bh, FG, 1.0);
        }
        let mut side_bottom = self.side(&mut o, f64::from(size.width) - SIDE_W + 8.0, top + 4.0, &l);
        if let Some((tr, tc)) = reread {
            let x = f64::from(size.width) - SIDE_W + 8.0;
            let mut y = side_bottom + 10.0;
            let lines = [
                (FG, format!("outlined: tile row {}, column {}", tr + 1, tc + 1)),
                (STRIP_A, format!("its row: {} read the same A strip", human::plural(t.tiles_n, "tile"))),
                (STRIP_B, format!("its column: {} read the same B strip", human::plural(t.tiles_m, "tile"))),
            ];
            for (colour, text) in lines {
                o.raw(&strip_rect(x, y - 9.0, 14.0, 10.0, "legend", colour, 2.0));
                o.text(((x + 20.0) as i32, y as i32), &text, FONT - 2.0, FG, Anchor::Start, 0.0);
                y += 14.0;
            }
            side_bottom = y;
        }
        let height = (top + l.drawn(t).1 + 12.0).max(side_bottom + 8.0).min(f64::from(size.height)).ceil() as u32;
        let label = format!(
            "Tile grid of a {} × {} × {} GEMM: {} of {}×{} in {} wave{}",
            human::count(t.shape.m),
            human::count(t.shape.n),
            human::count(t.shape.k),
            human::plural(t.tiles, "tile"),
            t.tile.bm,
            t.tile.bn,
            t.waves,
            if t.waves == 1 { "" } else { "s" }
        );
        Ok(plain((size.width, height), o, "plot tile-grid", &label))
    }

    /// The numbers column: tile, grid, waves (with their colours), occupancy, padding, traffic.
    fn side(&self, o: &mut Overlay, x: f64, y0: f64, l: &Layout) -> f64 {
        let t = self.tiling;
        let mut y = y0 + 10.0;
        let xi = x as i32;
        let line = |o: &mut Overlay, y: &mut f64, s: &str, size: f64| {
            o.text((xi, *y as i32), s, size, FG, Anchor::Start, 0.0);
            *y += size + 4.0;
        };
        line(o, &mut y, &format!("tile {}×{}×{}, {} stages", t.tile.bm, t.tile.bn, t.tile.bk, t.tile.stages), FONT);
        line(
            o,
            &mut y,
            &format!(
                "grid {} × {} = {}",
                human::count(t.tiles_m),
                human::count(t.tiles_n),
                human::plural(t.tiles, "tile")
            ),
            FONT - 1.0,
        );
        line(o, &mut y, &format!("{} K steps of {}", human::count(t.tiles_k), t.tile.bk), FONT - 1.0);
        y += 4.0;
        line(
            o,
            &mut y,
            &format!(
                "{} CTA/SM × {} SMs = waves of {}",
                t.occupancy.ctas_per_sm,
                t.sm_count,
                human::count(t.wave_size)
            ),
            FONT - 1.0,
        );
        line(
            o,
            &mut y,
            &format!(
                "{} wave{}, last {} tiles ({})",
                t.waves,
                if t.waves == 1 { "" } else { "s" },
                human::count(t.tail_tiles),
                human::percent(t.tail_utilisation)
            ),
            FONT - 1.0,
        );
        if t.waves <= WAVE_COLOURS.len() as u64 {
            for w in 0..t.waves {
                let yy = y + 2.0;
                o.cell(x, yy - 9.0, 14.0, 10.0, &wave_colour(w, t.waves), 0.9, "legend", None);
                let count = if w + 1 == t.waves { t.tail_tiles } else { t.wave_size.min(t.tiles) };
                let text = format!("wave {}: {} tiles", w + 1, human::count(count));
                o.text((xi + 20, yy as i32), &text, FONT - 2.0, FG, Anchor::Start, 0.0);
                y += 13.0;
            }
        } else {
            // A ramp from the first wave to the last.
            for i in 0..16 {
                let w = i * (t.waves - 1) / 15;
                o.cell(x + i as f64 * 9.0, y - 7.0, 9.0, 10.0, &wave_colour(w, t.waves), 0.9, "legend", None);
            }
            y += 14.0;
            let text = format!("wave 1 → wave {} (last: {} tiles)", human::count(t.waves), human::count(t.tail_tiles));
            line(o, &mut y, &text, FONT - 2.0);
        }
        y += 4.0;
        o.cell(x, y - 9.0, 14.0, 10.0, &format!("url(#{HATCH_ID})"), 1.0, "legend", None);
        let pad = if t.padded_flops > t.flops {
            format!("padding: {} more FLOPs", human::percent(t.padded_flops / t.flops - 1.0))
        } else {
            "no padding".to_string()
        };
        o.text((xi + 20, y as i32), &pad, FONT - 2.0, FG, Anchor::Start, 0.0);
        y += 17.0;
        line(o, &mut y, &format!("SMs busy: {} of {}", t.busy_sms, t.sm_count), FONT - 1.0);
        line(o, &mut y, &format!("bytes {} re-read (reuse factor)", crate::human::ratio(t.reuse_factor)), FONT - 1.0);
        line(
            o,
            &mut y,
            &format!("{} tiled vs {} read once", human::bytes(t.tiled_bytes), human::bytes(t.ideal_bytes)),
            FONT - 2.0,
        );
        line(
            o,
            &mut y,
            &format!("tile-model time {} ({}-bound)", human::seconds(t.time_s), t.bound.name()),
            FONT - 1.0,
        );
        y += 4.0;
        if l.f > 1 {
            line(o, &mut y, &format!("each cell: {0}×{0} tiles", l.f), FONT - 2.0);
        }
        if l.bands > 1 && !l.wide {
            let per = (l.per_band * l.f).min(t.tiles_m);
            line(o, &mut y, &format!("bands of {} tile rows, left to right", human::count(per)), FONT - 2.0);
        }
        if t.shape.batch > 1 {
            line(o, &mut y, &format!("instance 1 of {} shown", human::count(t.shape.batch)), FONT - 2.0);
        }
        line(
            o,
            &mut y,
            &format!("to scale: M {} × N {}", human::count(t.shape.m), human::count(t.shape.n)),
            FONT - 2.0,
        );
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_ledger_core::hardware::builtin_gpus;
    use llm_ledger_core::tiling::{tile_gemm, GemmShape, TileConfig};
    use llm_ledger_core::{Efficiency, Precision};

    fn tiling(m: u64, n: u64, k: u64, bm: u64, bn: u64) -> GemmTiling {
        let shape = GemmShape::new(m, n, k, 1, Precision::Bf16, Precision::Bf16, Precision::Bf16, false).unwrap();
        let gpu = builtin_gpus().iter().find(|g| g.name == "h100-sxm").unwrap();
        let tile = TileConfig { bm, bn, bk: 64, stages: 4, warps: 4 };
        tile_gemm(&shape, tile, "t", gpu, Efficiency::default()).unwrap()
    }

    #[test]
    fn waves_follow_the_grouped_launch_order() {
        // 1000×1000 with 128×128: 8 × 8 tiles, one group of 8 rows; 132 SMs × 1 CTA ≥ 64: one wave.
        let t = tiling(1000, 1000, 1000, 128, 128);
        assert_eq!((t.tiles_m, t.tiles_n, t.waves), (8, 8, 1));
        assert_eq!(wave_of(&t, 7, 7), 0);
        // 4096×14336 with 128×128 (2 CTA/SM on H100? the core says; take its wave size): tile
        // (0, c) of group 0 has index 8c, so it runs in wave ⌊8c ÷ W⌋.
        let t = tiling(4096, 14336, 4096, 128, 128);
        let w = t.wave_size;
        assert_eq!(wave_of(&t, 0, 20), 8 * 20 / w);
        assert_eq!(wave_of(&t, 9, 0), (8 * t.tiles_n + 1) / w);
        // The last tile runs in the last wave.
        assert_eq!(wave_of(&t, t.tiles_m - 1, t.tiles_n - 1), t.waves - 1);
    }

    #[test]
    fn a_small_grid_draws_every_tile_with_its_padding() {
        // 1000 = 7·128 + 104: the last row and column of tiles are padded.
        let t = tiling(1000, 1000, 1000, 128, 128);
        let s = TileGrid { tiling: &t, title: None }.svg(PlotSize::default()).unwrap();
        assert_eq!(s.matches("<rect class=\"tile\"").count(), 64);
        // 7 padded strips on the right, 7 at the bottom, and the corner's two.
        assert_eq!(s.matches("<rect class=\"pad\"").count(), 16);
        assert_eq!(s.matches("<rect class=\"real\"").count(), 64);
        assert!(s.contains("<title>tile row 8, column 8: wave 1 of 1\n"), "{s}");
        assert!(s.contains("padding: 7.4 % more FLOPs") || s.contains("padding: 7.37 % more FLOPs"), "{s}");
        assert!(!s.contains("#000000"));
    }

    #[test]
    fn decode_is_one_padded_tile_row_wrapped_into_bands() {
        // M = 1 with BM = 64: one tile row, 63 of its 64 rows padding, 14336 ÷ 128 = 112 columns.
        let t = tiling(1, 14336, 4096, 64, 128);
        let l = layout(&t, 500.0, 450.0);
        assert!(l.wide && l.bands > 1 && l.f == 1, "{l:?}");
        let s = TileGrid { tiling: &t, title: Some("decode".into()) }.svg(PlotSize::default()).unwrap();
        assert_eq!(s.matches("<rect class=\"tile\"").count(), 112);
        assert!(s.contains("tile columns 1–"));
        // Every tile is padded below its one real row.
        assert_eq!(s.matches("<rect class=\"pad\"").count(), 112);
    }

    /// Every cell's `<title>` names its tiles, the output elements they cover
    /// (padding past M and N) and its wave, from the tiling's numbers.
    #[test]
    fn every_cell_carries_its_tiles_elements_and_wave() {
        for (m, n, bm, bn) in [(1000, 1000, 128, 128), (1, 14336, 64, 128), (1 << 20, 16384, 128, 128)] {
            let t = tiling(m, n, 4096, bm, bn);
            let s = TileGrid { tiling: &t, title: None }.svg(PlotSize::default()).unwrap();
            let cells: Vec<_> = crate::plot::marks(&s).into_iter().filter(|c| c.class == "tile").collect();
            let l = layout(&t, 0.0, 0.0);
            assert_eq!(cells.len() as u64, l.rows * l.cols);
            // The last cell drawn holds the grid's last tile: its rows end at M and its columns at N.
            let last = cells.last().unwrap();
            for end in [m, n] {
                assert!(last.tooltip.contains(&format!("–{}", human::count(end))), "{}", last.tooltip);
            }
            let pad_m = t.tiles_m * bm - m;
            if pad_m > 0 {
                assert!(
                    last.tooltip.contains(&format!("(+{} padding past {})", human::count(pad_m), human::count(m))),
                    "{}",
                    last.tooltip
                );
            }
            assert!(last.tooltip.contains(&format!("of {}\n", t.waves)), "{}", last.tooltip);
            assert!(cells.iter().all(|c| c.tooltip.ends_with(&format!("tile {bm}×{bn}"))));
        }
    }

    #[test]
    fn many_waves_take_a_ramp_from_the_first_colour_to_the_last() {
        assert_eq!(wave_colour(0, 3), WAVE_COLOURS[0]);
        assert_eq!(wave_colour(0, 100), "#3B82F6");
        assert_eq!(wave_colour(99, 100), "#E8710A");
        assert_eq!(wave_colour(0, 9), wave_colour(0, 100));
    }

    /// One tile's re-read strips are outlined — the tiles of its row (A) and column (B).
    #[test]
    fn the_reread_strips_of_one_tile_are_outlined() {
        let t = tiling(1000, 1000, 1000, 128, 128);
        let s = TileGrid { tiling: &t, title: None }.svg_with_reread(PlotSize { width: 820, height: 560 }).unwrap();
        assert_eq!(s.matches("class=\"reread-tile\"").count(), 1);
        assert_eq!(s.matches("class=\"reread-a\"").count() as u64, t.tiles_n - 1, "the rest of its row");
        assert_eq!(s.matches("class=\"reread-b\"").count() as u64, t.tiles_m - 1, "the rest of its column");
        assert!(s.contains("its row: 8 tiles read the same A strip"), "{s}");
        let plain = TileGrid { tiling: &t, title: None }.svg(PlotSize { width: 820, height: 560 }).unwrap();
        assert!(!plain.contains("reread-"));
    }

    #[test]
    fn a_huge_grid_is_drawn_in_cells() {
        let t = tiling(1 << 20, 16384, 4096, 128, 128);
        let l = layout(&t, 500.0, 450.0);
        assert!(l.f > 1 && l.rows * l.cols <= MAX_CELLS, "{l:?}");
        let s = TileGrid { tiling: &t, title: None }.svg(PlotSize::default()).unwrap();
        assert!(s.matches("<rect class=\"tile\"").count() as u64 <= MAX_CELLS);
        assert!(s.contains(&format!("each cell: {0}×{0} tiles", l.f)));
    }
}
