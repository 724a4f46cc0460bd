//! Ids. Every card, question and call id has 64 random bits from the
//! kernel, so two are never the same within a session's life (a 16-bit
//! part repeated within a few hundred cards); session ids lead with the
//! time so they sort by age.

/// 64 random bits from the kernel's generator.
pub fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    let mut filled = 0;
    while filled < bytes.len() {
        match rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            // No getrandom: the clock and the pid are still unique enough
            // within one process's life, with the counter below.
            Err(_) => return fallback(),
        }
    }
    u64::from_le_bytes(bytes)
}

fn fallback() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32) ^ COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// `PREFIX-` and 16 hex digits: `card-9f2c…`, `q-…`, `call-…`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}-{:016x}", random_u64())
}

/// `n` hex digits of randomness (a token is 64).
pub fn random_hex(n: usize) -> String {
    let mut out = String::with_capacity(n + 16);
    while out.len() < n {
        out.push_str(&format!("{:016x}", random_u64()));
    }
    out.truncate(n);
    out
}

/// A session id: the UTC time (`YYYYMMDD-HHMMSS`) and 8 random hex digits.
pub fn session_id(unix_seconds: i64) -> String {
    let days = unix_seconds.div_euclid(86_400);
    let seconds = unix_seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}-{}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        random_hex(8)
    )
}

/// Days since 1970-01-01 to a (year, month, day), Howard Hinnant's algorithm.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_do_not_repeat_and_sessions_sort_by_time() {
        let ids: std::collections::HashSet<String> = (0..100_000).map(|_| new_id("card")).collect();
        assert_eq!(ids.len(), 100_000);
        assert!(new_id("q").starts_with("q-"));
        assert_eq!(new_id("q").len(), 18);
        assert!(session_id(0).starts_with("19700101-000000-"));
        assert!(session_id(1_796_300_000).starts_with("20261203-121320-"));
        assert_eq!(random_hex(64).len(), 64);
    }
}
