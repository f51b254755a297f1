//! The I/O edge of llm-ledger, shared by the CLI and the Python package: reads the user's files
//! (config.json, GGUF and safetensors headers, GPU, preset and profile files, context histograms,
//! expert loads) with size limits, resolves Hugging Face Hub ids from the cache or the Hub
//! ([`hub`]), and hands the text to the core's parsers. One definition of how a `model` argument is
//! read, so `llm-ledger ledger --model org/name --revision r` and
//! `llm_ledger.ledger(model="org/name", revision="r")` resolve the same snapshot.
//!
//! Errors are `anyhow` chains; an error about an input (`model`, `revision`) is a core error that
//! names the inputs as [`llm_ledger_core::error::Text`] (each front end spells them its own way:
//! `--model`, `model=`), and every core error keeps its type.

pub mod benchmarks;
pub mod checkpoint;
pub mod hub;
pub mod output;

use anyhow::{bail, Context, Result};
use llm_ledger_core::clock::Profile;
use llm_ledger_core::error::Text;
use llm_ledger_core::hardware::parse_gpu_file;
use llm_ledger_core::limits::{MAX_HISTOGRAM_BYTES, MAX_INPUT_FILE_BYTES};
use llm_ledger_core::model::{parse_config_json_with_quant, parse_preset_file, ModelSpec};
use llm_ledger_core::scenario::{parse_context_histogram, parse_expert_loads_csv, Loaded};
use llm_ledger_core::{Catalog, Error, Gpu, Scenario, ScenarioRequest};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Read a UTF-8 text file of at most `MAX_INPUT_FILE_BYTES`. Anything but a regular file (a FIFO,
/// a device, a socket, a directory) is refused by its metadata before it is opened, since opening
/// or reading one can block forever.
pub fn read_text(path: &Path, what: &str) -> Result<String> {
    read_text_at_most(path, what, MAX_INPUT_FILE_BYTES)
}

/// [`read_text`] with another size limit, bytes.
pub fn read_text_at_most(path: &Path, what: &str, limit: usize) -> Result<String> {
    let meta = std::fs::metadata(path).with_context(|| format!("cannot read {what} `{}`", path.display()))?;
    if !meta.is_file() {
        bail!("{what} `{}` is not a regular file", path.display());
    }
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {what} `{}`", path.display()))?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {what} `{}`", path.display()))?;
    if bytes.len() > limit {
        bail!("{what} `{}` is larger than the {} MiB limit", path.display(), limit >> 20);
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
    reads_as_path(s) || Path::new(s).is_dir()
}

/// [`looks_like_path`] by its text alone: a separator, or a `.json` or `.toml` ending.
fn reads_as_path(s: &str) -> bool {
    s.contains('/') || s.contains('\\') || s.ends_with(".json") || s.ends_with(".toml")
}

/// What a `--model` value names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    /// A catalogue preset (a name that is not a file here and does not read as a path).
    Preset,
    /// A local file or folder: anything that exists, or that reads as a path.
    Path,
    /// A Hugging Face Hub repo id.
    Hub(hub::RepoId),
}

/// Classify a `--model` value. An existing file or folder always wins, whatever its name
/// (`tiny-q4_k_m.gguf` in the current folder is that file; a preset's name that is also a file
/// here is the file, with a note saying so: [`scenario`]); another name that does not read as a
/// path ([`looks_like_path`]) is a preset; `org/name` that is not on disk is a Hub repo id,
/// checked by [`hub::RepoId::parse`]; anything else that reads as a path (a leading `.`, `/` or
/// `~`, a backslash, more than one `/`, a .json/.toml/.gguf/.safetensors ending) stays a path.
pub fn model_source(s: &str) -> Result<ModelSource> {
    if !s.is_empty() && Path::new(s).exists() {
        return Ok(ModelSource::Path);
    }
    // Nothing is on disk at `s` (so no folder either): its text alone says whether it reads as a
    // path, with no second look at the file system.
    if !reads_as_path(s) {
        return Ok(ModelSource::Preset);
    }
    let path_like = s.starts_with(['.', '/', '~'])
        || s.contains('\\')
        || s.matches('/').count() != 1
        || [".json", ".toml", ".gguf", ".safetensors"].iter().any(|e| s.ends_with(e));
    if path_like {
        Ok(ModelSource::Path)
    } else {
        Ok(ModelSource::Hub(hub::RepoId::parse(s)?))
    }
}

