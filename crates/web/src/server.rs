//! Running the explorer: bind, print the URL, optionally open a browser, serve until Ctrl-C.

use crate::{app, AppState};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// Where and how to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to bind (the CLI's default is 127.0.0.1: this machine only).
    pub bind: IpAddr,
    /// Port (0 picks a free one).
    pub port: u16,
    /// Open the page in the default browser once listening.
    pub open: bool,
}

/// Serve until Ctrl-C (blocking; builds its own runtime).
pub fn serve(opts: ServeOptions, mut state: AppState) -> io::Result<()> {
    // Listening on loopback only makes sense for local pages: refuse other Host names (DNS
    // rebinding). Bound elsewhere on purpose, any Host is the user's choice.
    state.loopback_hosts_only = opts.bind.is_loopback();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let want = SocketAddr::new(opts.bind, opts.port);
        let listener = tokio::net::TcpListener::bind(want)
            .await
            .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {want}: {e}")))?;
        let addr = listener.local_addr()?;
        let url = format!("http://{addr}/");
        eprintln!("llm-ledger explorer: {url}  (Ctrl-C to stop)");
        if !addr.ip().is_loopback() {
            eprintln!("note: bound to {}, so other machines can reach this page", addr.ip());
        }
        if opts.open {
            open_browser(&url);
        }
        axum::serve(listener, app(Arc::new(state)))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
    })
}

/// Ask the desktop to open `url`; a failure is a note, not an error (the URL is printed anyway).
fn open_browser(url: &str) {
    use std::process::{Command, Stdio};
    let mut cmd = if cfg!(target_os = "macos") {
        Command::new("open")
    } else if cfg!(windows) {
        let mut c = Command::new("cmd");
        c.args(["/C", "start", ""]);
        c
    } else {
        Command::new("xdg-open")
    };
    if let Err(e) = cmd.arg(url).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn() {
        eprintln!("note: could not open a browser ({e}); open {url} yourself");
    }
}
