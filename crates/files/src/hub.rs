//! `--model org/name`: a Hugging Face Hub repo id, resolved from the local Hub cache or, when online,
//! by downloading the two small files the tool reads (`config.json`, and
//! `model.safetensors.index.json` when the repo has one) with a client written here on `ureq`.
//!
//! The cache is the `huggingface_hub` layout: `<cache>/models--org--name/refs/<branch>` holds a
//! commit hash, `<cache>/models--org--name/blobs/<etag>` each file's bytes and
//! `<cache>/models--org--name/snapshots/<commit>/config.json` a relative symbolic link to its blob
//! (see huggingface_hub's `file_download.py`). The cache folder is `HF_HUB_CACHE`, else
//! `HF_HOME/hub`, else `XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`.
//! `HF_HUB_OFFLINE=1` forbids the network; `HF_ENDPOINT` replaces `https://huggingface.co`; the
//! token is `HF_TOKEN`, else the file `HF_TOKEN_PATH`, else `<HF_HOME>/token` (what
//! `huggingface-cli login` writes).
//!
//! A download trusts nothing the server says: the commit (`X-Repo-Commit`) must be 40 hex digits
//! and the file hash (`X-Linked-Etag`, else `ETag`) 40 or 64, or the download stops with one line
//! naming the header and nothing is written; redirects are followed by hand, at most
//! [`MAX_REDIRECTS`], and the token is sent only to the endpoint's own origin; a body is read up
//! to [`MAX_CONFIG_BYTES`] or [`MAX_INDEX_DOWNLOAD_BYTES`] and refused past it; connecting may
//! take 10 s and the whole download `HF_HUB_DOWNLOAD_TIMEOUT` seconds (default 60), after which
//! it stops. Files are checked (whole, JSON) before they are written, each through a temporary
//! file renamed into place, the ref last, so a failed download leaves no snapshot that a later
//! run would use.

