//! A network through Wicket, Wicket's half (the launcher's is
//! `launch/egress.rs`). Before a command with `Network::Proxied` starts, a
//! [`Handoff`] binds a UNIX socket in a private folder and names it in the
//! launch; the command's launcher connects to it before it enters its
//! namespaces and then sends over it, one by one, the descriptors of the
//! connections the command makes to its proxy listener. The handoff takes
//! only the launcher's own connection (its pid, by `SO_PEERCRED`), and
//! gives each connection to the caller's [`Egress`] handler, which decides
//! and relays (`wicket-net`). When the command is over the handoff stops.

use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::net::TcpStream;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};

/// What Wicket does with each connection a command makes through its
/// proxy: called on the handoff's thread, so it must not block for long
/// (it starts a thread of its own for the connection).
#[derive(Clone)]
pub struct Egress(pub Arc<dyn Fn(TcpStream) + Send + Sync>);

impl std::fmt::Debug for Egress {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Egress")
    }
}

/// How often the handoff looks whether its command is over while it waits
/// for the launcher to connect.
const POLL: Timespec = Timespec {
    tv_sec: 0,
    tv_nsec: 50_000_000,
};

/// The socket one command's launcher hands its connections over, and the
/// thread that takes them.
#[derive(Debug)]
pub(crate) struct Handoff {
    folder: PathBuf,
    listener: Option<UnixListener>,
    over: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Handoff {
    /// A socket in a private folder of its own, not yet taking connections.
    pub(crate) fn open() -> std::io::Result<Handoff> {
        let folder =
            std::env::temp_dir().join(format!("wicket-net-{:016x}", crate::ids::random_u64()));
        crate::files::private_dir(&folder)?;
        let listener = UnixListener::bind(folder.join("s"))?;
        listener.set_nonblocking(true)?;
        Ok(Handoff {
            folder,
            listener: Some(listener),
            over: Arc::new(AtomicBool::new(false)),
            thread: None,
        })
    }

    /// The socket's path, for the launch.
    pub(crate) fn path(&self) -> PathBuf {
        self.folder.join("s")
    }

    /// Takes the connection of the launcher `pid` (no other process's), and
    /// hands each descriptor it sends to `egress`.
    pub(crate) fn take_from(&mut self, pid: u32, egress: Egress) {
        let Some(listener) = self.listener.take() else {
            return;
        };
        let over = self.over.clone();
        self.thread = Some(std::thread::spawn(move || {
            if let Some(launcher) = accept_launcher(&listener, pid, &over) {
                receive(&launcher, &egress);
            }
        }));
    }

    /// The command is over: stops waiting for its launcher, and waits for
    /// the last descriptors it sent to be handed on.
    pub(crate) fn finish(mut self) {
        self.over.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            // The thread only reads the socket; a panic there lost no more than its connections.
            let _ = thread.join();
        }
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        self.over.store(true, Ordering::SeqCst);
        // Wicket's own temporary folder; one left behind holds only a dead socket.
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

/// The launcher's connection, once it comes; `None` when the command was
/// over first. A connection from any other process is closed unread.
fn accept_launcher(listener: &UnixListener, pid: u32, over: &AtomicBool) -> Option<UnixStream> {
    while !over.load(Ordering::SeqCst) {
        let mut ready = [PollFd::new(listener, PollFlags::IN)];
        if rustix::event::poll(&mut ready, Some(&POLL)).is_err() {
            continue;
        }
        let Ok((stream, _)) = listener.accept() else {
            continue;
        };
        let peer = rustix::net::sockopt::socket_peercred(&stream).ok();
        if peer.is_some_and(|peer| peer.pid.as_raw_nonzero().get() as u32 == pid) {
            return stream.set_nonblocking(false).ok().map(|()| stream);
        }
    }
    None
}

/// Every descriptor the launcher sends, to `egress`, until it closes its end.
fn receive(launcher: &UnixStream, egress: &Egress) {
    loop {
        let mut byte = [0u8; 1];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let received = rustix::net::recvmsg(
            launcher,
            &mut [IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        );
        match received {
            Ok(message) if message.bytes == 0 => return,
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(fds) = message {
                for fd in fds {
                    (egress.0)(TcpStream::from(fd));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::IoSlice;
    use std::net::TcpListener;
    use std::os::fd::AsFd;
    use std::sync::mpsc;

    /// Sends one TCP connection's descriptor over `socket`, as the launcher
    /// does; the connection, and whether the send went through.
    fn send_connection(socket: &UnixStream) -> (TcpStream, bool) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let connection = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let fds = [connection.as_fd()];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
        assert!(control.push(rustix::net::SendAncillaryMessage::ScmRights(&fds)));
        let sent = rustix::net::sendmsg(
            socket,
            &[IoSlice::new(&[1])],
            &mut control,
            rustix::net::SendFlags::NOSIGNAL,
        );
        (connection, sent.is_ok())
    }

    fn handed() -> (Egress, mpsc::Receiver<TcpStream>) {
        let (sender, handed) = mpsc::channel();
        let sender = std::sync::Mutex::new(sender);
        let egress = Egress(Arc::new(move |stream| {
            sender.lock().unwrap().send(stream).unwrap();
        }));
        (egress, handed)
    }

    #[test]
    fn the_launchers_connections_are_handed_on() {
        let mut handoff = Handoff::open().unwrap();
        let (egress, handed) = handed();
        handoff.take_from(std::process::id(), egress);
        let launcher = UnixStream::connect(handoff.path()).unwrap();
        let (sent, went) = send_connection(&launcher);
        assert!(went);
        let got = handed
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap();
        assert_eq!(got.local_addr().unwrap(), sent.local_addr().unwrap());
        drop(launcher);
        handoff.finish();
    }

    #[test]
    fn another_processs_connection_is_never_read() {
        let mut handoff = Handoff::open().unwrap();
        let (egress, handed) = handed();
        // The launcher is some other pid: this process is a stranger.
        handoff.take_from(std::process::id() + 1_000_000, egress);
        let stranger = UnixStream::connect(handoff.path()).unwrap();
        // Refused, it may already be closed: the send then fails, as it should.
        let _sent = send_connection(&stranger);
        handoff.finish();
        assert!(
            handed.try_recv().is_err(),
            "a stranger's connection was handed on"
        );
    }
}
