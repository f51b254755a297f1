//! Built-in model presets (`crates/core/data/models.toml`, embedded), resolved through the same path as a
//! user's `config.json`. A user's own preset file (same schema) can add more.

use super::hf::{resolve, HfConfig};
use super::spec::ModelSpec;
use crate::error::{Error, Result};
use serde::Deserialize;
use std::sync::{Arc, OnceLock};

/// The embedded preset table, as written (the source of truth; the tests read it).
#[cfg(test)]
pub(crate) const BUILTIN_MODELS_TOML: &str = include_str!("../../data/models.toml");
/// The same table as JSON, written by `build.rs` at build time, which a run reads.
const BUILTIN_MODELS_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/models.json"));

/// A named model with its published figures.
#[derive(Debug, Clone)]
pub struct Preset {
    /// Command-line id.
    pub name: String,
    /// Other accepted names.
    pub aliases: Vec<String>,
    /// Human name.
    pub display: String,
    /// Published total parameter count (`None` for a user's model; a user's preset file without
    /// one gets the computed count, and a note saying so).
    pub published_params: Option<f64>,
    /// Published active parameter count (MoE).
    pub published_active_params: Option<f64>,
    /// Directory under `crates/core/tests/data/configs/` with the authors' config for the same shapes
    /// (checked by `crates/core/tests/it/real_configs.rs`).
    pub reference_config: Option<String>,
    /// The resolved spec ([`Preset::spec`]).
    spec: PresetSpec,
}

/// Where a preset's spec comes from.
#[derive(Debug, Clone)]
enum PresetSpec {
    /// Resolved when the preset was made (a user's file, every entry checked as it is read).
    Resolved(Arc<ModelSpec>),
    /// The built-in entry at this index, resolved the first time it is asked for (a run resolves
    /// the one model it reads, not the whole table; the tests resolve every entry).
    Builtin(usize),
}

impl Preset {
    /// A model known by `name` only (a user's `config.json`): no aliases, no published counts.
    pub fn unpublished(name: String, display: String, spec: ModelSpec) -> Preset {
        Preset {
            name,
            aliases: Vec::new(),
            display,
            published_params: None,
            published_active_params: None,
            reference_config: None,
            spec: PresetSpec::Resolved(Arc::new(spec)),
        }
    }

    /// The resolved spec.
    pub fn spec(&self) -> &Arc<ModelSpec> {
        match &self.spec {
            PresetSpec::Resolved(spec) => spec,
            PresetSpec::Builtin(i) => builtin_spec(*i),
        }
    }
}

