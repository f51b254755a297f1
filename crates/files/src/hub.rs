//! `--model org/name`: a Hugging Face Hub repo id, resolved from the local Hub cache or, when online,
//! downloaded with the official `hf-hub` client (its blocking `ureq` API).
//!
//! The cache is the `huggingface_hub` layout: `<cache>/models--org--name/refs/<branch>` holds a
//! commit hash and `<cache>/models--org--name/snapshots/<commit>/config.json` the file. The cache
//! folder is `HF_HUB_CACHE`, else `HF_HOME/hub`, else `XDG_CACHE_HOME/huggingface/hub`, else
//! `~/.cache/huggingface/hub`. `HF_HUB_OFFLINE=1` forbids the network; `HF_ENDPOINT` replaces
//! `https://huggingface.co`; the token is `HF_TOKEN`, else the file `HF_TOKEN_PATH`, else
//! `<HF_HOME>/token` (what `huggingface-cli login` writes).

use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};

/// Longest repo id the Hub accepts (`org/name`, huggingface_hub's `REPO_ID_MAX_LENGTH`).
const MAX_REPO_ID_CHARS: usize = 96;
/// Longest revision (branch, tag or commit) accepted.
const MAX_REVISION_CHARS: usize = 255;
/// Largest token file read, bytes (a token is about 40 characters).
const MAX_TOKEN_FILE_BYTES: u64 = 4096;
/// Seconds the whole download may take unless `HF_HUB_DOWNLOAD_TIMEOUT` says otherwise (the
/// client has no read timeout of its own, so a server that stops answering would hang).
const DEFAULT_DOWNLOAD_TIMEOUT_S: u64 = 60;

/// A checked Hub repo id `org/name`: two segments of `[A-Za-z0-9._-]`, neither empty, neither
/// starting or ending with `.` or `-`, no `..` or `--` (the Hub's own rules), at most 96 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoId {
    org: String,
    name: String,
}

impl RepoId {
    /// Check `s` as a repo id; the error names `--model`.
    pub fn parse(s: &str) -> Result<RepoId> {
        let bad = |why: &str| {
            anyhow!(
                "invalid `--model`: {s:?} ({why}; a Hub repo id is org/name of letters, digits, '.', '_' and '-', or give a local path or a preset name)"
            )
        };
        if s.len() > MAX_REPO_ID_CHARS {
            return Err(bad(&format!("longer than {MAX_REPO_ID_CHARS} characters")));
        }
        let (org, name) = s.split_once('/').ok_or_else(|| bad("no `/`"))?;
        for seg in [org, name] {
            if seg.is_empty() {
                return Err(bad("an empty segment"));
            }
            if !seg.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
                return Err(bad("a character outside [A-Za-z0-9._-]"));
            }
            if seg.contains("..") || seg.contains("--") {
                return Err(bad("`..` or `--` inside a segment"));
            }
            if seg.starts_with(['.', '-']) || seg.ends_with(['.', '-']) {
                return Err(bad("a segment starting or ending with `.` or `-`"));
            }
        }
        Ok(RepoId { org: org.into(), name: name.into() })
    }

    /// `org/name`.
    pub fn id(&self) -> String {
        format!("{}/{}", self.org, self.name)
    }

    /// The cache folder name, `models--org--name`.
    fn folder(&self) -> String {
        format!("models--{}--{}", self.org, self.name)
    }
}

