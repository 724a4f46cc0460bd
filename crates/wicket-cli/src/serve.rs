//! `wicket serve`: the HTTP API and the web page over one session manager.
//! One server per home: a second one says where the first runs instead of
//! fighting over the sessions.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use wicket_core::manager::{Manager, standard_setup};
use wicket_server::{Server, ServerFile, app, new_token, running_server, write_server_file};
use wicket_session as session;

pub(crate) const DEFAULT_PORT: u16 = 7433;
/// How long open requests get to finish once the server is told to stop.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(1);
/// How long running turns get to end once cancelled at shutdown: with the
/// grace above, SIGTERM ends the process within 5 s.
const TURNS_PATIENCE: std::time::Duration = std::time::Duration::from_secs(3);

pub(crate) struct Options {
    pub port: u16,
    pub workspace: Option<PathBuf>,
    /// Another address to listen on instead of 127.0.0.1 (still token-guarded).
    pub listen: Option<SocketAddr>,
}

pub(crate) fn serve(options: Options) -> anyhow::Result<ExitCode> {
    let home = session::home();
    wicket_os::files::private_dir(&home)
        .with_context(|| format!("cannot make the wicket home {}", home.display()))?;
    let Some(_lock) = lock_home(&home)? else {
        return Ok(already_running(&home));
    };
    let workspace = match options.workspace {
        Some(dir) => Some(
            std::fs::canonicalize(&dir)
                .with_context(|| format!("the workspace {} cannot be opened", dir.display()))?,
        ),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let addr = options
        .listen
        .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], options.port)));
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(addr))
        .with_context(|| format!("cannot listen on {addr}; pick another --port (0 = any)"))?;
    let addr = listener.local_addr()?;
    let manager = Arc::new(Manager::new(
        &home,
        runtime.handle().clone(),
        standard_setup(&home),
    ));
    {
        // Old checkpoints of sessions nobody opens go too, off the start's path.
        let manager = manager.clone();
        std::thread::spawn(move || manager.prune_checkpoints());
    }
    let token = new_token();
    let mut server = Server::new(manager.clone(), token.clone(), addr);
    server.default_workspace = workspace;
    let url = format!("http://{}", server.hosts[0]);
    write_server_file(
        &home,
        &ServerFile {
            url: url.clone(),
            port: addr.port(),
            token: token.clone(),
            pid: std::process::id(),
        },
    )
    .context("cannot write server.json")?;
    println!("wicket serve: {url}/#token={token}");
    std::io::stdout().flush()?;

    let router = app(Arc::new(server));
    let served = runtime.block_on(async {
        let stopping = Arc::new(tokio::sync::Notify::new());
        let stop = stopping.clone();
        let serving = axum::serve(listener, router).with_graceful_shutdown(async move {
            shutdown_signal().await;
            stop.notify_one();
        });
        // Event streams never end by themselves: give requests a moment to
        // finish, then stop regardless.
        tokio::select! {
            served = serving => served,
            () = async {
                stopping.notified().await;
                tokio::time::sleep(SHUTDOWN_GRACE).await;
            } => Ok(()),
        }
    });
    stop_turns(&manager);
    // The server is stopping: a server.json that cannot be removed is replaced by the next server (its lock went with it).
    let _ = std::fs::remove_file(home.join("server.json"));
    served.context("the server stopped")?;
    Ok(ExitCode::SUCCESS)
}

/// Holds `server.lock` in the home for as long as this server runs; `None`
/// when another process holds it. A `server.json` left by a server that
/// died is simply replaced: its lock went with it.
fn lock_home(home: &Path) -> anyhow::Result<Option<std::fs::File>> {
    let path = home.join("server.lock");
    match wicket_os::files::lock(&path, std::time::Duration::ZERO)
        .with_context(|| format!("cannot lock {}", path.display()))?
    {
        wicket_os::files::Locked::Held(mut file) => {
            // The holder's pid is a courtesy for the error another process shows; the lock is what counts.
            let _ = wicket_os::files::record_holder(&mut file);
            Ok(Some(file))
        }
        wicket_os::files::Locked::Busy => Ok(None),
    }
}

fn already_running(home: &Path) -> ExitCode {
    match running_server(home) {
        Some(file) => crate::show::say(format!(
            "a server for {} already runs at {} (pid {}); open {}/#token=… with the token in {}, or stop it first",
            home.display(),
            file.url,
            file.pid,
            file.url,
            home.join("server.json").display()
        )),
        None => crate::show::say(format!(
            "another wicket serve{} holds {}; wait for it or stop it first",
            wicket_os::files::holder(&home.join("server.lock"))
                .map(|pid| format!(" (pid {pid})"))
                .unwrap_or_default(),
            home.display()
        )),
    }
    ExitCode::from(1)
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(_) => {
            // No SIGTERM handler: Ctrl-C alone stops the server, and if even that cannot be waited for, it stops now.
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// Starts nothing more, cancels every running turn and waits a while for
/// it to end, then stops every MCP server, so no command the server started
/// outlives it and the process exits within `SHUTDOWN_GRACE` plus this.
fn stop_turns(manager: &Manager) {
    for id in manager.close(TURNS_PATIENCE) {
        crate::show::say(format!(
            "the turn in session {} did not end in time; the next wicket to open it closes it in its log",
            id.as_str()
        ));
    }
}