use anyhow::{anyhow, bail, Context, Result};
use llm_ledger_core::error::Text;
use llm_ledger_core::limits::MAX_INPUT_FILE_BYTES;
use llm_ledger_core::model::safetensors::MAX_INDEX_BYTES;
use llm_ledger_core::Error;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Longest repo id the Hub accepts (`org/name`, huggingface_hub's `REPO_ID_MAX_LENGTH`).
const MAX_REPO_ID_CHARS: usize = 96;
/// Longest revision (branch, tag or commit) accepted.
const MAX_REVISION_CHARS: usize = 255;
/// Largest token file read, bytes (a token is about 40 characters).
const MAX_TOKEN_FILE_BYTES: u64 = 4096;
/// Seconds the whole download may take unless `HF_HUB_DOWNLOAD_TIMEOUT` says otherwise.
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
            let value = format!("{s:?} ({why}; a Hub repo id is org/name of letters, digits, '.', '_' and '-', or give a local path or a preset name)");
            anyhow::Error::new(Error::input("model", Text::template("invalid `{model}`: ").plain(&value)))
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
        let value = format!(
            "{rev:?} (a branch or tag name of letters, digits, '.', '_', '-', '/' without `..`, or a commit hash)"
        );
        return Err(Error::input("revision", Text::template("invalid `{revision}`: ").plain(&value)).into());
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

/// `HF_TOKEN`, else the token file (`HF_TOKEN_PATH`, else `<HF_HOME>/token`), trimmed; an error
/// (which never shows the token) when it holds anything but printable ASCII without spaces: a
/// control character in it would break the `Authorization` header (a CR/LF would add headers of
/// its own), and a message about it would print the secret.
fn token() -> Result<Option<String>> {
    let checked = |t: String, source: &str| -> Result<Option<String>> {
        if t.bytes().all(|b| b.is_ascii_graphic()) {
            return Ok(Some(t).filter(|t| !t.is_empty()));
        }
        bail!(
            "invalid {source}: a Hugging Face token is printable ASCII without spaces, and this one holds a control character, a space or a non-ASCII character (the token is not shown)"
        )
    };
    if let Some(t) = env("HF_TOKEN") {
        return checked(t.trim().to_string(), "`HF_TOKEN`");
    }
    let Some(path) = env("HF_TOKEN_PATH").map(PathBuf::from).or_else(|| hf_home().map(|h| h.join("token"))) else {
        return Ok(None);
    };
    if std::fs::metadata(&path).ok().filter(|m| m.is_file() && m.len() <= MAX_TOKEN_FILE_BYTES).is_none() {
        return Ok(None);
    }
    let Ok(t) = std::fs::read_to_string(&path) else { return Ok(None) };
    checked(t.trim().to_string(), &format!("token file `{}`", path.display()))
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

/// Largest `config.json` downloaded, bytes: what [`crate::read_text`] reads (published configs
/// are 1–10 KB).
pub const MAX_CONFIG_BYTES: u64 = MAX_INPUT_FILE_BYTES as u64;
/// Largest `model.safetensors.index.json` downloaded, bytes: the index reader's cap
/// ([`MAX_INDEX_BYTES`]; DeepSeek-V3's, 91,991 tensors, is about 9 MB).
pub const MAX_INDEX_DOWNLOAD_BYTES: u64 = MAX_INDEX_BYTES as u64;
/// Most redirects followed for one file (the Hub answers a file with at most two: a renamed
/// repo's, then the CDN's).
pub const MAX_REDIRECTS: usize = 5;
/// Seconds a connection may take to open (within the overall deadline).
const CONNECT_TIMEOUT_S: u64 = 10;

/// Resolve `repo` to a local folder holding its `config.json` (and, when the repo has one,
/// `model.safetensors.index.json`): the cache's snapshot, else a download into the cache, which
/// must finish within `HF_HUB_DOWNLOAD_TIMEOUT` seconds (default 60): past that deadline the
/// transfer stops and the call returns the error, nothing left running.
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
                Text::default()
                    .plain(&format!("; the cache holds `{id}` (repo ids are case-sensitive here): did you mean `"))
                    .input("model")
                    .plain(&format!(" {id}`?"))
            })
            .unwrap_or_default();
        let message = Text::template("cannot resolve `{model}` ")
            .plain(&format!("{}: {why}, and HF_HUB_OFFLINE forbids downloading it", repo.id()))
            .then(case);
        return Err(Error::input("model", message).into());
    }
    let timeout_s = match env("HF_HUB_DOWNLOAD_TIMEOUT") {
        None => DEFAULT_DOWNLOAD_TIMEOUT_S,
        Some(t) => match t.trim().parse::<f64>() {
            Ok(x) if x.is_finite() && (1.0..=86_400.0).contains(&x) => x.ceil() as u64,
            _ => bail!("invalid `HF_HUB_DOWNLOAD_TIMEOUT`: {t:?} (seconds, 1 to 86400)"),
        },
    };
    let endpoint = env("HF_ENDPOINT").unwrap_or_else(|| "https://huggingface.co".into());
    let hub = Hub::new(&endpoint, token()?, timeout_s)?;
    hub.download(&cache, repo, rev)
}

/// A Hub endpoint to download from: its URL, the token sent to it (and only to it), and the
/// deadline of the whole download.
pub struct Hub {
    endpoint: url::Url,
    token: Option<String>,
    timeout_s: u64,
    deadline: Instant,
    agent: ureq::Agent,
}

/// One downloaded file: its body and what the Hub said of it.
struct Fetched {
    /// The commit the Hub resolved the revision to (`X-Repo-Commit`), checked: 40 hex digits.
    commit: Option<String>,
    /// The file's hash (`X-Linked-Etag`, else `ETag`), checked: 40 or 64 hex digits.
    etag: Option<String>,
    body: Vec<u8>,
}

/// Why a file could not be fetched.
enum FetchError {
    /// The Hub answered this HTTP status.
    Status(u16),
    /// Anything else, in words.
    Other(String),
}

impl Hub {
    /// A client of `endpoint` (`HF_ENDPOINT`, an http or https URL) whose downloads end within
    /// `timeout_s` seconds from now.
    pub fn new(endpoint: &str, token: Option<String>, timeout_s: u64) -> Result<Hub> {
        let shown = llm_ledger_core::model::gguf::printable(endpoint);
        let endpoint = url::Url::parse(endpoint.trim_end_matches('/'))
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .ok_or_else(|| anyhow!("invalid `HF_ENDPOINT`: {shown:?} (an http:// or https:// URL)"))?;
        let agent = ureq::AgentBuilder::new()
            .redirects(0)
            .timeout_connect(Duration::from_secs(CONNECT_TIMEOUT_S.min(timeout_s)))
            .user_agent(concat!("llm-ledger/", env!("CARGO_PKG_VERSION")))
            .build();
        let deadline = Instant::now() + Duration::from_secs(timeout_s);
        Ok(Hub { endpoint, token, timeout_s, deadline, agent })
    }

