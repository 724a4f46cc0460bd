//! What a client asked for: a [`Target`], its [`Host`] read strictly from
//! the client's text (a name in its ASCII form and the form a person
//! reads, or an IP literal), and the protocol it came by, [`Via`].

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::{Error, Result};
use crate::{HOST_MAX_BYTES, LABEL_MAX_BYTES};

/// What the client asked for: a host, a port, and how it asked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// The host as asked.
    pub host: Host,
    /// The port, 1 to 65535.
    pub port: u16,
    /// The protocol the client asked by.
    pub via: Via,
}

/// The protocol a client asked for its host by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Via {
    /// An HTTP request in absolute-form (`GET http://host/path HTTP/1.1`),
    /// forwarded in origin-form with `Connection: close`: one request per
    /// client connection, since the response's `Connection: close` makes
    /// the client open a new connection (asked about afresh) for its next.
    Http,
    /// HTTP `CONNECT host:port`, a tunnel.
    Connect,
    /// SOCKS5 `CONNECT`, a tunnel.
    Socks5,
}

/// A host as asked: a name, or an IP literal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// A name, lowercased.
    Name {
        /// The name's ASCII form (punycode for non-ASCII labels): what DNS
        /// is asked and rules match.
        ascii: String,
        /// The name as a person should read it: non-ASCII labels decoded
        /// from punycode. It may hold any Unicode the IDNA rules allow;
        /// whoever prints it filters it for the terminal.
        shown: String,
    },
    /// An IPv4 or IPv6 literal (`CONNECT 93.184.216.34:443`,
    /// `http://[2001:db8::1]/`, SOCKS5 address types 1 and 4).
    Ip(IpAddr),
}

impl Host {
    /// Reads a host as a client wrote it (without the brackets of an IPv6
    /// literal in a URL): an IPv4 dotted quad or an IPv6 address is
    /// [`Host::Ip`]; anything else must be a host name: letters, digits,
    /// `-`, `_` and `.` in labels of 1 to 63 bytes, at most 253 bytes in
    /// all (one trailing `.` is dropped), or non-ASCII text that IDNA
    /// (UTS #46) maps to such a name. A name whose last label is a number
    /// (`127.1`, `0x7f000001`) is refused: resolvers read those as IPv4
    /// addresses, which would put an address where a name is shown.
    pub fn parse(text: &str) -> Result<Self> {
        if let Ok(ip) = text.parse::<Ipv4Addr>() {
            return Ok(Self::Ip(IpAddr::V4(ip)));
        }
        if text.contains(':') {
            return match text.parse::<Ipv6Addr>() {
                Ok(ip) => Ok(Self::Ip(IpAddr::V6(ip))),
                Err(_) => Err(Error::bad_host(
                    text,
                    "contains ':' but is not an IPv6 address",
                )),
            };
        }
        let name = text.strip_suffix('.').unwrap_or(text);
        if name.is_empty() {
            return Err(Error::bad_host(text, "is empty"));
        }
        if let Some(bad) = name.chars().find(|c| !name_char(*c)) {
            return Err(Error::bad_host(
                text,
                format!("contains {bad:?}, which no host name has"),
            ));
        }
        let ascii = idna::domain_to_ascii(name)
            .map_err(|_| Error::bad_host(text, "is not a host name IDNA (UTS #46) accepts"))?;
        check_ascii_name(text, &ascii)?;
        let shown = if has_punycode_label(&ascii) {
            // IDNA accepted the ASCII form, so decoding it back cannot
            // fail in a way that matters; should it, the ASCII form is
            // still the truth about where the connection goes.
            let (unicode, decoded) = idna::domain_to_unicode(&ascii);
            match decoded {
                Ok(()) => unicode,
                Err(_) => ascii.clone(),
            }
        } else {
            ascii.clone()
        };
        Ok(Self::Name { ascii, shown })
    }

    /// The host's ASCII form, as rules and grants key it: a name's
    /// punycode form, or the address (an IPv6 one without brackets).
    pub fn ascii(&self) -> String {
        match self {
            Self::Name { ascii, .. } => ascii.clone(),
            Self::Ip(ip) => ip.to_string(),
        }
    }

    /// Whether a person should see both forms of the name: its shown form
    /// has non-ASCII characters, or a label of its ASCII form is punycode
    /// (`xn--`), so the two forms differ and either may mislead alone.
    pub fn is_mixed(&self) -> bool {
        match self {
            Self::Name { ascii, shown } => !shown.is_ascii() || has_punycode_label(ascii),
            Self::Ip(_) => false,
        }
    }
}

