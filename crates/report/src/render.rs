//! One renderer per output format behind a small trait. A report supplies its serde form (JSON),
//! its flat serde rows (CSV, so the columns cannot drift from JSON's row objects), and a human
//! layout (headers, formatted cells, footer) shared by the table and Markdown renderers.

use llm_ledger_core::error::{Error, Result};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Aligned text table with human units (default).
    #[default]
    Table,
    /// The report as JSON: plain SI numbers.
    Json,
    /// The rows as CSV: plain SI numbers, the same fields as JSON's row objects.
    Csv,
    /// A Markdown table with human units.
    Md,
}

impl FromStr for Format {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "table" => Ok(Format::Table),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            "md" | "markdown" => Ok(Format::Md),
            _ => Err(Error::unknown("format", s, ["table", "json", "csv", "md"]).about("format")),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Md => "md",
        })
    }
}

/// A human layout: optional title lines, a header, rows of formatted cells, and footer lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HumanTable {
    /// Lines printed above the table.
    pub title: Vec<String>,
    /// Column headers.
    pub header: Vec<String>,
    /// Formatted cells.
    pub rows: Vec<Vec<String>>,
    /// Indices of columns to right-align (numbers).
    pub right_aligned: Vec<usize>,
    /// Lines printed below the table.
    pub footer: Vec<String>,
    /// How readily each column is hidden when the table is fitted to a width: 0 never, higher
    /// first (ties: the rightmost first). Empty: every column but the first, rightmost first.
    pub priority: Vec<u8>,
}

/// Something that renders in every [`Format`].
pub trait Report: Serialize {
    /// Flat row type for CSV.
    type CsvRow: Serialize;

    /// The rows for CSV.
    fn csv_rows(&self) -> Vec<Self::CsvRow>;

    /// The human layout for table and Markdown output.
    fn human(&self) -> HumanTable;

    /// Render in `format`, after checking that no number in the report (its serde form) or in
    /// its CSV rows is a NaN or an infinity: that would be a bug, reported as
    /// [`Error::NonFinite`] instead of printed.
    fn render(&self, format: Format) -> Result<String> {
        crate::finite::check("", self)?;
        if format == Format::Csv {
            crate::finite::check("csv", &self.csv_rows())?;
        }
        Ok(self.layout(format))
    }

    /// The text of [`Self::render`], unchecked: the one method a report with its own layout
    /// overrides.
    fn layout(&self, format: Format) -> String {
        match format {
            Format::Json => to_json(self),
            Format::Csv => to_csv(&self.csv_rows()),
            Format::Table => to_table(&self.human()),
            Format::Md => to_markdown(&self.human()),
        }
    }
}

/// Pretty JSON with a final newline.
pub fn to_json<R: Serialize + ?Sized>(r: &R) -> String {
    let mut s = serde_json::to_string_pretty(r).expect("reports serialise");
    s.push('\n');
    s
}

/// CSV from serde rows (header from the field names). Non-finite numbers are written empty.
pub fn to_csv<R: Serialize>(rows: &[R]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r).expect("rows serialise to CSV");
    }
    String::from_utf8(w.into_inner().expect("in-memory writer")).expect("CSV is UTF-8")
}

/// Widest a table may be, in columns (0: no limit). Set once by a front end writing to a
/// terminal ([`fit_tables_to`]); pipes, files and the explorer leave it unset and get every column.
static TABLE_WIDTH: AtomicUsize = AtomicUsize::new(0);

/// Whether tables show their wide-only columns (a ledger's time source): set by `--wide`.
static WIDE_COLUMNS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Show the wide-only columns in every table rendered from now on (`--wide`).
pub fn show_wide_columns(on: bool) {
    WIDE_COLUMNS.store(on, Ordering::Relaxed);
}

/// Whether the wide-only columns are shown ([`show_wide_columns`]).
pub fn wide_columns() -> bool {
    WIDE_COLUMNS.load(Ordering::Relaxed)
}

/// The width of the terminal stdout writes to, when it is one (`None` for a pipe or a file).
pub fn terminal_width() -> Option<usize> {
    let table = comfy_table::Table::new();
    table.is_tty().then(|| table.width()).flatten().map(usize::from)
}

/// Fit every text table rendered from now on into `columns` (see [`to_table_width`]).
pub fn fit_tables_to(columns: usize) {
    TABLE_WIDTH.store(columns, Ordering::Relaxed);
}

/// The width set by [`fit_tables_to`], if any (for tables rendered piece by piece, `sweep`'s).
pub fn table_width() -> Option<usize> {
    Some(TABLE_WIDTH.load(Ordering::Relaxed)).filter(|w| *w > 0)
}