    /// The endpoint as the user gave it, for messages.
    fn shown(&self) -> String {
        self.endpoint.as_str().trim_end_matches('/').to_string()
    }

    /// `GET url`, following at most [`MAX_REDIRECTS`] redirects by hand: the token goes only to
    /// the endpoint's own origin (scheme, host and port), never to a host a redirect names; the
    /// commit and hash headers are read from the endpoint's answers and checked before anything
    /// else; the body is read up to `cap` bytes and refused past it.
    fn fetch(&self, url: &str, cap: u64) -> std::result::Result<Fetched, FetchError> {
        let mut url = url::Url::parse(url).map_err(|e| FetchError::Other(format!("invalid URL {url:?}: {e}")))?;
        let (mut commit, mut etag) = (None, None);
        for hop in 0..=MAX_REDIRECTS {
            let Some(left) = self.deadline.checked_duration_since(Instant::now()) else {
                return Err(self.timed_out());
            };
            let own = url.origin() == self.endpoint.origin();
            let mut req = self.agent.request_url("GET", &url).timeout(left);
            if let (true, Some(t)) = (own, &self.token) {
                req = req.set("Authorization", &format!("Bearer {t}"));
            }
            let resp = match req.call() {
                Ok(r) => r,
                Err(ureq::Error::Status(code, _)) => return Err(FetchError::Status(code)),
                Err(ureq::Error::Transport(_)) if Instant::now() >= self.deadline => return Err(self.timed_out()),
                Err(ureq::Error::Transport(t)) => return Err(FetchError::Other(t.to_string().replace('\n', " "))),
            };
            if own {
                if let Some(c) = resp.header("x-repo-commit") {
                    commit = Some(check_commit_header(c).map_err(FetchError::Other)?);
                }
                if let Some(e) = resp.header("x-linked-etag").or_else(|| resp.header("etag")) {
                    etag = Some(check_etag_header(e).map_err(FetchError::Other)?);
                }
            }
            if (300..400).contains(&resp.status()) {
                if hop == MAX_REDIRECTS {
                    return Err(FetchError::Other(format!(
                        "more than {MAX_REDIRECTS} redirects (the limit; a redirect loop?)"
                    )));
                }
                let location = resp
                    .header("location")
                    .ok_or_else(|| FetchError::Other(format!("HTTP {} without a `Location` header", resp.status())))?;
                let next = url
                    .join(location)
                    .ok()
                    .filter(|u| matches!(u.scheme(), "http" | "https"))
                    .ok_or_else(|| FetchError::Other(format!("a redirect to {:?}", shorten(location))))?;
                url = next;
                continue;
            }
            if resp.status() != 200 {
                return Err(FetchError::Status(resp.status()));
            }
            let too_big =
                || FetchError::Other(format!("the file is larger than the {} MiB limit on its download", cap >> 20));
            if resp.header("content-length").and_then(|l| l.trim().parse::<u64>().ok()).is_some_and(|l| l > cap) {
                return Err(too_big());
            }
            let mut body = Vec::new();
            match resp.into_reader().take(cap + 1).read_to_end(&mut body) {
                Err(_) if Instant::now() >= self.deadline => return Err(self.timed_out()),
                Err(e) => return Err(FetchError::Other(crate::output::io_message(&e))),
                Ok(_) if body.len() as u64 > cap => return Err(too_big()),
                Ok(_) => {}
            }
            return Ok(Fetched { commit, etag, body });
        }
        unreachable!("the loop returns by its last hop")
    }

    fn timed_out(&self) -> FetchError {
        FetchError::Other(format!(
            "no answer within {} s (HF_HUB_DOWNLOAD_TIMEOUT, the limit on the whole download; set HF_HUB_OFFLINE=1 to use only the local cache)",
            self.timeout_s
        ))
    }

    /// `{endpoint}/{org}/{name}/resolve/{revision}/{file}`.
    fn file_url(&self, repo: &RepoId, rev: &str, file: &str) -> String {
        format!("{}/{}/resolve/{rev}/{file}", self.shown(), repo.id())
    }