/// A Hub model as a user may paste it: a model page's URL (`https://huggingface.co/org/name`, also
/// `hf.co` or `HF_ENDPOINT`, with `/tree/REV`, `/blob/REV/FILE` or `/resolve/REV/FILE` after it,
/// `%2F` in REV read as `/`) or `org/name@REV`. Returns the repo id and the revision it names;
/// `None` for anything else (a plain `org/name` among it, which needs no rewriting).
pub fn hub_reference(s: &str) -> Option<(String, Option<String>)> {
    let s = s.trim();
    let endpoint = env("HF_ENDPOINT");
    let hosts = ["https://huggingface.co/", "http://huggingface.co/", "https://hf.co/", "huggingface.co/", "hf.co/"];
    let custom = endpoint.as_deref().map(|e| format!("{}/", e.trim_end_matches('/')));
    let path = custom.iter().map(String::as_str).chain(hosts).find_map(|h| s.strip_prefix(h));
    let Some(path) = path else {
        let (id, rev) = s.split_once('@')?;
        return (id.matches('/').count() == 1 && !rev.is_empty()).then(|| (id.to_string(), Some(rev.to_string())));
    };
    let path = path.split(['?', '#']).next().unwrap_or("").trim_end_matches('/');
    let mut parts = path.split('/');
    let (org, name) = (parts.next()?, parts.next()?);
    let revision = match parts.next() {
        None => None,
        Some("tree" | "blob" | "resolve") => Some(parts.next()?.replace("%2F", "/").replace("%2f", "/")),
        Some(_) => return None,
    };
    Some((format!("{org}/{name}"), revision))
}

/// The repo of the cache that is `repo` but for case (`meta-llama/Llama-3.1-8B` for
/// `meta-llama/llama-3.1-8b`): its id, for a message. Repo folders are `models--org--name`.
fn cached_in_other_case(cache: &Path, repo: &RepoId) -> Option<String> {
    let wanted = repo.folder().to_ascii_lowercase();
    std::fs::read_dir(cache).ok()?.flatten().find_map(|e| {
        let folder = e.file_name().to_string_lossy().into_owned();
        let rest = folder.strip_prefix("models--").filter(|_| folder.to_ascii_lowercase() == wanted)?;
        (folder != repo.folder()).then(|| rest.replacen("--", "/", 1))
    })
}

/// Check a `--revision`: a branch or tag name (`[A-Za-z0-9._/-]`, no `..`, no leading or trailing
/// `/`) or a commit hash.
fn check_revision(rev: &str) -> Result<()> {
    let ok = !rev.is_empty()
        && rev.len() <= MAX_REVISION_CHARS
        && rev.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'))
        && !rev.contains("..")
        && !rev.contains("//")
        && !rev.starts_with(['/', '.'])
        && !rev.ends_with('/');
    if !ok {
        bail!("invalid `--revision`: {rev:?} (a branch or tag name of letters, digits, '.', '_', '-', '/' without `..`, or a commit hash)");
    }
    Ok(())
}

/// A 40-hex-digit commit hash.
fn is_commit(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// An environment variable, unset when empty.
fn env(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.is_empty())
}

/// `HF_HOME`, else `XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface`.
fn hf_home() -> Option<PathBuf> {
    env("HF_HOME").map(PathBuf::from).or_else(|| {
        env("XDG_CACHE_HOME")
            .map(|x| PathBuf::from(x).join("huggingface"))
            .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".cache").join("huggingface")))
    })
}

/// The Hub cache folder (see the module doc).
pub fn cache_dir() -> Result<PathBuf> {
    env("HF_HUB_CACHE")
        .map(PathBuf::from)
        .or_else(|| hf_home().map(|h| h.join("hub")))
        .context("cannot locate the Hugging Face cache: set HF_HUB_CACHE or HF_HOME")
}

/// `HF_HUB_OFFLINE` set to 1/true/yes/on (any case).
fn offline() -> bool {
    env("HF_HUB_OFFLINE").is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
}

/// `HF_TOKEN`, else the token file (`HF_TOKEN_PATH`, else `<HF_HOME>/token`), trimmed.
fn token() -> Option<String> {
    if let Some(t) = env("HF_TOKEN") {
        return Some(t.trim().to_string());
    }
    let path = env("HF_TOKEN_PATH").map(PathBuf::from).or_else(|| hf_home().map(|h| h.join("token")))?;
    std::fs::metadata(&path).ok().filter(|m| m.is_file() && m.len() <= MAX_TOKEN_FILE_BYTES)?;
    let t = std::fs::read_to_string(&path).ok()?;
    Some(t.trim().to_string()).filter(|t| !t.is_empty())
}