/// An aligned text table (comfy-table, no borders beyond a header rule), fitted to the width set
/// by [`fit_tables_to`], if any.
pub fn to_table(t: &HumanTable) -> String {
    match TABLE_WIDTH.load(Ordering::Relaxed) {
        0 => to_table_width(t, None),
        w => to_table_width(t, Some(w)),
    }
}

/// The table's rows and header alone, with the columns in `keep`; no line ends in a space. With
/// `wrap_to`, cells are wrapped so that the grid fits that many columns where it can.
fn grid(t: &HumanTable, keep: &[usize], wrap_to: Option<usize>) -> String {
    use comfy_table::{CellAlignment, ContentArrangement, Table};
    // Rules above and below the table and under the header; no lines between rows.
    const STYLE: &str = "  ── ──      ──    ";
    let pick = |r: &[String]| keep.iter().map(|i| capped(r.get(*i).map_or("", String::as_str))).collect::<Vec<_>>();
    let mut table = Table::new();
    table.load_preset(STYLE).set_content_arrangement(ContentArrangement::Disabled);
    if let Some(w) = wrap_to {
        table.set_content_arrangement(ContentArrangement::Dynamic).set_width(u16::try_from(w).unwrap_or(u16::MAX));
    }
    table.set_header(pick(&t.header));
    for r in &t.rows {
        table.add_row(pick(r));
    }
    for (at, i) in keep.iter().enumerate() {
        if t.right_aligned.contains(i) {
            if let Some(c) = table.column_mut(at) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
    }
    table.lines().map(|l| l.trim_end().to_string()).collect::<Vec<_>>().join("\n")
}

/// Most characters a table cell shows: a longer one (a user's preset description, a file path
/// as a model's name) is cut, with its length, so no row runs to thousands of columns.
pub const MAX_CELL_CHARS: usize = 160;

/// `cell`, cut to [`MAX_CELL_CHARS`] with `…(N chars)` when longer.
fn capped(cell: &str) -> String {
    match cell.char_indices().nth(MAX_CELL_CHARS) {
        None => cell.to_string(),
        Some((cut, _)) => format!("{}…({} chars)", &cell[..cut], cell.chars().count()),
    }
}

/// Display width of a line, in terminal columns (every character here is one column wide).
fn width_of(line: &str) -> usize {
    line.chars().count()
}

/// Break a line at spaces into lines of at most `width` columns (a longer word stays whole; a
/// number stays with the unit after it); continuation lines keep the line's indent plus two.
pub fn wrap(line: &str, width: usize) -> Vec<String> {
    if width_of(line) <= width {
        return vec![line.to_string()];
    }
    let indent: String = line.chars().take_while(|c| *c == ' ').collect();
    // Words, with `2.0 GB` and `98 %` kept together.
    let mut words: Vec<String> = Vec::new();
    for w in line.split(' ').filter(|w| !w.is_empty()) {
        let unit = w.chars().count() <= 5 && w.starts_with(|c: char| c.is_alphabetic() || c == '%');
        match words.last_mut() {
            Some(prev) if unit && prev.ends_with(|c: char| c.is_ascii_digit()) => {
                prev.push(' ');
                prev.push_str(w);
            }
            _ => words.push(w.to_string()),
        }
    }
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let prefix = |out: &Vec<String>| if out.is_empty() { indent.clone() } else { format!("{indent}  ") };
    for word in words {
        // The prefix this line will get: the indent, and two more on a continuation line.
        if !cur.is_empty() && width_of(&prefix(&out)) + width_of(&cur) + 1 + width_of(&word) > width {
            let p = prefix(&out);
            out.push(format!("{p}{}", std::mem::take(&mut cur)));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(&word);
    }
    let p = prefix(&out);
    out.push(format!("{p}{cur}"));
    out
}

/// The columns of a table of `columns` columns to show so that `fits(kept)` holds: the least
/// important ones (the highest `priority`, 0 never; the rightmost among equals; a column without a
/// priority is 1, the first 0) are hidden one at a time until it does, or nothing more can go.
/// Returns the kept and the hidden columns, each in column order. The one column fitting of
/// every table, whole ([`to_table_width`]) or streamed (`sweep`).
pub fn fit_columns(columns: usize, priority: &[u8], fits: impl Fn(&[usize]) -> bool) -> (Vec<usize>, Vec<usize>) {
    let priority = |i: usize| priority.get(i).copied().unwrap_or(u8::from(i > 0));
    let mut keep: Vec<usize> = (0..columns).collect();
    let mut hidden = Vec::new();
    while !fits(&keep) {
        // The least important column left (the rightmost among equals); never a priority-0 one.
        let Some(pos) = (0..keep.len()).filter(|p| priority(keep[*p]) > 0).max_by_key(|p| (priority(keep[*p]), *p))
        else {
            break;
        };
        hidden.push(keep.remove(pos));
    }
    hidden.sort_unstable();
    (keep, hidden)
}

/// The footer line naming the columns a fitted table hid.
pub fn hidden_line(names: &[&str]) -> String {
    format!("hidden to fit the terminal: {} (--wide shows every column)", names.join("; "))
}

/// An aligned text table; with `max_width`, columns are hidden (by [`HumanTable::priority`]) until
/// the grid fits, a footer line names them, and title and footer lines are wrapped at spaces.
/// No line ends in a space.
pub fn to_table_width(t: &HumanTable, max_width: Option<usize>) -> String {
    let widest = |body: &str| body.lines().map(width_of).max().unwrap_or(0);
    let (keep, hidden) = match max_width {
        Some(w) => fit_columns(t.header.len(), &t.priority, |keep| widest(&grid(t, keep, None)) <= w),
        None => ((0..t.header.len()).collect(), Vec::new()),
    };
    let mut body = grid(t, &keep, None);
    // Columns that cannot go and still do not fit: their cells wrap.
    if let Some(w) = max_width.filter(|w| widest(&body) > *w) {
        body = grid(t, &keep, Some(w));
    }
    let lines = |ls: &[String]| -> Vec<String> {
        match max_width {
            Some(w) => ls.iter().flat_map(|l| wrap(l, w)).collect(),
            None => ls.to_vec(),
        }
    };
    let mut footer = t.footer.clone();
    if !hidden.is_empty() {
        let names: Vec<&str> = hidden.iter().map(|i| t.header[*i].as_str()).collect();
        footer.push(hidden_line(&names));
    }
    let mut out = String::new();
    for l in lines(&t.title).iter().chain(std::iter::once(&body)).chain(lines(&footer).iter()) {
        out.push_str(l.trim_end());
        out.push('\n');
    }
    out
}

/// A Markdown (GitHub) table.
pub fn to_markdown(t: &HumanTable) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = String::new();
    for l in &t.title {
        out.push_str(&format!("**{}**\n\n", esc(l)));
    }
    out.push_str(&format!("| {} |\n", t.header.iter().map(|h| esc(h)).collect::<Vec<_>>().join(" | ")));
    let rule: Vec<&str> =
        (0..t.header.len()).map(|i| if t.right_aligned.contains(&i) { "---:" } else { "---" }).collect();
    out.push_str(&format!("| {} |\n", rule.join(" | ")));
    for r in &t.rows {
        out.push_str(&format!("| {} |\n", r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")));
    }
    // Each footer line its own paragraph (no trailing-space line breaks).
    for l in &t.footer {
        out.push('\n');
        out.push_str(&format!("{}\n", esc(l)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_and_list_the_accepted_names() {
        assert_eq!("JSON".parse::<Format>().unwrap(), Format::Json);
        assert_eq!(
            "xml".parse::<Format>().unwrap_err().to_string(),
            "unknown format `xml`; accepted: table, json, csv, md"
        );
    }

    #[test]
    fn a_cell_of_thousands_of_characters_is_cut_with_its_length() {
        let mut t = wide();
        t.rows[0][1] = "d".repeat(2000);
        let table = to_table_width(&t, None);
        let longest = table.lines().map(width_of).max().unwrap();
        assert!(longest < MAX_CELL_CHARS + 60, "{longest}");
        assert!(table.contains("…(2000 chars)"), "{table}");
        // A cell within the limit is whole.
        assert_eq!(capped("short"), "short");
    }

    fn wide() -> HumanTable {
        HumanTable {
            title: vec!["a title line that is much longer than the twenty-four columns we allow".into()],
            header: vec!["name".into(), "detail".into(), "value".into(), "note".into()],
            rows: vec![vec!["x".into(), "a long detail cell".into(), "1".into(), "".into()]],
            right_aligned: vec![2],
            footer: vec!["footer".into()],
            priority: vec![0, 2, 0, 1],
        }
    }

    #[test]
    fn no_table_line_ends_in_a_space() {
        for width in [None, Some(24), Some(200)] {
            let out = to_table_width(&wide(), width);
            assert!(out.lines().all(|l| !l.ends_with(' ')), "{out:?}");
        }
        let md = to_markdown(&HumanTable { footer: vec!["one".into(), "two".into()], ..wide() });
        assert!(md.lines().all(|l| !l.ends_with(' ')), "{md:?}");
        assert!(md.ends_with("\none\n\ntwo\n"), "{md:?}");
    }

    #[test]
    fn a_fitted_table_hides_the_least_important_columns_and_wraps_prose() {
        let full = to_table_width(&wide(), None);
        assert!(full.contains("a long detail cell") && !full.contains("hidden"));
        let out = to_table_width(&wide(), Some(24));
        assert!(
            out.lines().all(|l| l.chars().count() <= 24 || l.starts_with("hidden") || l.starts_with("  ")),
            "{out}"
        );
        // `detail` (2) goes before `note` (1); `name` and `value` (0) never go.
        assert!(!out.contains("a long detail cell") && out.contains(" x ") && out.contains('1'), "{out}");
        assert!(out.replace("\n  ", " ").contains("hidden to fit the terminal: detail (--wide"), "{out}");
        assert!(out.starts_with("a title line that is\n  much longer"), "{out}");
        // Without priorities the rightmost columns go first and the first stays.
        let plain = to_table_width(&HumanTable { priority: vec![], ..wide() }, Some(12));
        assert!(plain.contains("\n name\n"), "{plain}");
    }

    #[test]
    fn a_wrapped_continuation_line_fits_with_its_indent() {
        // The continuation's two-space indent counts: "  cccc dddd" would be 11 columns.
        assert_eq!(wrap("aaaa bbbb cccc dddd", 10), vec!["aaaa bbbb", "  cccc", "  dddd"]);
        for width in 14..40 {
            let line = "memory: 813 GB (weights 812 GB + KV 1.06 GB + workspace 898 kB) of 78.0 GB available";
            assert!(wrap(line, width).iter().all(|l| l.chars().count() <= width), "{width}");
        }
    }

    #[test]
    fn fitted_columns_go_by_priority_then_from_the_right() {
        let widths = [5, 10, 10, 10];
        let fits = |w: usize| move |keep: &[usize]| keep.iter().map(|i| widths[*i]).sum::<usize>() <= w;
        assert_eq!(fit_columns(4, &[0, 1, 2, 1], fits(35)), (vec![0, 1, 2, 3], vec![]));
        assert_eq!(fit_columns(4, &[0, 1, 2, 1], fits(25)), (vec![0, 1, 3], vec![2]));
        assert_eq!(fit_columns(4, &[0, 1, 2, 1], fits(15)), (vec![0, 1], vec![2, 3]));
        // Priority 0 never goes, even when nothing fits.
        assert_eq!(fit_columns(4, &[0, 0, 2, 1], fits(1)), (vec![0, 1], vec![2, 3]));
    }

    #[test]
    fn wrapping_keeps_a_number_with_its_unit() {
        assert_eq!(wrap("after a 2.0 GB reserve", 12), vec!["after a", "  2.0 GB", "  reserve"]);
        assert_eq!(wrap("short", 12), vec!["short"]);
        // A continuation line's two-column indent counts against the width.
        for line in wrap("aaaa bbbb cccc dddd eeee ffff gggg", 10) {
            assert!(line.chars().count() <= 10, "{line:?}");
        }
    }

    #[test]
    fn a_report_holding_a_nan_is_refused_in_every_format() {
        use crate::LedgerReport;
        use llm_ledger_core::{Ledger, Scenario};
        let sc = Scenario::default_decode();
        let mut r = LedgerReport::new(&sc, &Ledger::build(&sc));
        for f in [Format::Table, Format::Json, Format::Csv, Format::Md] {
            assert!(r.render(f).is_ok());
        }
        r.rows[2].time_s = f64::NAN;
        for f in [Format::Table, Format::Json, Format::Csv, Format::Md] {
            assert_eq!(
                r.render(f).unwrap_err().to_string(),
                "internal error: non-finite value in rows[2].time_s; please report this with the command line"
            );
        }
        r.rows[2].time_s = 0.0;
        r.tokens_per_s = f64::INFINITY;
        assert_eq!(r.render(Format::Json).unwrap_err(), Error::NonFinite { path: "tokens_per_s".into() });
    }

    #[test]
    fn markdown_escapes_pipes_and_aligns_numbers() {
        let t = HumanTable {
            header: vec!["op".into(), "n".into()],
            rows: vec![vec!["a|b".into(), "1".into()]],
            right_aligned: vec![1],
            ..Default::default()
        };
        assert_eq!(to_markdown(&t), "| op | n |\n| --- | ---: |\n| a\\|b | 1 |\n");
    }
}
