//! The `toolhost` command: a thin layer over the `toolhost` library.

mod cli;

fn main() -> std::process::ExitCode {
    // Like other Unix tools, end quietly when the reader of our output goes
    // away (`toolhost tools | head`) instead of failing to print.
    // SAFETY: setting a signal disposition before any thread starts.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    cli::main()
}
