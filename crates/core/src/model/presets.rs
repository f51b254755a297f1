//! Built-in model presets (`crates/core/data/models.toml`, embedded), resolved through the same path as a
//! user's `config.json`. A user's own preset file (same schema) can add more.

use super::hf::{resolve, HfConfig};
use super::spec::ModelSpec;
use crate::error::{Error, Result};
use serde::Deserialize;
use std::sync::{Arc, OnceLock};

/// The embedded preset table.
pub(crate) const BUILTIN_MODELS_TOML: &str = include_str!("../../data/models.toml");

/// A named model with its published figures.
#[derive(Debug, Clone)]
pub struct Preset {
    /// Command-line id.
    pub name: String,
    /// Other accepted names.
    pub aliases: Vec<String>,
    /// Human name.
    pub display: String,
    /// Published total parameter count (`None` for a user's model).
    pub published_params: Option<f64>,
    /// Published active parameter count (MoE).
    pub published_active_params: Option<f64>,
    /// Directory under `crates/core/tests/data/configs/` with the authors' config for the same shapes
    /// (checked by `crates/core/tests/it/real_configs.rs`).
    pub reference_config: Option<String>,
    /// The resolved spec.
    pub spec: Arc<ModelSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    name: String,
    #[serde(default)]
    aliases: Vec<String>,
    display: String,
    published_params: f64,
    published_active_params: Option<f64>,
    reference_config: Option<String>,
    config: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    model: Vec<Record>,
}

/// Parse a preset file (the `crates/core/data/models.toml` schema).
pub fn parse_preset_file(text: &str) -> Result<Vec<Preset>> {
    if text.len() > crate::limits::MAX_INPUT_FILE_BYTES {
        return Err(Error::invalid("preset file", format!("{} bytes", text.len()), "at most 4 MiB"));
    }
    let file: File = toml::from_str(text).map_err(|e| Error::toml("model preset file", text, &e))?;
    file.model
        .into_iter()
        .map(|r| {
            let spec = resolve(&HfConfig::from_value(r.config)?, &r.name).map_err(|e| match e {
                Error::InvalidField { field, value, expected } => {
                    Error::InvalidField { field: format!("{}: {field}", r.name), value, expected }
                }
                other => other,
            })?;
            Ok(Preset {
                name: r.name,
                aliases: r.aliases,
                display: r.display,
                published_params: Some(r.published_params),
                published_active_params: r.published_active_params,
                reference_config: r.reference_config,
                spec: Arc::new(spec),
            })
        })
        .collect()
}

/// The built-in presets, parsed once.
pub fn builtin_presets() -> &'static [Preset] {
    static P: OnceLock<Vec<Preset>> = OnceLock::new();
    P.get_or_init(|| {
        parse_preset_file(BUILTIN_MODELS_TOML)
            .expect("embedded crates/core/data/models.toml is valid (checked by tests)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preset(name: &str) -> &'static Preset {
        builtin_presets().iter().find(|p| p.name == name).unwrap()
    }

    #[test]
    fn llama_3_8b_has_the_published_parameter_count() {
        // architectures.md §1: 8,030,261,248 = embed 128256·4096 + lm_head 128256·4096
        //   + 32 · (4096·(4096 + 2·1024) + 4096·4096 + 3·4096·14336 + 2·4096) + 4096.
        let per_layer = 4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096;
        let expected = 2 * 128256 * 4096 + 32 * per_layer + 4096;
        assert_eq!(expected, 8_030_261_248);
        assert_eq!(preset("llama-3-8b").spec.total_params(), expected);
    }

    #[test]
    fn every_preset_is_within_two_percent_of_its_published_count() {
        for p in builtin_presets() {
            let got = p.spec.total_params() as f64;
            let published = p.published_params.unwrap();
            let rel = (got - published).abs() / published;
            assert!(rel < 0.02, "{}: computed {got}, published {published}", p.name);
            if let Some(active) = p.published_active_params {
                let got = p.spec.active_params() as f64;
                // Active counts differ in convention by the embedding (gpt-oss excludes it).
                let rel = (got - active).abs() / active;
                assert!(rel < 0.2, "{}: active {got}, published {active}", p.name);
            }
        }
    }
}