impl fmt::Display for Host {
    /// The ASCII form, an IPv6 address in brackets as in a URL.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name { ascii, .. } => f.write_str(ascii),
            Self::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            Self::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

impl fmt::Display for Target {
    /// `host:port` in ASCII, `[v6]:port` for an IPv6 literal.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// Reads `host:port` or `[v6]:port`, as in `CONNECT` and in a URL's
/// authority. Without a port, `default_port`, or an error if there is none.
pub fn parse_authority(text: &str, default_port: Option<u16>) -> Result<(Host, u16)> {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else {
            return Err(Error::bad_host(text, "opens '[' but does not close it"));
        };
        let ip = inside
            .parse::<Ipv6Addr>()
            .map_err(|_| Error::bad_host(inside, "is in brackets but is not an IPv6 address"))?;
        let port = match after {
            "" => None,
            _ => match after.strip_prefix(':') {
                Some(port) => Some(port),
                None => return Err(Error::bad_host(text, "has text after its ']'")),
            },
        };
        (Host::Ip(IpAddr::V6(ip)), port)
    } else {
        match text.split_once(':') {
            Some((host, port)) => {
                if port.contains(':') {
                    return Err(Error::bad_host(
                        text,
                        "has more than one ':'; an IPv6 address goes in brackets, [2001:db8::1]:443",
                    ));
                }
                (Host::parse(host)?, Some(port))
            }
            None => (Host::parse(text)?, None),
        }
    };
    let port = match (port, default_port) {
        (Some(port), _) => parse_port(port)?,
        (None, Some(port)) => port,
        (None, None) => return Err(Error::bad_port("")),
    };
    Ok((host, port))
}

/// A port as decimal digits only (no sign, no spaces), 1 to 65535.
pub fn parse_port(text: &str) -> Result<u16> {
    // Five digits is 99999; more is no port, whatever its leading zeros.
    let digits = !text.is_empty() && text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<u16>() {
        Ok(port) if digits && port != 0 => Ok(port),
        _ => Err(Error::bad_port(text)),
    }
}

/// A character a host name may be written with: ASCII letters, digits,
/// `-`, `_`, `.`, or non-ASCII text for IDNA to judge (control characters
/// never).
fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') || (!c.is_ascii() && !c.is_control())
}

/// Checks a name's ASCII form, as IDNA made it: IDNA maps some non-ASCII
/// characters onto ASCII ones a name may not have (a fullwidth `／` becomes
/// `/`), so the characters are checked again here, with the lengths.
fn check_ascii_name(text: &str, ascii: &str) -> Result<()> {
    if ascii.len() > HOST_MAX_BYTES {
        return Err(Error::bad_host(
            text,
            format!(
                "is {} bytes long in ASCII; a host name has at most {HOST_MAX_BYTES}",
                ascii.len()
            ),
        ));
    }
    if let Some(bad) = ascii
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(Error::bad_host(
            text,
            format!("becomes {bad:?} in ASCII, which no host name has"),
        ));
    }
    let mut last = "";
    for label in ascii.split('.') {
        if label.is_empty() {
            return Err(Error::bad_host(
                text,
                "has an empty label ('..', or a leading '.')",
            ));
        }
        if label.len() > LABEL_MAX_BYTES {
            return Err(Error::bad_host(
                text,
                format!("has a label over {LABEL_MAX_BYTES} bytes"),
            ));
        }
        last = label;
    }
    if numeric_label(last) {
        return Err(Error::bad_host(
            text,
            "ends in a number, which resolvers read as an IPv4 address; write an address as a dotted quad (127.0.0.1)",
        ));
    }
    Ok(())
}

