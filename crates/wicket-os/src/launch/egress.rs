//! A network through Wicket, stage 1's half. Before the namespaces, stage 1
//! connects to the UNIX socket Wicket named ([`connect`]); in the command's
//! own network namespace it brings loopback up and listens on 127.0.0.1,
//! handing every connection the command makes there to Wicket over that
//! socket, its descriptor and nothing else ([`listen`]). Wicket reads the
//! host each asks for, decides, and connects from outside the jail
//! (`crate::egress` is Wicket's half). The command reaches nothing else:
//! its namespace has no other interface, and Landlock lets it connect to
//! this one port only.

use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::Path;

use rustix::net::{
    AddressFamily, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketType,
};

/// The variables that point a command's HTTP, HTTPS and SOCKS clients at
/// the listener on `port`, upper and lower case (curl reads `http_proxy`
/// only in lower case; most others take either).
pub(super) fn proxy_env(port: u16) -> Vec<(String, String)> {
    let http = format!("http://127.0.0.1:{port}");
    let socks = format!("socks5h://127.0.0.1:{port}");
    let mut env = Vec::new();
    for (name, value) in [
        ("HTTP_PROXY", &http),
        ("HTTPS_PROXY", &http),
        ("ALL_PROXY", &socks),
    ] {
        env.push((name.to_string(), value.clone()));
        env.push((name.to_lowercase(), value.clone()));
    }
    env
}

/// Connects to Wicket's socket; done before the namespaces, where the path
/// is the host's.
pub(super) fn connect(path: &Path) -> Result<UnixStream, String> {
    UnixStream::connect(path).map_err(|error| {
        format!(
            "connecting to Wicket's proxy socket {}: {error}",
            path.display()
        )
    })
}

/// In the command's new network namespace: loopback up, a listener on
/// 127.0.0.1, and a thread that hands each connection to Wicket. The
/// listener's port.
pub(super) fn listen(wicket: UnixStream) -> Result<u16, String> {
    loopback_up()?;
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|error| format!("the proxy listener on the jail's loopback: {error}"))?;
    let port = listener
        .local_addr()
        .map_err(|error| format!("the proxy listener's port: {error}"))?
        .port();
    std::thread::spawn(move || {
        for connection in listener.incoming() {
            let Ok(connection) = connection else {
                continue;
            };
            // Wicket is gone (or stopped listening): nothing is reached.
            if hand_over(&wicket, &connection).is_err() {
                break;
            }
        }
    });
    Ok(port)
}

/// Sends one connection's descriptor to Wicket (one byte carries it); the
/// copy here is closed when `connection` drops.
fn hand_over(wicket: &UnixStream, connection: &TcpStream) -> std::io::Result<()> {
    let fds = [connection.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(std::io::Error::other("no room for the descriptor"));
    }
    rustix::net::sendmsg(
        wicket,
        &[IoSlice::new(&[1])],
        &mut control,
        SendFlags::empty(),
    )?;
    Ok(())
}

/// `RTM_NEWLINK`, `NLM_F_REQUEST | NLM_F_ACK`, `NLMSG_ERROR` and `IFF_UP`
/// (`linux/rtnetlink.h`, `linux/netlink.h`, `linux/if.h`).
const RTM_NEWLINK: u16 = 16;
const NLM_F_REQUEST_ACK: u16 = 1 | 4;
const NLMSG_ERROR: u16 = 2;
const IFF_UP: u32 = 1;
/// Loopback is the first device of every network namespace.
const LOOPBACK_INDEX: i32 = 1;

/// Brings the namespace's loopback up (the kernel gives it 127.0.0.1 then),
/// by one rtnetlink request, as bubblewrap does: a `nlmsghdr` and an
/// `ifinfomsg` setting `IFF_UP` on device 1, then the kernel's ack read.
fn loopback_up() -> Result<(), String> {
    let fail = |error: rustix::io::Errno| format!("bringing up the jail's loopback: {error}");
    let socket =
        rustix::net::socket(AddressFamily::NETLINK, SocketType::RAW, None).map_err(fail)?;
    let mut request = Vec::with_capacity(32);
    request.extend_from_slice(&32u32.to_ne_bytes()); // nlmsg_len
    request.extend_from_slice(&RTM_NEWLINK.to_ne_bytes()); // nlmsg_type
    request.extend_from_slice(&NLM_F_REQUEST_ACK.to_ne_bytes()); // nlmsg_flags
    request.extend_from_slice(&1u32.to_ne_bytes()); // nlmsg_seq
    request.extend_from_slice(&0u32.to_ne_bytes()); // nlmsg_pid: the kernel fills it
    request.extend_from_slice(&[0, 0]); // ifi_family AF_UNSPEC, padding
    request.extend_from_slice(&0u16.to_ne_bytes()); // ifi_type
    request.extend_from_slice(&LOOPBACK_INDEX.to_ne_bytes()); // ifi_index
    request.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_flags
    request.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_change
    rustix::net::send(&socket, &request, SendFlags::empty()).map_err(fail)?;
    let mut answer = [0u8; 1024];
    let (read, _) = rustix::net::recv(&socket, &mut answer, RecvFlags::empty()).map_err(fail)?;
    // The ack: an NLMSG_ERROR whose error code (after the 16-byte header) is 0.
    let field = |at: usize, width: usize| answer.get(at..at + width).filter(|_| at + width <= read);
    let kind = field(4, 2).map(|bytes| u16::from_ne_bytes([bytes[0], bytes[1]]));
    let code =
        field(16, 4).map(|bytes| i32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
    match (kind, code) {
        (Some(NLMSG_ERROR), Some(0)) => Ok(()),
        (Some(NLMSG_ERROR), Some(code)) => Err(format!(
            "bringing up the jail's loopback: {}",
            std::io::Error::from_raw_os_error(-code)
        )),
        _ => Err("bringing up the jail's loopback: the kernel's answer was not an ack".into()),
    }
}
