//! The `toolhost` command: a thin layer over the `toolhost` library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