/// A Hub model given as a pasted URL or `org/name@REV` ([`hub::hub_reference`]) rewritten as the
/// repo id in `req` and its revision in the file inputs; a revision given twice must agree.
fn hub_model(req: &mut ScenarioRequest, args: &FileInputs) -> Result<FileInputs> {
    let mut args = args.clone();
    // A Hub reference that is not a file here (the file system is asked only about such text).
    let reference = |m: &str| hub::hub_reference(m).filter(|_| !Path::new(m).exists());
    let Some((id, rev)) = req.model.as_deref().and_then(reference) else {
        return Ok(args);
    };
    if let (Some(given), Some(named)) = (&args.revision, &rev) {
        if given != named {
            let message = Text::template("invalid `{revision}`: ")
                .plain(&format!("{given:?} given with `"))
                .input("model")
                .plain(&format!(" {}`, which names revision {named:?}", req.model.as_deref().unwrap_or_default()));
            return Err(Error::input("revision", message).into());
        }
    }
    args.revision = args.revision.or(rev);
    req.model = Some(id);
    Ok(args)
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
/// The model is the file's, whatever the path looks like, and is named by the path (the label
/// report titles show), except a preset entry, which keeps its own name.
fn model_file(arg: &str) -> Result<ModelSpec> {
    let path = PathBuf::from(arg);
    if path.extension().is_some_and(|e| e == "gguf") {
        return checkpoint::gguf_model(&path);
    }
    if path.is_dir() {
        return model_dir(&path, &path.join("config.json").display().to_string());
    }
    if path.extension().is_some_and(|e| e == "toml") {
        let presets = parse_preset_file(&read_text(&path, "preset file")?).with_context(|| format!("in `{arg}`"))?;
        let first = presets.into_iter().next().context("the preset file has no [[model]] entry")?;
        return Ok((**first.spec()).clone());
    }
    let label = path.display().to_string();
    let sidecar = quant_sidecar(path.parent().unwrap_or(Path::new(".")))?;
    parse_config_json_with_quant(&read_text(&path, "config.json")?, sidecar.as_deref(), &label)
        .with_context(|| format!("in `{label}`"))
}

/// The file NVIDIA ModelOpt writes beside a quantised checkpoint's `config.json`.
pub const QUANT_SIDECAR: &str = "hf_quant_config.json";

/// The text of `dir`'s [`QUANT_SIDECAR`], if it has one.
fn quant_sidecar(dir: &Path) -> Result<Option<String>> {
    let path = dir.join(QUANT_SIDECAR);
    path.is_file().then(|| read_text(&path, QUANT_SIDECAR)).transpose()
}

/// Load the model of a folder holding a config.json (a model folder or a Hub snapshot), named
/// `label`, with the headers of any safetensors checkpoint beside it.
fn model_dir(dir: &Path, label: &str) -> Result<ModelSpec> {
    let path = dir.join("config.json");
    let sidecar = quant_sidecar(dir)?;
    let mut spec = parse_config_json_with_quant(&read_text(&path, "config.json")?, sidecar.as_deref(), label)
        .with_context(|| format!("in `{}`", path.display()))?;
    checkpoint::apply_safetensors(dir, &mut spec)?;
    Ok(spec)
}

/// The first GPU of a GPU file named on the command line, named by the file's path.
fn gpu_file(path: &str) -> Result<Gpu> {
    let gpus =
        parse_gpu_file(&read_text(Path::new(path), "GPU file")?).with_context(|| format!("in GPU file `{path}`"))?;
    let mut gpu = gpus.into_iter().next().context("the GPU file has no [[gpu]] entry")?;
    gpu.name = path.to_string();
    Ok(gpu)
}

/// A GPU by name or GPU-file path (default `h100-sxm`), with a user GPU file added.
pub fn gpu(arg: Option<&str>, gpu_file_arg: Option<&str>) -> Result<Arc<Gpu>> {
    match arg {
        Some(g) if looks_like_path(g) => Ok(Arc::new(gpu_file(g)?)),
        g => Ok(catalog(gpu_file_arg, None)?.gpu(g.unwrap_or(llm_ledger_core::scenario::DEFAULT_GPU))?),
    }
}

/// The scenario inputs that name files (or a Hub revision), beside the text inputs of a
/// [`ScenarioRequest`]: what the CLI's `--revision`, `--gpu-file`, `--preset-file`, `--profile`,
/// `--histogram` and `--expert-loads` give (paths, read here).
#[derive(Debug, Clone, Default)]
pub struct FileInputs {
    /// `--revision`: the branch, tag or commit of a Hub repo id given as `model`.
    pub revision: Option<String>,
    /// `--gpu-file`: GPUs added to the catalogue.
    pub gpu_file: Option<String>,
    /// `--preset-file`: presets added to the catalogue.
    pub preset_file: Option<String>,
    /// `--profile`: a calibration profile (`llm-ledger calibrate`'s TOML).
    pub profile: Option<String>,
    /// `--histogram`: a context histogram CSV.
    pub histogram: Option<String>,
    /// `--expert-loads`: a CSV of relative loads per expert.
    pub expert_loads: Option<String>,
}

/// The local files a scenario reads: the `model` path (a folder's `config.json` and safetensors
/// index), a `gpu` path and the files of `files`. A run's outputs are checked against them.
pub fn input_paths(model: Option<&str>, gpu: Option<&str>, files: &FileInputs) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(m) = model.filter(|m| matches!(model_source(m), Ok(ModelSource::Path))) {
        let p = PathBuf::from(m);
        if p.is_dir() {
            out.push(p.join("config.json"));
            out.push(p.join("model.safetensors.index.json"));
            out.push(p.join(QUANT_SIDECAR));
        }
        out.push(p);
    }
    out.extend(gpu.filter(|g| looks_like_path(g)).map(PathBuf::from));
    let named = [&files.gpu_file, &files.preset_file, &files.profile, &files.histogram, &files.expert_loads];
    out.extend(named.into_iter().flatten().map(PathBuf::from));
    out
}