/// The snapshot folder of `repo` at `revision` (default `main`) in `cache`, when it holds a
/// `config.json`. `Ok(None)` when the cache does not have it.
pub fn cached_snapshot(cache: &Path, repo: &RepoId, revision: Option<&str>) -> Result<Option<PathBuf>> {
    let repo_dir = cache.join(repo.folder());
    let rev = revision.unwrap_or("main");
    let commit = if is_commit(rev) {
        rev.to_ascii_lowercase()
    } else {
        let ref_file = repo_dir.join("refs").join(rev);
        match std::fs::metadata(&ref_file) {
            Ok(m) if m.is_file() && m.len() <= 256 => {
                let c = std::fs::read_to_string(&ref_file)
                    .with_context(|| format!("cannot read `{}`", ref_file.display()))?;
                let c = c.trim();
                if !is_commit(c) {
                    bail!("invalid `{}`: {c:?} (a 40-hex-digit commit hash)", ref_file.display());
                }
                c.to_string()
            }
            _ => return Ok(None),
        }
    };
    let snap = repo_dir.join("snapshots").join(&commit);
    Ok(snap.join("config.json").is_file().then_some(snap))
}

/// Resolve `repo` to a local folder holding its `config.json` (and, when the repo has one,
/// `model.safetensors.index.json`): the cache's snapshot, else a download into the cache.
pub fn resolve(repo: &RepoId, revision: Option<&str>) -> Result<PathBuf> {
    if let Some(r) = revision {
        check_revision(r)?;
    }
    let cache = cache_dir()?;
    if let Some(snap) = cached_snapshot(&cache, repo, revision)? {
        return Ok(snap);
    }
    let rev = revision.unwrap_or("main");
    if offline() {
        let why = if cache.join(repo.folder()).is_dir() {
            format!("`{}` has no snapshot with config.json for revision {rev}", cache.join(repo.folder()).display())
        } else {
            format!("`{}` is not in the Hugging Face cache `{}`", repo.id(), cache.display())
        };
        let case = cached_in_other_case(&cache, repo)
            .map(|id| {
                format!("; the cache holds `{id}` (repo ids are case-sensitive here): did you mean `--model {id}`?")
            })
            .unwrap_or_default();
        bail!("cannot resolve `--model` {}: {why}, and HF_HUB_OFFLINE forbids downloading it{case}", repo.id());
    }
    let timeout_s = match env("HF_HUB_DOWNLOAD_TIMEOUT") {
        None => DEFAULT_DOWNLOAD_TIMEOUT_S,
        Some(t) => match t.trim().parse::<f64>() {
            Ok(x) if x.is_finite() && (1.0..=86_400.0).contains(&x) => x.ceil() as u64,
            _ => bail!("invalid `HF_HUB_DOWNLOAD_TIMEOUT`: {t:?} (seconds, 1 to 86400)"),
        },
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let (cache2, repo2, rev2) = (cache.clone(), repo.clone(), rev.to_string());
    std::thread::spawn(move || {
        let _ = tx.send(download(&cache2, &repo2, &rev2));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(timeout_s)) {
        Ok(r) => r,
        Err(_) => bail!(
            "cannot download `config.json` of `--model` {}: no answer within {timeout_s} s (HF_HUB_DOWNLOAD_TIMEOUT; set HF_HUB_OFFLINE=1 to use only the local cache)",
            repo.id()
        ),
    }
}

/// Download `config.json` (and the safetensors index when present) into `cache` with `hf-hub`.
fn download(cache: &Path, repo: &RepoId, rev: &str) -> Result<PathBuf> {
    use hf_hub::api::sync::ApiBuilder;
    use hf_hub::{Repo, RepoType};
    let endpoint = env("HF_ENDPOINT").unwrap_or_else(|| "https://huggingface.co".into());
    let endpoint = endpoint.trim_end_matches('/').to_string();
    let api = ApiBuilder::new()
        .with_cache_dir(cache.to_path_buf())
        .with_endpoint(endpoint.clone())
        .with_token(token())
        .with_progress(false)
        .build()
        .map_err(|e| anyhow!("cannot start the Hub client: {e}"))?;
    let api = api.repo(Repo::with_revision(repo.id(), RepoType::Model, rev.to_string()));
    let config = api.download("config.json").map_err(|e| download_error(&e, repo, rev, "config.json", &endpoint))?;
    match api.download("model.safetensors.index.json") {
        Ok(_) => {}
        Err(e) if status(&e) == Some(404) => {}
        Err(e) => return Err(download_error(&e, repo, rev, "model.safetensors.index.json", &endpoint)),
    }
    config.parent().map(Path::to_path_buf).context("the downloaded config.json has no folder")
}

/// The HTTP status of a failed request, if the server answered.
fn status(e: &hf_hub::api::sync::ApiError) -> Option<u16> {
    match e {
        hf_hub::api::sync::ApiError::RequestError(e) => match e.as_ref() {
            ureq::Error::Status(code, _) => Some(*code),
            ureq::Error::Transport(_) => None,
        },
        _ => None,
    }
}

/// One line for a failed download: gated (401/403), not found (404), or what went wrong.
fn download_error(
    e: &hf_hub::api::sync::ApiError,
    repo: &RepoId,
    rev: &str,
    file: &str,
    endpoint: &str,
) -> anyhow::Error {
    let id = repo.id();
    match status(e) {
        Some(401 | 403) => anyhow!(
            "cannot download `{file}` of `--model` {id}: the Hub refused access (HTTP {}); the repo is gated or private: accept its licence on the model page and set HF_TOKEN (or run `huggingface-cli login`)",
            status(e).unwrap_or_default()
        ),
        Some(404) => anyhow!(
            "cannot download `{file}` of `--model` {id}: not found at revision {rev} on {endpoint} (HTTP 404); check the repo id and --revision"
        ),
        Some(code) => anyhow!("cannot download `{file}` of `--model` {id}: HTTP {code} from {endpoint}"),
        None => {
            let msg = e.to_string().replace('\n', " ");
            anyhow!("cannot download `{file}` of `--model` {id} from {endpoint}: {msg} (set HF_HUB_OFFLINE=1 to use only the local cache)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_ids_are_checked() {
        for good in ["meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-0.5B", "a/b", "org_1/m.v2"] {
            assert!(RepoId::parse(good).is_ok(), "{good}");
        }
        for bad in ["a/..", "../a", "a/b/c", "/a", "a/", "a/.b", "a/b-", "a/b c", "a/b\\c", "a/b--c", "a/%2e%2e", ""] {
            let e = RepoId::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("invalid `--model`"), "{bad}: {e}");
        }
    }

    #[test]
    fn pasted_urls_and_revisions_are_repo_ids() {
        let r = |s: &str| hub_reference(s);
        let some = |id: &str, rev: Option<&str>| Some((id.to_string(), rev.map(str::to_string)));
        assert_eq!(r("https://huggingface.co/meta-llama/Llama-3.1-8B"), some("meta-llama/Llama-3.1-8B", None));
        assert_eq!(r("https://huggingface.co/meta-llama/Llama-3.1-8B/"), some("meta-llama/Llama-3.1-8B", None));
        assert_eq!(r("https://huggingface.co/Qwen/Qwen3-8B/tree/v1.0"), some("Qwen/Qwen3-8B", Some("v1.0")));
        assert_eq!(
            r("https://huggingface.co/Qwen/Qwen3-8B/blob/main/config.json"),
            some("Qwen/Qwen3-8B", Some("main"))
        );
        assert_eq!(r("hf.co/org/m/resolve/refs%2Fpr%2F1/config.json"), some("org/m", Some("refs/pr/1")));
        assert_eq!(r("org/name@0123abc"), some("org/name", Some("0123abc")));
        for plain in ["org/name", "llama-3-8b", "./models/x@y", "https://huggingface.co/org", "a@"] {
            assert_eq!(r(plain), None, "{plain}");
        }
        assert_eq!(r("https://huggingface.co/org/name/discussions/1"), None);
    }

    #[test]
    fn revisions_are_checked() {
        for good in ["main", "v1.0", "refs/pr/1", "0123456789abcdef0123456789abcdef01234567"] {
            check_revision(good).unwrap();
        }
        for bad in ["", "../main", "a/../../b", "/etc", "main/", "a b", ".hidden"] {
            let e = check_revision(bad).unwrap_err().to_string();
            assert!(e.starts_with("invalid `--revision`"), "{bad}: {e}");
        }
    }
}
