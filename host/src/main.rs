//! The `toolhost` command: a thin layer over the `toolhost` library.

mod cli;

fn main() -> std::process::ExitCode {
    // Started as a compile worker, this compiles and exits; otherwise it lets
    // plugins compile in bounded workers (`compile_timeout`, `compile_memory`).
    toolhost::serve_workers();
    // Like other Unix tools, end quietly when the reader of our output goes
    // away (`toolhost tools | head`) instead of failing to print. SIGPIPE
    // itself stays ignored (Rust's default): a child that closes its input
    // (a stdio MCP server, a compile worker) is a failed write to it, never
    // the end of toolhost; only printing to a closed stdout ends it, with the
    // status a SIGPIPE would have given.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload.downcast_ref::<String>().map(String::as_str).or(payload.downcast_ref::<&str>().copied());
        if message
            .is_some_and(|message| message.starts_with("failed printing to std") && message.contains("Broken pipe"))
        {
            std::process::exit(141);
        }
        report(info)
    }));
    cli::main()
}
