//! The TLS provider every HTTP client in Wicket uses: rustls with ring (no C
//! toolchain needed), installed once for the process before any client is
//! built. reqwest (and so rmcp's Streamable HTTP transport) is built without
//! a provider of its own, and would panic on `build()` without one.

/// Installs ring as the process's rustls provider; a second call, or one
/// after something else installed a provider, does nothing.
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Err when another provider was installed first (between the check and here): any one will do.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_builds_after_install() {
        super::install();
        super::install();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
        assert!(reqwest::Client::builder().build().is_ok());
    }
}
