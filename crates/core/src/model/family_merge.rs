//! The family table's one rule of inheritance, shared by `build.rs` (which writes the merged
//! table as JSON at build time) and the crate's tests (which read the TOML): each family is the
//! `[default]` table with the family's own keys written over it.

/// Every family of `table` but `default`, each over the `[default]` table's keys, in the table's
/// order; an error names a missing `[default]`.
pub(crate) fn merged(table: &toml::Table) -> Result<Vec<(String, toml::Table)>, &'static str> {
    let default = table.get("default").and_then(|v| v.as_table()).ok_or("[default]")?;
    Ok(table
        .iter()
        .filter(|(name, _)| *name != "default")
        .map(|(name, v)| {
            let mut merged = default.clone();
            if let Some(own) = v.as_table() {
                merged.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            (name.clone(), merged)
        })
        .collect())
}
