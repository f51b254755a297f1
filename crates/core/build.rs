//! The embedded catalogues (`data/gpus.toml`, `data/models.toml`, `data/families.toml`) turned
//! into JSON once, at build time, so a run reads them with `serde_json` (a few hundred
//! microseconds less start-up than parsing TOML on every run). The TOML stays the source of
//! truth: the same serde types read both, and the crate's tests check that the TOML and its JSON
//! give the same catalogue.

use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for name in ["gpus", "models", "families"] {
        let source = format!("data/{name}.toml");
        println!("cargo::rerun-if-changed={source}");
        let text = std::fs::read_to_string(&source).unwrap_or_else(|e| panic!("reading {source}: {e}"));
        let value: toml::Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{source} is not valid TOML: {e}"));
        let json = serde_json::to_string(&value).expect("a TOML value is JSON");
        std::fs::write(out.join(format!("{name}.json")), json).unwrap_or_else(|e| panic!("writing {name}.json: {e}"));
    }
}
