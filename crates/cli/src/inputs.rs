//! The CLI's I/O edge: reads the user's files (config.json, GPU and preset files, context
//! histograms) with a size limit and hands their text to the core's parsers.

use crate::cli::ScenarioArgs;
use anyhow::{bail, Context, Result};
use llm_ledger_core::hardware::parse_gpu_file;
use llm_ledger_core::limits::MAX_INPUT_FILE_BYTES;
use llm_ledger_core::model::{parse_config_json, parse_preset_file};
use llm_ledger_core::scenario::{parse_context_histogram, parse_expert_loads_csv};
use llm_ledger_core::{Catalog, Gpu, Scenario};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Read a UTF-8 text file of at most `MAX_INPUT_FILE_BYTES`.
pub fn read_text(path: &Path, what: &str) -> Result<String> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {what} `{}`", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {what} `{}`", path.display()))?;
    if bytes.len() > MAX_INPUT_FILE_BYTES {
        bail!("{what} `{}` is larger than the {} MiB limit", path.display(), MAX_INPUT_FILE_BYTES >> 20);
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{what} `{}` is not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// A model argument that names a file rather than a preset.
pub fn looks_like_path(s: &str) -> bool {
    s.contains('/') || s.contains('\\') || s.ends_with(".json") || s.ends_with(".toml") || Path::new(s).is_dir()
}

/// The catalogue with the user's GPU and preset files added.
pub fn catalog(gpu_file: Option<&str>, preset_file: Option<&str>) -> Result<Catalog> {
    let mut c = Catalog::builtin();
    if let Some(f) = gpu_file {
        c.add_gpus(
            parse_gpu_file(&read_text(Path::new(f), "GPU file")?).with_context(|| format!("in GPU file `{f}`"))?,
        );
    }
    if let Some(f) = preset_file {
        c.add_presets(
            parse_preset_file(&read_text(Path::new(f), "preset file")?)
                .with_context(|| format!("in preset file `{f}`"))?,
        );
    }
    Ok(c)
}

/// Load a model from a path: a config.json, a directory holding one, or a preset TOML (first entry).
/// Returns the name it was registered under.
fn add_model_file(c: &mut Catalog, arg: &str) -> Result<String> {
    let mut path = PathBuf::from(arg);
    if path.is_dir() {
        path.push("config.json");
    }
    if path.extension().is_some_and(|e| e == "toml") {
        let presets = parse_preset_file(&read_text(&path, "preset file")?).with_context(|| format!("in `{arg}`"))?;
        let name = presets.first().map(|p| p.name.clone()).context("the preset file has no [[model]] entry")?;
        c.add_presets(presets);
        return Ok(name);
    }
    let name = if path.file_name().is_some_and(|n| n == "config.json") {
        path.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned())
    } else {
        path.file_stem().map(|n| n.to_string_lossy().into_owned())
    }
    .filter(|n| !n.is_empty())
    .unwrap_or_else(|| arg.to_string());
    let spec = parse_config_json(&read_text(&path, "config.json")?, &name)
        .with_context(|| format!("in `{}`", path.display()))?;
    c.add_model(spec);
    Ok(name)
}

/// Add the GPUs of a GPU file named on the command line; returns the name of its first entry.
fn add_gpu_file(c: &mut Catalog, path: &str) -> Result<String> {
    let gpus =
        parse_gpu_file(&read_text(Path::new(path), "GPU file")?).with_context(|| format!("in GPU file `{path}`"))?;
    let name = gpus.first().map(|g| g.name.clone()).context("the GPU file has no [[gpu]] entry")?;
    c.add_gpus(gpus);
    Ok(name)
}

/// A GPU by name or GPU-file path (default `h100-sxm`), with a user GPU file added.
pub fn gpu(arg: Option<&str>, gpu_file: Option<&str>) -> Result<Arc<Gpu>> {
    let mut c = catalog(gpu_file, None)?;
    let name = match arg {
        Some(g) if looks_like_path(g) => add_gpu_file(&mut c, g)?,
        Some(g) => g.to_string(),
        None => llm_ledger_core::scenario::DEFAULT_GPU.to_string(),
    };
    Ok(c.gpu(&name)?)
}

/// Resolve the scenario flags, reading any files they name.
pub fn scenario(args: &ScenarioArgs) -> Result<Scenario> {
    let mut catalog = catalog(args.gpu_file.as_deref(), args.preset_file.as_deref())?;
    let mut req = args.request();
    if let Some(m) = args.model.as_deref().filter(|m| looks_like_path(m)) {
        req.model = Some(add_model_file(&mut catalog, m)?);
    }
    if let Some(g) = args.gpu.as_deref().filter(|g| looks_like_path(g)) {
        req.gpu = Some(add_gpu_file(&mut catalog, g)?);
    }
    if let Some(h) = &args.histogram {
        if req.contexts.is_some() || req.batch.is_some() || req.ctx.is_some() {
            bail!(
                "invalid `histogram`: given together with --batch/--ctx/--contexts (use one way to describe the batch)"
            );
        }
        let mix = parse_context_histogram(&read_text(Path::new(h), "histogram")?)
            .with_context(|| format!("in histogram `{h}`"))?;
        req.contexts =
            Some(mix.buckets().iter().map(|b| format!("{}x{}", b.tokens, b.count)).collect::<Vec<_>>().join(","));
    }
    if let Some(f) = &args.expert_loads {
        req.expert_loads = Some(
            parse_expert_loads_csv(&read_text(Path::new(f), "expert loads")?).with_context(|| format!("in `{f}`"))?,
        );
    }
    Ok(req.resolve(&catalog)?)
}

/// Write a plot as a standalone SVG file (the CLI's one output file besides stdout).
pub fn write_svg(path: &str, inline_svg: &str) -> Result<()> {
    std::fs::write(path, llm_ledger_report::plot::standalone(inline_svg))
        .with_context(|| format!("cannot write plot `{path}`"))
}
