//! `wicket-launch`: the sandbox launcher's stages and probe, and nothing
//! else (see `wicket_os::launch`). The `wicket` binary starts every command
//! through it when it lies beside `wicket`; it links only `wicket-os`, so
//! starting it is a fraction of starting `wicket`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match wicket_os::launch::dispatch(&args) {
        Some(code) => ExitCode::from(code),
        None => {
            eprintln!(
                "wicket-launch is Wicket's sandbox launcher; `wicket` starts it. Run `wicket` instead."
            );
            ExitCode::from(2)
        }
    }
}
