//! The one writer of files the tool puts where the user asked (`calibrate --out`,
//! `simulate --trace-out`, every `--plot`) and of the Hub cache's files: the bytes go to a
//! temporary file in the same folder, renamed over the path only when all of them were written,
//! so a run that fails half-way (or is stopped) leaves the old file as it was and a reader never
//! sees half a file.
//!
//! Before a run writes anything, each output path is checked ([`check_outputs`]):
//! * its folder must exist;
//! * an existing path must be a regular file: a FIFO would block the writer forever, and a device,
//!   a socket or a folder is not a file to replace;
//! * a symbolic link is refused, neither followed (its target may be anywhere) nor replaced (the
//!   link is the user's file): give the path of the file itself;
//! * it must not be one of the run's input files (the same device and inode, so another spelling
//!   of the path or a hard link to an input counts too), nor another output of the same run.
//!
//! A refused path is a user error naming the flag; a write that fails once the path passed (a
//! full disk) is a [`WriteFailed`], which the CLI reports as it reports stdout it cannot write.

use anyhow::{bail, Result};
use std::fs::Metadata;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A write to a checked output path failed (a full disk, a folder removed meanwhile): one line,
/// `cannot write plot `x.svg`: No space left on device`.
#[derive(Debug)]
pub struct WriteFailed {
    /// What the file is (`plot`, `trace`, `the profile`).
    pub what: String,
    /// The path as the user gave it.
    pub path: PathBuf,
    /// Why.
    pub error: std::io::Error,
}

impl std::fmt::Display for WriteFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot write {} `{}`: {}", self.what, self.path.display(), io_message(&self.error))
    }
}

impl std::error::Error for WriteFailed {}

/// An I/O error's message without the ` (os error N)` suffix.
pub fn io_message(e: &std::io::Error) -> String {
    let msg = e.to_string();
    match e.raw_os_error() {
        Some(code) => msg.strip_suffix(&format!(" (os error {code})")).map(str::to_string).unwrap_or(msg),
        None => msg,
    }
}

/// The kind of a file that is not a regular file, in words.
fn kind_of(meta: &Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if meta.is_dir() {
        "a folder"
    } else {
        "not a regular file"
    }
}

/// Whether `a` and `b` are the same file (device and inode; elsewhere the canonical paths).
fn same_file(a: &Metadata, a_path: &Path, b: &Path) -> bool {
    let Ok(b_meta) = std::fs::metadata(b) else { return false };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let _ = a_path;
        a.dev() == b_meta.dev() && a.ino() == b_meta.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b_meta);
        matches!((std::fs::canonicalize(a_path), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
    }
}

/// Check the output paths of one run before it starts: each `(flag, what, path)` against the
/// rules of the module doc, against the run's `inputs` (paths of files it reads; missing ones are
/// ignored) and against the other outputs.
pub fn check_outputs(outputs: &[(&str, &str, &str)], inputs: &[PathBuf]) -> Result<()> {
    for (i, (flag, what, path)) in outputs.iter().enumerate() {
        let p = Path::new(path);
        let name = p.file_name().filter(|_| !path.ends_with('/'));
        if name.is_none() {
            bail!("invalid `{flag}`: `{path}` is not a file name (give the path of a file to write)");
        }
        let folder = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !folder.is_dir() {
            bail!("cannot write {what} `{path}`: the folder `{}` does not exist", folder.display());
        }
        let Ok(link) = std::fs::symlink_metadata(p) else { continue };
        if link.file_type().is_symlink() {
            let to = std::fs::read_link(p).map(|t| format!(" (to `{}`)", t.display())).unwrap_or_default();
            bail!("invalid `{flag}`: `{path}` is a symbolic link{to}; give the path of the file itself");
        }
        if !link.is_file() {
            bail!(
                "invalid `{flag}`: `{path}` is {}, not a regular file (give the path of a file to write)",
                kind_of(&link)
            );
        }
        if let Some(input) = inputs.iter().find(|input| same_file(&link, p, input)) {
            bail!(
                "invalid `{flag}`: `{path}` is also an input of this run (`{}`); write to another file",
                input.display()
            );
        }
        if let Some((other, _, other_path)) = outputs[..i].iter().find(|(_, _, o)| same_file(&link, p, Path::new(o))) {
            bail!("invalid `{flag}`: `{path}` is also the output of `{other}` (`{other_path}`); give each output its own file");
        }
    }
    // Two outputs that do not exist yet but name the same path.
    for (i, (flag, _, path)) in outputs.iter().enumerate() {
        if let Some((other, _, _)) = outputs[..i].iter().find(|(_, _, o)| Path::new(o) == Path::new(path)) {
            bail!("invalid `{flag}`: `{path}` is also the output of `{other}`; give each output its own file");
        }
    }
    Ok(())
}

/// A file being written: a temporary file beside `path`, renamed over it by [`OutputFile::commit`];
/// dropped without a commit, the temporary file is removed and `path` is untouched.
pub struct OutputFile {
    path: PathBuf,
    what: String,
    tmp: tempfile::NamedTempFile,
}

