//! A two-column "quantity · value" layout for reports about one workload (kv, latency, measure).

use crate::render::HumanTable;

/// A human table of labelled values with a title and footer.
pub fn facts_table(title: Vec<String>, facts: Vec<(&str, String)>, footer: Vec<String>) -> HumanTable {
    HumanTable {
        title,
        header: vec!["quantity".into(), "value".into()],
        rows: facts.into_iter().map(|(k, v)| vec![k.to_string(), v]).collect(),
        right_aligned: Vec::new(),
        footer,
        // A quantity without its value says nothing: neither column is hidden (the lines wrap).
        priority: vec![0, 0],
    }
}

/// `yes` or `NO`.
pub fn yes_no(b: bool) -> String {
    if b { "yes" } else { "NO" }.into()
}
