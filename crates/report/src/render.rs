//! One renderer per output format behind a small trait. A report supplies its serde form (JSON),
//! its flat serde rows (CSV, so the columns cannot drift from JSON's row objects), and a human
//! layout (headers, formatted cells, footer) shared by the table and Markdown renderers.

use llm_ledger_core::error::{Error, Result};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

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
            _ => Err(Error::unknown("format", s, ["table", "json", "csv", "md"])),
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

/// An aligned text table (comfy-table, no borders beyond a header rule).
pub fn to_table(t: &HumanTable) -> String {
    use comfy_table::{CellAlignment, ContentArrangement, Table};
    // Rules above and below the table and under the header; no lines between rows.
    const STYLE: &str = "  ── ──      ──    ";
    let mut table = Table::new();
    table.load_preset(STYLE).set_content_arrangement(ContentArrangement::Disabled);
    table.set_header(&t.header);
    for r in &t.rows {
        table.add_row(r);
    }
    for i in &t.right_aligned {
        if let Some(c) = table.column_mut(*i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = String::new();
    for l in &t.title {
        out.push_str(l);
        out.push('\n');
    }
    out.push_str(&table.to_string());
    out.push('\n');
    for l in &t.footer {
        out.push_str(l);
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
    if !t.footer.is_empty() {
        out.push('\n');
        for l in &t.footer {
            out.push_str(&format!("{}  \n", esc(l)));
        }
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
