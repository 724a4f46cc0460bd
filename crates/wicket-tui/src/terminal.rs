//! The terminal: raw mode, the alternate screen, bracketed paste and the
//! mouse wheel, put back however the UI ends — a return, a panic, SIGTERM
//! or SIGHUP. One thread owns the keyboard, so throwing away what was typed
//! before a card was drawn is ordered with the keys that follow.

use std::io::{IsTerminal, Write, stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use ratatui::crossterm::event::{
    self, DisableBracketedPaste, EnableBracketedPaste, Event, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
    supports_keyboard_enhancement,
};
use ratatui::crossterm::{Command, cursor, execute};
use ratatui::{DefaultTerminal, Terminal, backend::CrosstermBackend};

static ACTIVE: AtomicBool = AtomicBool::new(false);
static ENHANCED: AtomicBool = AtomicBool::new(false);

/// Wheel events only (crossterm's mouse capture also reports every motion).
struct EnableWheel;

impl Command for EnableWheel {
    fn write_ansi(&self, out: &mut impl std::fmt::Write) -> std::fmt::Result {
        out.write_str("\x1b[?1000h\x1b[?1006h")
    }
}

struct DisableWheel;

impl Command for DisableWheel {
    fn write_ansi(&self, out: &mut impl std::fmt::Write) -> std::fmt::Result {
        out.write_str("\x1b[?1006l\x1b[?1000l")
    }
}

/// Takes the terminal: returns it and whether it reports Shift+Enter apart
/// from Enter (the kitty keyboard protocol).
pub fn enter() -> std::io::Result<(DefaultTerminal, bool)> {
    // Asked before the input thread exists: the answer is read from the keyboard.
    let enhanced = supports_keyboard_enhancement().unwrap_or(false);
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    execute!(
        stdout(),
        EnterAlternateScreen,
        EnableBracketedPaste,
        EnableWheel
    )?;
    if enhanced {
        execute!(
            stdout(),
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
        ENHANCED.store(true, Ordering::SeqCst);
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // Put the terminal back first, so the message is readable.
        restore();
        previous(info);
    }));
    Ok((Terminal::new(CrosstermBackend::new(stdout()))?, enhanced))
}

/// Puts the terminal back as it was; safe to call more than once.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    // Restoring the terminal on the way out: each step is tried whatever
    // the one before did, and a terminal gone has nothing to restore.
    let mut out = stdout();
    let mut steps = Vec::new();
    if ENHANCED.swap(false, Ordering::SeqCst) {
        steps.push(execute!(out, PopKeyboardEnhancementFlags));
    }
    steps.push(execute!(out, DisableWheel, DisableBracketedPaste));
    steps.push(disable_raw_mode());
    steps.push(execute!(out, LeaveAlternateScreen, cursor::Show));
    steps.push(out.flush());
    drop(steps);
}

/// Restores the terminal when dropped.
pub struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// What the input thread sends.
pub enum Input {
    /// A key, a paste, the mouse, a resize.
    Event(Event),
    /// Everything typed before flush `epoch` was asked for is gone.
    Flushed(u64),
    /// The keyboard is gone.
    Closed,
}

/// Throws away what is typed but not read: the kernel's queue, then what
/// crossterm already read.
fn flush_typed_ahead() {
    use rustix::termios::{QueueSelector, tcflush};
    if std::io::stdin().is_terminal() {
        // Typed-ahead keys are dropped best effort: a terminal that refuses the flush still gets the card's own confirmation.
        let _ = tcflush(std::io::stdin(), QueueSelector::IFlush);
    } else if let Ok(tty) = std::fs::File::open("/dev/tty") {
        // As above: best effort.
        let _ = tcflush(&tty, QueueSelector::IFlush);
    }
    while event::poll(Duration::ZERO).unwrap_or(false) {
        // Read only to be dropped: what was typed before the card.
        let _ = event::read();
    }
}

/// Starts the thread that owns the keyboard. `flushes` asks it to throw
/// away what was typed; it answers in order with the keys on `to`.
pub fn input_thread(
    to: mpsc::Sender<crate::Message>,
    flushes: mpsc::Receiver<u64>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("wicket-tui-input".into())
        .spawn(move || {
            loop {
                while let Ok(epoch) = flushes.try_recv() {
                    flush_typed_ahead();
                    if to
                        .send(crate::Message::Input(Input::Flushed(epoch)))
                        .is_err()
                    {
                        return;
                    }
                }
                match event::poll(Duration::from_millis(20)) {
                    Ok(true) => match event::read() {
                        Ok(read) => {
                            if to.send(crate::Message::Input(Input::Event(read))).is_err() {
                                return;
                            }
                        }
                        Err(_) => {
                            // The UI loop has ended: no one is left to tell.
                            let _ = to.send(crate::Message::Input(Input::Closed));
                            return;
                        }
                    },
                    Ok(false) => {}
                    Err(_) => {
                        // The UI loop has ended: no one is left to tell.
                        let _ = to.send(crate::Message::Input(Input::Closed));
                        return;
                    }
                }
            }
        })?;
    Ok(())
}
