//! SOCKS5 (RFC 1928), the part a proxy for `ALL_PROXY=socks5h://` needs:
//! no authentication, `CONNECT` only, to an IPv4 address, a name (which
//! Wicket resolves: the `h` of `socks5h`) or an IPv6 address.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};

use crate::error::{Error, Result};
use crate::host::{Host, Target, Via};
use crate::intake::Intake;

/// The first byte of every SOCKS5 message, and how a SOCKS5 client's
/// connection is told from an HTTP one.
pub(crate) const VERSION: u8 = 5;

/// The method "no authentication required".
const NO_AUTHENTICATION: u8 = 0x00;
/// The method reply "no acceptable methods".
const NO_ACCEPTABLE_METHOD: u8 = 0xff;
/// The command `CONNECT`.
const CONNECT: u8 = 1;
/// The address types.
const IPV4: u8 = 1;
const DOMAIN_NAME: u8 = 3;
const IPV6: u8 = 4;

/// A reply's code (RFC 1928 §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reply {
    /// Connected.
    Succeeded,
    /// A request Wicket's proxy could not read.
    GeneralFailure,
    /// Refused by the gate: "connection not allowed by ruleset".
    NotAllowed,
    /// The host's network cannot be reached.
    NetworkUnreachable,
    /// The name did not resolve, or the host cannot be reached.
    HostUnreachable,
    /// The host refused, or the connect failed otherwise.
    ConnectionRefused,
    /// A command other than `CONNECT`.
    CommandNotSupported,
    /// An address type other than 1, 3 and 4.
    AddressTypeNotSupported,
}

impl Reply {
    fn code(self) -> u8 {
        match self {
            Self::Succeeded => 0,
            Self::GeneralFailure => 1,
            Self::NotAllowed => 2,
            Self::NetworkUnreachable => 3,
            Self::HostUnreachable => 4,
            Self::ConnectionRefused => 5,
            Self::CommandNotSupported => 7,
            Self::AddressTypeNotSupported => 8,
        }
    }

    /// The reply for a connect that failed so.
    pub(crate) fn for_connect_error(kind: std::io::ErrorKind) -> Self {
        use std::io::ErrorKind;
        match kind {
            ErrorKind::NetworkUnreachable => Self::NetworkUnreachable,
            ErrorKind::HostUnreachable | ErrorKind::TimedOut => Self::HostUnreachable,
            _ => Self::ConnectionRefused,
        }
    }
}

