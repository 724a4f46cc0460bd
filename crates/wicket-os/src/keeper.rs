//! The one long-lived thread that forks every command Wicket starts. The
//! kernel sends the parent-death signal (`PR_SET_PDEATHSIG`, which the
//! launcher asks for) when the *thread* that forked exits, so no command
//! may be forked by a thread that ends before Wicket does; and a command
//! inherits the priority of the thread that forked it. `spawn.rs` sends
//! its commands here; `process::yield_to_front_ends` starts the thread
//! before it lowers its own priority.

use std::process::{Child, Command};
use std::sync::{Mutex, OnceLock, mpsc};

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

/// The one keeper thread that forks every command, started on first use.
fn keeper() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static KEEPER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    KEEPER.get_or_init(|| {
        let (sender, requests) = mpsc::channel::<SpawnRequest>();
        // If the thread cannot start, its receiver is dropped and every spawn below fails with 'the spawn thread is gone'.
        let _ = std::thread::Builder::new()
            .name("wicket-spawn".into())
            .spawn(move || {
                for (mut command, reply) in requests {
                    // The caller blocks on this answer; only one that panicked meanwhile is not there to take it.
                    let _ = reply.send(command.spawn());
                }
            });
        Mutex::new(sender)
    })
}

/// Starts the keeper thread now, from this thread: it takes this thread's
/// priority, which every command it forks inherits.
pub(crate) fn start() {
    keeper();
}

/// Spawns on the one keeper thread, which lives as long as the process.
pub(crate) fn spawn(command: Command) -> std::io::Result<Child> {
    let (reply, answer) = mpsc::channel();
    let sent = keeper()
        .lock()
        .map_err(|_| std::io::Error::other("the spawn thread is gone"))?
        .send((command, reply));
    if sent.is_err() {
        return Err(std::io::Error::other("the spawn thread is gone"));
    }
    answer
        .recv()
        .map_err(|_| std::io::Error::other("the spawn thread is gone"))?
}