/// Whether a label is a number an IPv4 parser would take: decimal, octal
/// or `0x` hexadecimal.
fn numeric_label(label: &str) -> bool {
    let hex = label
        .strip_prefix("0x")
        .or_else(|| label.strip_prefix("0X"));
    match hex {
        Some(digits) => digits.bytes().all(|b| b.is_ascii_hexdigit()),
        None => label.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// Whether any label of an ASCII name is punycode.
fn has_punycode_label(ascii: &str) -> bool {
    ascii.split('.').any(|label| label.starts_with("xn--"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(ascii: &str, shown: &str) -> Host {
        Host::Name {
            ascii: ascii.into(),
            shown: shown.into(),
        }
    }

    #[test]
    fn a_unicode_name_is_its_punycode_for_dns_and_itself_for_a_person() {
        let host = Host::parse("bücher.example").unwrap();
        assert_eq!(host, name("xn--bcher-kva.example", "bücher.example"));
        assert!(host.is_mixed());
        assert_eq!(host.ascii(), "xn--bcher-kva.example");
    }

    #[test]
    fn a_punycode_name_is_shown_decoded_and_is_mixed() {
        let host = Host::parse("XN--BCHER-KVA.example").unwrap();
        assert_eq!(host, name("xn--bcher-kva.example", "bücher.example"));
        assert!(host.is_mixed());
    }

    #[test]
    fn an_ascii_name_is_lowercased_and_not_mixed() {
        let host = Host::parse("PyPI.org.").unwrap();
        assert_eq!(host, name("pypi.org", "pypi.org"));
        assert!(!host.is_mixed());
        assert_eq!(
            Host::parse("_dmarc.my-host.example").unwrap().ascii(),
            "_dmarc.my-host.example"
        );
    }

    #[test]
    fn fullwidth_text_that_maps_to_plain_ascii_is_that_name() {
        let host = Host::parse("ＥＸＡＭＰＬＥ.com").unwrap();
        assert_eq!(host, name("example.com", "example.com"));
        assert!(!host.is_mixed());
    }

    #[test]
    fn ip_literals_are_addresses_not_names() {
        assert_eq!(
            Host::parse("127.0.0.1").unwrap(),
            Host::Ip("127.0.0.1".parse().unwrap())
        );
        assert_eq!(
            Host::parse("::1").unwrap(),
            Host::Ip("::1".parse().unwrap())
        );
        assert!(!Host::parse("::1").unwrap().is_mixed());
    }

    #[test]
    fn characters_no_host_name_has_are_refused() {
        for text in [
            "user@example.com",
            "example.com/path",
            "exa mple.com",
            "example.com\r\nX: y",
            "exa\0mple",
            "example%2ecom",
            "example.com\u{85}",
            "",
            ".",
            "a..b",
            ".example.com",
        ] {
            let error = Host::parse(text).unwrap_err();
            assert!(matches!(error, Error::BadHost { .. }), "{text:?}: {error}");
        }
    }

    #[test]
    fn a_non_ascii_character_that_idna_maps_to_a_slash_is_refused() {
        // U+FF0F FULLWIDTH SOLIDUS maps to '/' under UTS #46.
        let error = Host::parse("evil.com／x.example").unwrap_err();
        assert!(error.to_string().contains("'/'"), "{error}");
    }

    #[test]
    fn invalid_punycode_and_idna_disallowed_text_are_refused() {
        assert!(Host::parse("xn--zz-.example").is_err());
        assert!(Host::parse("a\u{202e}b.example").is_err());
    }

    #[test]
    fn names_over_253_bytes_or_labels_over_63_are_refused() {
        let label = "a".repeat(63);
        let fits = [label.as_str(); 4].join(".");
        assert_eq!(fits.len(), 255);
        assert!(Host::parse(&fits[2..]).is_ok(), "253 bytes fit");
        let error = Host::parse(&fits[1..]).unwrap_err();
        assert!(error.to_string().contains("254 bytes"), "{error}");
        assert!(Host::parse(&format!("{}.example", "a".repeat(64))).is_err());
    }

    #[test]
    fn names_ending_in_a_number_are_refused_as_disguised_addresses() {
        for text in [
            "127.1",
            "2130706433",
            "0x7f000001",
            "10.0.0.0x1",
            "１２７.０.０.１",
        ] {
            let error = Host::parse(text).unwrap_err();
            assert!(
                error.to_string().contains("ends in a number"),
                "{text}: {error}"
            );
        }
        assert!(Host::parse("1.example").is_ok());
    }

    #[test]
    fn authorities_read_host_and_port() {
        assert_eq!(
            parse_authority("example.com:443", None).unwrap(),
            (name("example.com", "example.com"), 443)
        );
        assert_eq!(
            parse_authority("[::1]:8080", None).unwrap(),
            (Host::Ip("::1".parse().unwrap()), 8080)
        );
        assert_eq!(
            parse_authority("[2001:db8::1]", Some(80)).unwrap(),
            (Host::Ip("2001:db8::1".parse().unwrap()), 80)
        );
        assert_eq!(parse_authority("example.com", Some(80)).unwrap().1, 80);
    }

    #[test]
    fn bad_authorities_are_refused() {
        for text in [
            "example.com",
            "example.com:",
            "example.com:0",
            "example.com:65536",
            "example.com:+80",
            "example.com:80a",
            "example.com:123456",
            "::1:443",
            "[::1",
            "[::1]443",
            "[127.0.0.1]:80",
            "[fe80::1%eth0]:80",
        ] {
            assert!(parse_authority(text, None).is_err(), "{text}");
        }
        assert_eq!(parse_port("65535").unwrap(), 65535);
        assert_eq!(parse_port("00080").unwrap(), 80);
    }

    #[test]
    fn targets_display_in_ascii_with_ipv6_in_brackets() {
        let target = Target {
            host: Host::parse("bücher.example").unwrap(),
            port: 443,
            via: Via::Connect,
        };
        assert_eq!(target.to_string(), "xn--bcher-kva.example:443");
        let target = Target {
            host: Host::parse("::1").unwrap(),
            port: 80,
            via: Via::Http,
        };
        assert_eq!(target.to_string(), "[::1]:80");
    }
}
