//! Model specification: families (data), the `config.json` resolver, presets and the resolved
//! [`ModelSpec`].

pub mod family;
#[cfg(test)]
mod family_merge;
pub mod gguf;
pub mod hf;
pub mod mixer;
pub mod presets;
pub mod quant;
pub mod safetensors;
pub mod spec;

pub use hf::{parse_config_json, parse_config_json_with_quant, HfConfig};
pub use presets::{builtin_presets, parse_preset_file, Preset};
pub use quant::{CheckpointQuant, WeightPrecisions};
pub use spec::*;
