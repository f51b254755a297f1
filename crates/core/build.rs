//! The embedded catalogues (`data/gpus.toml`, `data/models.toml`, `data/families.toml`) turned
//! into JSON once, at build time, so a run reads them with `serde_json` instead of parsing TOML on
//! every run; the family table is written with each family already merged over `[default]`
//! (`src/model/family_merge.rs`, the rule the crate's tests apply to the TOML). The TOML stays the
//! source of truth: the same serde types read both, and the crate's tests check that the TOML
//! and its JSON give the same catalogue.

use std::path::PathBuf;

#[path = "src/model/family_merge.rs"]
mod family_merge;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo::rerun-if-changed=src/model/family_merge.rs");
    for name in ["gpus", "models", "families"] {
        let source = format!("data/{name}.toml");
        println!("cargo::rerun-if-changed={source}");
        let text = std::fs::read_to_string(&source).unwrap_or_else(|e| panic!("reading {source}: {e}"));
        let table: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{source} is not valid TOML: {e}"));
        let json = if name == "families" {
            let merged: toml::Table = family_merge::merged(&table)
                .unwrap_or_else(|field| panic!("{source} has no {field} table"))
                .into_iter()
                .map(|(name, t)| (name, toml::Value::Table(t)))
                .collect();
            serde_json::to_string(&merged)
        } else {
            serde_json::to_string(&table)
        };
        let json = json.expect("a TOML table is JSON");
        std::fs::write(out.join(format!("{name}.json")), json).unwrap_or_else(|e| panic!("writing {name}.json: {e}"));
    }
}
