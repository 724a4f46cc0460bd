//! Many connections at once, each on its own thread.

use std::sync::{Arc, Barrier};

use wicket_net::Outcome;

use crate::harness::{Proxy, Rules, Upstream, exchange};

#[test]
fn a_hundred_concurrent_connections_all_complete() {
    const CONNECTIONS: usize = 100;
    let body: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
    let upstream = Upstream::start(&body);
    let proxy = Arc::new(Proxy::start(Rules::allowing(&["localhost"])));
    let start = Arc::new(Barrier::new(CONNECTIONS));
    let port = upstream.port();
    let clients: Vec<_> = (0..CONNECTIONS)
        .map(|n| {
            let (proxy, start) = (proxy.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let request = format!("GET http://localhost:{port}/{n} HTTP/1.1\r\n\r\n");
                exchange(&proxy, request.as_bytes())
            })
        })
        .collect();
    for client in clients {
        let response = client.join().unwrap();
        assert!(response.ends_with(&body), "every body arrives whole");
    }
    let closed = proxy.closed(CONNECTIONS);
    assert!(closed.iter().all(|c| c.outcome == Outcome::Relayed));
    let served = upstream.served(CONNECTIONS);
    let total = |counts: Vec<u64>| counts.into_iter().sum::<u64>();
    assert_eq!(
        total(closed.iter().map(|c| c.received).collect()),
        total(served.iter().map(|s| s.sent).collect())
    );
    assert_eq!(
        total(closed.iter().map(|c| c.sent).collect()),
        total(served.iter().map(|s| s.received).collect())
    );
}