/// A reply: `code`, and the address the proxy's socket to the host is
/// bound to (`0.0.0.0:0` when there is none).
pub(crate) fn reply(code: Reply, bound: Option<SocketAddr>) -> Vec<u8> {
    let bound = bound.unwrap_or_else(|| SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
    let mut bytes = vec![VERSION, code.code(), 0];
    match bound.ip() {
        IpAddr::V4(ip) => {
            bytes.push(IPV4);
            bytes.extend_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            bytes.push(IPV6);
            bytes.extend_from_slice(&ip.octets());
        }
    }
    bytes.extend_from_slice(&bound.port().to_be_bytes());
    bytes
}

/// Reads a SOCKS5 greeting, accepts "no authentication", and reads the
/// `CONNECT` request. A greeting without that method gets `05 FF`; a
/// request this proxy does not serve gets its failure reply; a wrong
/// version gets nothing. Each is an error, after which the connection is
/// closed.
pub(crate) fn request(intake: &mut Intake<'_>, client: &TcpStream) -> Result<Target> {
    let [version, method_count] = take_array(intake)?;
    if version != VERSION {
        return Err(Error::Socks(format!("version {version}, not 5")));
    }
    let methods = intake.take(usize::from(method_count))?;
    if !methods.contains(&NO_AUTHENTICATION) {
        send(client, &[VERSION, NO_ACCEPTABLE_METHOD]);
        return Err(Error::Socks(
            "the client offers no method without authentication, the only one Wicket's proxy takes"
                .into(),
        ));
    }
    send(client, &[VERSION, NO_AUTHENTICATION]);
    let [version, command, _reserved, address_type] = take_array(intake)?;
    if version != VERSION {
        return Err(Error::Socks(format!("request of version {version}, not 5")));
    }
    if command != CONNECT {
        send(client, &reply(Reply::CommandNotSupported, None));
        return Err(Error::Socks(format!(
            "command {command}; Wicket's proxy serves only CONNECT (1)"
        )));
    }
    let host = match read_host(intake, address_type) {
        Ok(host) => host,
        Err(failure) => {
            send(client, &reply(failure.reply, None));
            return Err(failure.error);
        }
    };
    let port = u16::from_be_bytes(take_array(intake)?);
    if port == 0 {
        send(client, &reply(Reply::GeneralFailure, None));
        return Err(Error::bad_port("0"));
    }
    Ok(Target {
        host,
        port,
        via: Via::Socks5,
    })
}

/// A request Wicket's proxy will not serve, with the reply that says so.
struct Failure {
    error: Error,
    reply: Reply,
}

impl From<Error> for Failure {
    /// An address that could not be read or is no host: general failure
    /// (a client that has gone, or whose time is up, never reads it).
    fn from(error: Error) -> Self {
        Self {
            error,
            reply: Reply::GeneralFailure,
        }
    }
}

/// The address of a request, by its type.
fn read_host(intake: &mut Intake<'_>, address_type: u8) -> Result<Host, Failure> {
    match address_type {
        IPV4 => Ok(Host::Ip(IpAddr::V4(Ipv4Addr::from(take_array::<4>(
            intake,
        )?)))),
        IPV6 => Ok(Host::Ip(IpAddr::V6(Ipv6Addr::from(take_array::<16>(
            intake,
        )?)))),
        DOMAIN_NAME => {
            let [length] = take_array(intake)?;
            let name = intake.take(usize::from(length))?;
            let Ok(name) = std::str::from_utf8(name) else {
                return Err(Error::bad_host(&String::from_utf8_lossy(name), "is not UTF-8").into());
            };
            Ok(Host::parse(name)?)
        }
        other => Err(Failure {
            error: Error::Socks(format!(
                "address type {other}; Wicket's proxy reads 1 (IPv4), 3 (name) and 4 (IPv6)"
            )),
            reply: Reply::AddressTypeNotSupported,
        }),
    }
}

/// The next `N` bytes.
fn take_array<const N: usize>(intake: &mut Intake<'_>) -> Result<[u8; N]> {
    let mut bytes = [0; N];
    bytes.copy_from_slice(intake.take(N)?);
    Ok(bytes)
}

/// Sends bytes of the negotiation. A client that has gone is not told; the
/// next read finds that it has gone.
fn send(mut client: &TcpStream, bytes: &[u8]) {
    // A client that has gone is not told: the next read finds it gone.
    let _ = client.write_all(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_carry_the_code_and_the_bound_address() {
        assert_eq!(
            reply(Reply::Succeeded, Some("127.0.0.1:8080".parse().unwrap())),
            [5, 0, 0, 1, 127, 0, 0, 1, 0x1f, 0x90]
        );
        assert_eq!(
            reply(Reply::NotAllowed, None),
            [5, 2, 0, 1, 0, 0, 0, 0, 0, 0]
        );
        let v6 = reply(Reply::Succeeded, Some("[::1]:1".parse().unwrap()));
        assert_eq!(v6.len(), 4 + 16 + 2);
        assert_eq!(v6[3], IPV6);
    }

    #[test]
    fn connect_errors_map_to_their_replies() {
        use std::io::ErrorKind;
        assert_eq!(
            Reply::for_connect_error(ErrorKind::ConnectionRefused).code(),
            5
        );
        assert_eq!(Reply::for_connect_error(ErrorKind::TimedOut).code(), 4);
        assert_eq!(
            Reply::for_connect_error(ErrorKind::NetworkUnreachable).code(),
            3
        );
    }
}