impl PartialEq for Preset {
    fn eq(&self, other: &Preset) -> bool {
        (&self.name, &self.aliases, &self.display, self.published_params, self.published_active_params)
            == (&other.name, &other.aliases, &other.display, other.published_params, other.published_active_params)
            && self.reference_config == other.reference_config
            && self.spec() == other.spec()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Record<C = serde_json::Value> {
    name: String,
    #[serde(default)]
    aliases: Vec<String>,
    display: String,
    published_params: Option<f64>,
    published_active_params: Option<f64>,
    reference_config: Option<String>,
    /// The entry's `config.json` table: a value (a user's TOML file), or the JSON text of the
    /// embedded table's entry, kept unparsed until its spec is asked for ([`ConfigText`]).
    config: C,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File<C = serde_json::Value> {
    model: Vec<Record<C>>,
}

/// A preset entry's `config` table, as the config parser reads it.
trait ConfigText {
    fn value(&self) -> Result<serde_json::Value>;
}

impl ConfigText for serde_json::Value {
    fn value(&self) -> Result<serde_json::Value> {
        Ok(self.clone())
    }
}

/// The embedded table's entries keep their `config` as the build-time JSON's text: a run parses
/// the one config it resolves, not all of them.
impl ConfigText for Box<serde_json::value::RawValue> {
    fn value(&self) -> Result<serde_json::Value> {
        serde_json::from_str(self.get())
            .map_err(|e| Error::Malformed { what: "the embedded model table".into(), message: e.to_string() })
    }
}

/// Parse a preset file (the `crates/core/data/models.toml` schema). An entry without
/// `published_params` gets the count its config implies ([`ModelSpec::total_params`]) and a note
/// that says so, which every report on it shows.
pub fn parse_preset_file(text: &str) -> Result<Vec<Preset>> {
    if text.len() > crate::limits::MAX_INPUT_FILE_BYTES {
        return Err(Error::invalid("preset file", format!("{} bytes", text.len()), "at most 4 MiB"));
    }
    let file: File = toml::from_str(text).map_err(|e| Error::toml("model preset file", text, &e))?;
    presets_of(file)
}

/// The presets of a parsed file, each config resolved to its spec.
fn presets_of(file: File) -> Result<Vec<Preset>> {
    file.model
        .into_iter()
        .map(|r| {
            let mut spec = resolve_record(&r)?;
            let published = match r.published_params {
                Some(p) => p,
                None => {
                    let computed = spec.total_params();
                    spec.notes.push(format!(
                        "preset `{}` gives no published_params: the computed count, {} parameters, stands in",
                        r.name,
                        crate::error::grouped(computed)
                    ));
                    computed as f64
                }
            };
            Ok(Preset { published_params: Some(published), ..preset_of(&r, PresetSpec::Resolved(Arc::new(spec))) })
        })
        .collect()
}

/// An entry's config resolved to its spec, a field in error prefixed with the entry's name.
fn resolve_record<C: ConfigText>(r: &Record<C>) -> Result<ModelSpec> {
    resolve(&HfConfig::from_value(r.config.value()?)?, &r.name).map_err(|e| match e {
        Error::InvalidField { field, value, expected } => {
            Error::InvalidField { field: format!("{}: {field}", r.name), value, expected }
        }
        other => other,
    })
}

/// The preset of an entry, with its spec from `spec` (its config is not kept).
fn preset_of<C>(r: &Record<C>, spec: PresetSpec) -> Preset {
    Preset {
        name: r.name.clone(),
        aliases: r.aliases.clone(),
        display: r.display.clone(),
        published_params: r.published_params,
        published_active_params: r.published_active_params,
        reference_config: r.reference_config.clone(),
        spec,
    }
}

/// The embedded table's entries, read once from its build-time JSON.
fn builtin_records() -> &'static [Record<Box<serde_json::value::RawValue>>] {
    static RECORDS: OnceLock<Vec<Record<Box<serde_json::value::RawValue>>>> = OnceLock::new();
    RECORDS.get_or_init(|| {
        let file: File<_> =
            serde_json::from_str(BUILTIN_MODELS_JSON).expect("build.rs writes models.json from valid TOML");
        file.model
    })
}

/// The spec of built-in entry `i`, resolved once.
fn builtin_spec(i: usize) -> &'static Arc<ModelSpec> {
    static SPECS: OnceLock<Vec<OnceLock<Arc<ModelSpec>>>> = OnceLock::new();
    let specs = SPECS.get_or_init(|| builtin_records().iter().map(|_| OnceLock::new()).collect());
    specs[i].get_or_init(|| {
        Arc::new(
            resolve_record(&builtin_records()[i])
                .expect("embedded crates/core/data/models.toml resolves (checked by tests)"),
        )
    })
}

/// The built-in presets, read once; each spec is resolved when first asked for. Every entry
/// states its published count (a test checks), so none needs its spec to be listed.
pub fn builtin_presets() -> &'static [Preset] {
    static P: OnceLock<Vec<Preset>> = OnceLock::new();
    P.get_or_init(|| builtin_records().iter().enumerate().map(|(i, r)| preset_of(r, PresetSpec::Builtin(i))).collect())
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
        assert_eq!(preset("llama-3-8b").spec().total_params(), expected);
    }

    #[test]
    fn a_preset_without_published_params_gets_the_computed_count_and_a_note() {
        let text = r#"
[[model]]
name = "my-llama"
display = "a Llama 3 8B of my own"
[model.config]
model_type = "llama"
hidden_size = 4096
intermediate_size = 14336
num_hidden_layers = 32
num_attention_heads = 32
num_key_value_heads = 8
vocab_size = 128256
"#;
        let p = &parse_preset_file(text).unwrap()[0];
        assert_eq!(p.published_params, Some(8_030_261_248.0));
        assert_eq!(
            p.spec().notes,
            ["preset `my-llama` gives no published_params: the computed count, 8,030,261,248 parameters, stands in"]
        );
        // Given, it is used as given and nothing is noted.
        let given = text.replace("display =", "published_params = 8.0e9\ndisplay =");
        let p = &parse_preset_file(&given).unwrap()[0];
        assert_eq!(p.published_params, Some(8.0e9));
        assert!(p.spec().notes.is_empty(), "{:?}", p.spec().notes);
    }

    #[test]
    fn the_build_time_json_is_the_toml_preset_table() {
        assert_eq!(parse_preset_file(BUILTIN_MODELS_TOML).unwrap().as_slice(), builtin_presets());
    }

    #[test]
    fn every_builtin_preset_states_its_published_count() {
        let file: toml::Table = BUILTIN_MODELS_TOML.parse().unwrap();
        for m in file["model"].as_array().unwrap() {
            assert!(m.get("published_params").is_some(), "{}", m["name"]);
        }
        assert!(builtin_presets().iter().all(|p| p.spec().notes.iter().all(|n| !n.contains("published_params"))));
    }

    /// The published counts are of the whole checkpoint a model card describes: a vision tower
    /// counts where the preset's config has one (Qwen3-VL-8B's 8.77 B).
    #[test]
    fn every_preset_is_within_two_percent_of_its_published_count() {
        for p in builtin_presets() {
            let got = (p.spec().total_params() + p.spec().vision_params) as f64;
            let published = p.published_params.unwrap();
            let rel = (got - published).abs() / published;
            assert!(rel < 0.02, "{}: computed {got}, published {published}", p.name);
            if let Some(active) = p.published_active_params {
                let got = p.spec().active_params() as f64;
                // Active counts differ in convention by the embedding (gpt-oss excludes it).
                let rel = (got - active).abs() / active;
                assert!(rel < 0.2, "{}: active {got}, published {active}", p.name);
            }
        }
    }
}
