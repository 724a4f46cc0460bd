//! A program on a real pseudo-terminal, driven like a person: util-linux
//! `script` gives it a pty (so `is_terminal()` is true); this side waits
//! for text to appear before it types, as a person reads before answering.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::process::wait_until;

/// A running program on a pty.
pub struct Pty {
    child: Child,
    input: Option<ChildStdin>,
    screen: Arc<Mutex<Vec<u8>>>,
}

impl Pty {
    /// Runs `command` (a shell line for `script -c`) with `env`.
    pub fn spawn(command: &str, env: &[(&str, &std::ffi::OsStr)]) -> Pty {
        let mut script = Command::new("script");
        script
            .args(["-q", "-e", "-c", command, "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (name, value) in env {
            script.env(name, value);
        }
        let mut child = script
            .spawn()
            .expect("util-linux `script` runs the program on a pty");
        let input = child.stdin.take().unwrap();
        let mut output = child.stdout.take().unwrap();
        let screen = Arc::new(Mutex::new(Vec::new()));
        let sink = screen.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = output.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buffer[..n]);
            }
        });
        Pty {
            child,
            input: Some(input),
            screen,
        }
    }

    /// Everything the terminal showed so far, CRLF as LF.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).replace("\r\n", "\n")
    }

    /// The screen a full-screen program drew, as a terminal of `rows` x
    /// `columns` shows it now (escape sequences applied).
    pub fn grid(&self, rows: u16, columns: u16) -> String {
        let mut parser = vt100::Parser::new(rows, columns, 0);
        parser.process(&self.screen.lock().unwrap());
        parser.screen().contents()
    }

    /// Waits until the drawn screen (see [`Pty::grid`]) shows `text`; panics
    /// with it after 20 s.
    pub fn expect_drawn(&self, rows: u16, columns: u16, text: &str) {
        let shown = wait_until(Duration::from_secs(20), || {
            self.grid(rows, columns).contains(text)
        });
        assert!(
            shown,
            "waited for {text:?} on the screen:\n{}",
            self.grid(rows, columns)
        );
    }

    /// Waits until the screen shows `text` `count` times; panics with the
    /// screen after `patience`.
    pub fn expect_nth(&self, text: &str, count: usize, patience: Duration) {
        let shown = wait_until(patience, || self.screen().matches(text).count() >= count);
        assert!(
            shown,
            "waited for {text:?} (x{count}); the screen:\n{}",
            self.screen()
        );
    }

    /// Waits until the screen shows `text`.
    pub fn expect(&self, text: &str) {
        self.expect_nth(text, 1, Duration::from_secs(20));
    }

    /// Types `keys`.
    pub fn send(&mut self, keys: &str) {
        let input = self.input.as_mut().unwrap();
        input.write_all(keys.as_bytes()).unwrap();
        input.flush().unwrap();
    }

    /// Closes the keyboard and waits for the program; its exit code.
    pub fn finish(mut self) -> (Option<i32>, String) {
        drop(self.input.take());
        let status = self.child.wait().unwrap();
        // Let the reader take the last output.
        std::thread::sleep(Duration::from_millis(50));
        let screen = String::from_utf8_lossy(&self.screen.lock().unwrap()).replace("\r\n", "\n");
        (status.code(), screen)
    }
}

impl Drop for Pty {
    /// A test that failed half-way leaves nothing running.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