    /// One line for a failed download of `file`: gated (401/403), not found (404), or what went
    /// wrong.
    fn error(&self, e: FetchError, repo: &RepoId, rev: &str, file: &str) -> anyhow::Error {
        let (id, endpoint) = (repo.id(), self.shown());
        let of =
            Text::default().plain(&format!("cannot download `{file}` of `")).input("model").plain(&format!("` {id}"));
        let message = match e {
            FetchError::Status(code @ (401 | 403)) => of.plain(&format!(
                ": the Hub refused access (HTTP {code}); the repo is gated or private: accept its licence on the model page and set HF_TOKEN (or run `huggingface-cli login`)"
            )),
            FetchError::Status(404) => of
                .plain(&format!(": not found at revision {rev} on {endpoint} (HTTP 404); check the repo id and "))
                .input("revision"),
            FetchError::Status(code) => of.plain(&format!(": HTTP {code} from {endpoint}")),
            FetchError::Other(msg) => {
                of.plain(&format!(" from {endpoint}: {msg}; nothing was written to the cache"))
            }
        };
        anyhow::Error::new(Error::input("model", message))
    }

    /// Download `config.json` and, when the repo has them, `model.safetensors.index.json` and
    /// ModelOpt's `hf_quant_config.json` (at the commit the first answer names, so all come from
    /// one snapshot), check them, and only then
    /// write them into `cache` in the `huggingface_hub` layout: `blobs/<etag>` (through a
    /// temporary file), `snapshots/<commit>/<file>` a relative symbolic link to the blob, and last
    /// `refs/<revision>` holding the commit. Returns the snapshot folder.
    pub fn download(&self, cache: &Path, repo: &RepoId, rev: &str) -> Result<PathBuf> {
        let config_url = self.file_url(repo, rev, "config.json");
        let config = self.fetch(&config_url, MAX_CONFIG_BYTES).map_err(|e| self.error(e, repo, rev, "config.json"))?;
        let bad = |file: &str, why: String| self.error(FetchError::Other(why), repo, rev, file);
        let commit = match (&config.commit, is_commit(rev)) {
            (Some(c), _) => c.clone(),
            (None, true) => rev.to_ascii_lowercase(),
            (None, false) => {
                return Err(bad(
                    "config.json",
                    "the answer has no `X-Repo-Commit` header (is HF_ENDPOINT a Hugging Face Hub?)".into(),
                ))
            }
        };
        let mut files = vec![("config.json", config, MAX_CONFIG_BYTES)];
        // The safetensors index and ModelOpt's quantisation file, where the repo has them.
        for (name, limit) in
            [("model.safetensors.index.json", MAX_INDEX_DOWNLOAD_BYTES), (crate::QUANT_SIDECAR, MAX_CONFIG_BYTES)]
        {
            match self.fetch(&self.file_url(repo, &commit, name), limit) {
                Ok(f) => files.push((name, f, limit)),
                Err(FetchError::Status(404)) => {}
                Err(e) => return Err(self.error(e, repo, &commit, name)),
            }
        }
        let mut blobs = Vec::new();
        for (name, f, _) in &files {
            let etag = f.etag.clone().ok_or_else(|| bad(name, "the answer has no `ETag` header".into()))?;
            if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&f.body) {
                return Err(bad(name, format!("the body is not JSON ({e})")));
            }
            blobs.push((*name, etag, &f.body));
        }
        let repo_dir = cache.join(repo.folder());
        let snap = repo_dir.join("snapshots").join(&commit);
        let ctx = || format!("cannot write to the Hugging Face cache `{}`", cache.display());
        std::fs::create_dir_all(repo_dir.join("blobs")).with_context(ctx)?;
        std::fs::create_dir_all(&snap).with_context(ctx)?;
        for (name, etag, body) in blobs {
            let blob = repo_dir.join("blobs").join(&etag);
            crate::output::write(&blob, "Hub cache file", body)?;
            let target = Path::new("..").join("..").join("blobs").join(&etag);
            crate::output::replace_symlink(&target, &snap.join(name), "Hub cache file")?;
        }
        if commit != rev {
            let ref_file = repo_dir.join("refs").join(rev);
            std::fs::create_dir_all(ref_file.parent().expect("refs/<rev> has a folder")).with_context(ctx)?;
            crate::output::write(&ref_file, "Hub cache file", commit.as_bytes())?;
        }
        Ok(snap)
    }
}

