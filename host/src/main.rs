//! The `toolhost` command: a thin layer over the `toolhost` library.

mod cli;

fn main() -> std::process::ExitCode {
    // Started as a compile worker, this compiles and exits; otherwise it lets
    // plugins compile in bounded workers (`compile_timeout`, `compile_memory`).
    toolhost::serve_workers();
    // Like other Unix tools, end quietly when the reader of our output goes
    // away (`toolhost tools | head`) instead of failing to print.
    // SAFETY: setting a signal disposition before any thread starts.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    cli::main()
}