impl OutputFile {
    /// Start writing the `what` file `path` (whose folder exists: [`check_outputs`]). An existing
    /// file's permissions are kept; a new file gets the usual ones (0666 less the umask).
    pub fn create(path: &Path, what: &str) -> Result<OutputFile> {
        let failed = |error| WriteFailed { what: what.to_string(), path: path.to_path_buf(), error };
        let folder = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".llm-ledger-").suffix(".tmp");
        #[cfg(unix)]
        let mode = {
            use std::os::unix::fs::PermissionsExt;
            std::fs::Permissions::from_mode(0o666)
        };
        #[cfg(unix)]
        builder.permissions(mode);
        let tmp = builder.tempfile_in(folder).map_err(failed)?;
        if let Some(meta) = std::fs::symlink_metadata(path).ok().filter(|m| m.is_file()) {
            std::fs::set_permissions(tmp.path(), meta.permissions()).map_err(failed)?;
        }
        Ok(OutputFile { path: path.to_path_buf(), what: what.to_string(), tmp })
    }

    /// The error of a failed write to this file.
    pub fn failed(&self, error: std::io::Error) -> anyhow::Error {
        WriteFailed { what: self.what.clone(), path: self.path.clone(), error }.into()
    }

    /// Rename the finished file over the path.
    pub fn commit(mut self) -> Result<()> {
        if let Err(e) = self.tmp.as_file_mut().flush() {
            return Err(self.failed(e));
        }
        let (path, what) = (self.path, self.what);
        self.tmp.persist(&path).map_err(|e| WriteFailed { what, path, error: e.error })?;
        Ok(())
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tmp.as_file_mut().write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.tmp.as_file_mut().flush()
    }
}

/// Write `bytes` as the `what` file `path`, all or nothing (see [`OutputFile`]).
pub fn write(path: &Path, what: &str, bytes: &[u8]) -> Result<()> {
    let mut out = OutputFile::create(path, what)?;
    if let Err(e) = out.write_all(bytes) {
        return Err(out.failed(e));
    }
    out.commit()
}

/// Make `link` a symbolic link to `target` (relative to the link's folder), replacing what is
/// there in one rename. Where symbolic links are not available, `link` becomes a copy of the
/// target.
pub fn replace_symlink(target: &Path, link: &Path, what: &str) -> Result<()> {
    let failed = |error| WriteFailed { what: what.to_string(), path: link.to_path_buf(), error };
    let folder = link.parent().unwrap_or(Path::new("."));
    #[cfg(unix)]
    {
        let tmp = tempfile::Builder::new()
            .prefix(".llm-ledger-")
            .suffix(".tmp")
            .make_in(folder, |p| std::os::unix::fs::symlink(target, p))
            .map_err(failed)?;
        tmp.persist(link).map_err(|e| failed(e.error))?;
        Ok(())
    }
    #[cfg(not(unix))]
    {
        let bytes = std::fs::read(folder.join(target)).map_err(failed)?;
        write(link, what, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("llm-ledger-output-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_file_dropped_before_commit_leaves_the_old_file() {
        let dir = scratch("drop");
        let path = dir.join("out.csv");
        std::fs::write(&path, "old").unwrap();
        let mut out = OutputFile::create(&path, "trace").unwrap();
        out.write_all(b"new, half").unwrap();
        drop(out);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file is left");
        write(&path, "trace", b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    }

    #[test]
    fn inputs_links_and_special_files_are_refused() {
        let dir = scratch("checks");
        let input = dir.join("m.csv");
        std::fs::write(&input, "x").unwrap();
        let p = |n: &str| dir.join(n).display().to_string();
        let same = format!("{}/./m.csv", dir.display());
        let e =
            check_outputs(&[("--out", "the profile", &same)], std::slice::from_ref(&input)).unwrap_err().to_string();
        assert!(e.starts_with("invalid `--out`: ") && e.contains("is also an input of this run"), "{e}");
        #[cfg(unix)]
        {
            std::fs::hard_link(&input, dir.join("hard.csv")).unwrap();
            let e =
                check_outputs(&[("--out", "the profile", &p("hard.csv"))], std::slice::from_ref(&input)).unwrap_err();
            assert!(e.to_string().contains("is also an input"), "{e}");
            std::os::unix::fs::symlink("elsewhere.csv", dir.join("link.csv")).unwrap();
            let e = check_outputs(&[("--plot", "plot", &p("link.csv"))], &[]).unwrap_err().to_string();
            assert!(e.contains("is a symbolic link (to `elsewhere.csv`)"), "{e}");
            let e = check_outputs(&[("--plot", "plot", "/dev/null")], &[]).unwrap_err().to_string();
            assert_eq!(
                e,
                "invalid `--plot`: `/dev/null` is a device, not a regular file (give the path of a file to write)"
            );
        }
        let e = check_outputs(&[("--plot", "plot", &dir.display().to_string())], &[]).unwrap_err().to_string();
        assert!(e.contains("is a folder, not a regular file"), "{e}");
        let e = check_outputs(&[("--plot", "plot", &p("a.svg")), ("--plot-timeline", "plot", &p("a.svg"))], &[])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("invalid `--plot-timeline`") && e.contains("also the output of `--plot`"), "{e}");
        let e = check_outputs(&[("--plot", "plot", "/nonexistent-dir/x.svg")], &[]).unwrap_err().to_string();
        assert_eq!(e, "cannot write plot `/nonexistent-dir/x.svg`: the folder `/nonexistent-dir` does not exist");
        check_outputs(&[("--plot", "plot", &p("new.svg")), ("--out", "the profile", &p("other.toml"))], &[input])
            .unwrap();
    }
}