/// `s` cut to 80 characters, control characters escaped, for an echo in a message.
fn shorten(s: &str) -> String {
    let s = llm_ledger_core::model::gguf::printable(s);
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// An `X-Repo-Commit` header: the commit hash a cache folder is named by, exactly 40 hex digits.
fn check_commit_header(value: &str) -> std::result::Result<String, String> {
    let v = value.trim();
    if is_commit(v) {
        Ok(v.to_ascii_lowercase())
    } else {
        Err(format!("the Hub answered `X-Repo-Commit: {}` (a 40-hex-digit commit hash)", shorten(v)))
    }
}

/// An `ETag` (or `X-Linked-Etag`) header, the cache's blob name: a weak `W/` prefix and the quotes
/// removed, a git blob SHA-1 (40 hex digits) or an LFS SHA-256 (64), the only forms the Hub uses.
fn check_etag_header(value: &str) -> std::result::Result<String, String> {
    let v = value.trim();
    let bare = v.strip_prefix("W/").unwrap_or(v);
    let bare = bare.strip_prefix('"').and_then(|b| b.strip_suffix('"')).unwrap_or(bare);
    if matches!(bare.len(), 40 | 64) && bare.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(bare.to_ascii_lowercase())
    } else {
        Err(format!("the Hub answered `ETag: {}` (a 40- or 64-hex-digit file hash)", shorten(v)))
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
            let e = RepoId::parse(bad).unwrap_err();
            let core = e.downcast_ref::<Error>().expect("a core error");
            assert_eq!(core.field(), Some("model"));
            // The input named as each front end spells it: the keyword, or the CLI's flag.
            assert!(e.to_string().starts_with("invalid `model`"), "{bad}: {e}");
            let flag = core.clone().map_field(|f| format!("--{f}")).to_string();
            assert!(flag.starts_with("invalid `--model`"), "{bad}: {flag}");
        }
    }

    /// The download runs in the caller's thread and stops at its deadline: once `download`
    /// returns the error, the connection is closed (the server's next writes fail), where a
    /// download thread once kept reading after the call gave up.
    #[test]
    fn a_download_stops_when_the_call_returns() {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let head = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nX-Repo-Commit: 0123456789abcdef0123456789abcdef01234567\r\nETag: \"0123456789abcdef0123456789abcdef01234567\"\r\n\r\n{";
            let mut ok = s.write_all(head.as_bytes()).is_ok();
            while ok {
                std::thread::sleep(Duration::from_millis(50));
                ok = s.write_all(b" ").and_then(|()| s.flush()).is_ok();
            }
            let _ = tx.send(());
        });
        let cache = std::env::temp_dir().join(format!("llm-ledger-hub-stop-{}", std::process::id()));
        let hub = Hub::new(&url, None, 1).unwrap();
        let e = hub.download(&cache, &RepoId::parse("org/model").unwrap(), "main").unwrap_err().to_string();
        assert!(e.contains("no answer within 1 s"), "{e}");
        assert!(rx.recv_timeout(Duration::from_secs(30)).is_ok(), "the server still had a reader");
        assert!(!cache.exists(), "nothing written");
    }

    #[test]
    fn server_names_are_checked() {
        let sha1 = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(check_commit_header(sha1).unwrap(), sha1);
        assert_eq!(check_etag_header(&format!("W/\"{}\"", sha1.to_uppercase())).unwrap(), sha1);
        assert_eq!(check_etag_header(&"ab".repeat(32)).unwrap(), "ab".repeat(32));
        for bad in ["../..", "/etc", &sha1[..39], &format!("{sha1}0"), "", "0123456789abcdef0123456789abcdef0123456g"] {
            assert!(check_commit_header(bad).unwrap_err().contains("`X-Repo-Commit: "), "{bad}");
            assert!(check_etag_header(&format!("\"{bad}\"")).unwrap_err().contains("`ETag: "), "{bad}");
        }
        let e = check_etag_header("\"a\nb\"").unwrap_err();
        assert!(!e.contains('\n'), "{e}");
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
            let e = check_revision(bad).unwrap_err();
            assert_eq!(e.downcast_ref::<Error>().and_then(Error::field), Some("revision"));
            assert!(e.to_string().starts_with("invalid `revision`"), "{bad}: {e}");
        }
    }
}