/// Resolve `req` (its `model` and `gpu` may name files or a Hub repo id) with the file inputs
/// `args`, reading every file they name.
pub fn scenario(mut req: ScenarioRequest, args: &FileInputs) -> Result<Scenario> {
    let catalog = catalog(args.gpu_file.as_deref(), args.preset_file.as_deref())?;
    let args = &hub_model(&mut req, args)?;
    if let Some(m) = req.model.clone().as_deref() {
        let source = model_source(m)?;
        if args.revision.is_some() && !matches!(source, ModelSource::Hub(_)) {
            let message = Text::template("invalid `{revision}`: given with `{model} ")
                .plain(&format!("{m}`, which is not a Hub repo id (org/name)"));
            return Err(Error::input("revision", message).into());
        }
        let spec = match source {
            ModelSource::Preset => None,
            ModelSource::Path => {
                let mut spec = model_file(m)?;
                if let Ok(preset) = catalog.preset(m) {
                    spec.notes.push(format!(
                        "`{m}` names both the preset {} and a file here: the model is the file's (give the preset's name from another folder to use the preset)",
                        preset.name
                    ));
                }
                Some(spec)
            }
            ModelSource::Hub(repo) => {
                let dir = hub::resolve(&repo, args.revision.as_deref())?;
                Some(model_dir(&dir, &repo.id())?)
            }
        };
        if let Some(spec) = spec {
            req.model = None;
            req.model_file = Some(Loaded(Arc::new(spec)));
        }
    } else if args.revision.is_some() {
        let message = Text::template("invalid `{revision}`: given without a Hub repo id as `{model}`");
        return Err(Error::input("revision", message).into());
    }
    // Constants the profile's own fit could not determine are said beside every result.
    let mut profile_note = None;
    if let Some(p) = &args.profile {
        let text = read_text(Path::new(p), "profile")?;
        let profile = Profile::from_toml(&text).with_context(|| format!("in profile `{p}`"))?;
        let undetermined = Profile::undetermined_in(&text);
        if !undetermined.is_empty() {
            profile_note = Some(format!(
                "profile `{p}`: {} not determined by the rows it was fitted on (the fit's values, not measurements)",
                undetermined.join(", ")
            ));
        }
        req.profile = Some(Loaded(Arc::new(profile)));
    }
    if let Some(g) = req.gpu.clone().filter(|g| looks_like_path(g)) {
        req.gpu = None;
        req.gpu_file = Some(Loaded(Arc::new(gpu_file(&g)?)));
    }
    if let Some(h) = &args.histogram {
        if req.contexts.is_some() || req.batch.is_some() || req.ctx.is_some() {
            let message = Text::template(
                "invalid `histogram`: given together with {batch}/{ctx}/{contexts} (use one way to describe the batch)",
            );
            return Err(Error::input("histogram", message).into());
        }
        req.context_mix = Some(
            parse_context_histogram(&read_text_at_most(Path::new(h), "histogram", MAX_HISTOGRAM_BYTES)?)
                .with_context(|| format!("in histogram `{h}`"))?,
        );
    }
    if let Some(f) = &args.expert_loads {
        req.expert_load_values = Some(
            parse_expert_loads_csv(&read_text(Path::new(f), "expert loads")?).with_context(|| format!("in `{f}`"))?,
        );
    }
    let mut sc = req.resolve(&catalog)?;
    if let Some(note) = profile_note {
        Arc::make_mut(&mut sc.model).notes.push(note);
    }
    Ok(sc)
}
