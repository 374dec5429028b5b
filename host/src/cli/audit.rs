//! `toolhost audit`: checking an audit log (`verify`), checking a receipt an
//! MCP result carried (`receipt`, and finding its line in the log), and
//! making the key pair that signs one (`keygen`), so that an operator, or
//! whoever was handed a result, needs no other tool.

use anyhow::Result;
use clap::{Args as ClapArgs, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost::audit::keys::{self, Algorithm, PublicKey};
use toolhost::audit::verify;

#[derive(ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    command: AuditCommand,
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Check that audit log files (oldest first: FILE.1 FILE.2 … FILE) are whole, in order and signed by KEY
    Verify {
        /// The log files, oldest first
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The public key (PEM `PUBLIC KEY`) whose signatures the lines must carry
        #[arg(long, value_name = "PUB")]
        key: PathBuf,
        /// The log's checkpoint (`[audit] checkpoint`, or a copy kept elsewhere): the chain must reach the line
        /// it names, so lines cut from the log's end are caught
        #[arg(long, value_name = "FILE")]
        checkpoint: Option<PathBuf>,
    },
    /// Check a receipt (the JSON of a result's `_meta` "toolhost/receipt", or the whole result) against KEY
    /// (a signed line, or a line with its inclusion proof and signed tree head), and the result it came in
    /// against the receipt, and with --log find its line in the log
    Receipt {
        /// A file holding the receipt, or an MCP result (or JSON-RPC response) carrying one; `-` for stdin
        #[arg(value_name = "RECEIPT")]
        receipt: PathBuf,
        /// The public key (PEM `PUBLIC KEY`) that must have signed it
        #[arg(long, value_name = "PUB")]
        key: PathBuf,
        /// The log files, oldest first, to check and find the receipt's line in
        #[arg(long = "log", value_name = "FILE")]
        logs: Vec<PathBuf>,
    },
    /// Write a new key pair into DIR: audit.key (private, for `[audit] key`) and audit.pub
    Keygen {
        /// The folder to write them into
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// `ed25519` or `ecdsa-p256`
        #[arg(long, default_value = "ed25519")]
        algorithm: Algorithm,
    },
}

pub fn run(args: &Args) -> Result<ExitCode> {
    match &args.command {
        AuditCommand::Verify { files, key, checkpoint } => {
            let key = PublicKey::load(key).map_err(anyhow::Error::msg)?;
            let anchor = match checkpoint {
                Some(path) => match toolhost::audit::checkpoint::read(path, &key) {
                    Ok(anchor) => Some(anchor),
                    Err(why) => {
                        eprintln!("error: the checkpoint {}: {why}", path.display());
                        return Ok(ExitCode::from(1));
                    }
                },
                None => None,
            };
            match verify::verify_to(files, &key, anchor.as_ref()) {
                Ok(summary) => {
                    let mut said = verify::describe(&summary, files);
                    if let Some(anchor) = &anchor {
                        said.push_str(&format!(
                            "; it reaches its checkpoint (seq {}, written {})",
                            anchor.seq, anchor.time
                        ));
                    }
                    println!("{said}");
                    Ok(ExitCode::SUCCESS)
                }
                Err(broken) => {
                    eprintln!("error: {broken}");
                    Ok(ExitCode::from(1))
                }
            }
        }
        AuditCommand::Receipt { receipt, key, logs } => {
            let key = PublicKey::load(key).map_err(anyhow::Error::msg)?;
            let text = read_receipt(receipt)?;
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|err| {
                anyhow::anyhow!("{}: not JSON ({err}): give the receipt object or the result", receipt.display())
            })?;
            let Some(found) = verify::receipt_in(&value, toolhost::mcp::wire::RECEIPT_META) else {
                eprintln!(
                    "error: {}: no receipt in it (neither a signed line nor a result with `_meta` \"{}\"; is                      `[audit] receipt_in_meta = true` set?)",
                    receipt.display(),
                    toolhost::mcp::wire::RECEIPT_META
                );
                return Ok(ExitCode::from(1));
            };
            let checked = match verify::check_receipt(found, &key) {
                Ok(checked) => checked,
                Err(why) => {
                    eprintln!("error: {}: the receipt does not check: {why}", receipt.display());
                    return Ok(ExitCode::from(1));
                }
            };
            let mut said = format!(
                "{}: valid receipt, seq {}, line sha256 {}, after {}, signed by {}",
                receipt.display(),
                checked.seq,
                checked.digest,
                checked.prev,
                key.fingerprint()
            );
            if let Some(head) = &checked.head {
                said.push_str(&format!(
                    " (its tree head, seq {}, over {} line(s), root {}, signed {})",
                    head.seq, head.tree_size, head.root, head.time
                ));
            }
            // Given the result that carried it, the receipt must be that result's.
            match verify::result_with(&value) {
                Some(result) => match toolhost::audit::result::check(verify::receipt_line(found), result) {
                    Ok(()) => said.push_str("; the result is the one it was signed for"),
                    Err(why) => {
                        eprintln!("error: {}: {why}", receipt.display());
                        return Ok(ExitCode::from(1));
                    }
                },
                None => said.push_str(
                    "; no result was given, so only the receipt itself was checked (give the whole result to check \
                     that it is this receipt's)",
                ),
            }
            if !logs.is_empty() {
                match verify::locate(&checked, logs, &key) {
                    Ok((file, line)) => said.push_str(&format!("; it is line {line} of {}", file.display())),
                    Err(why) => {
                        eprintln!("error: {}: {why}", receipt.display());
                        return Ok(ExitCode::from(1));
                    }
                }
            }
            println!("{said}");
            Ok(ExitCode::SUCCESS)
        }
        AuditCommand::Keygen { out, algorithm } => {
            let (private, public) = keys::keygen(out, *algorithm).map_err(anyhow::Error::msg)?;
            println!(
                "wrote {} (keep it private; `[audit] key` names it) and {} (for `toolhost audit verify --key`)",
                private.display(),
                public.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The receipt file's text (a regular file, bounded like a log line), or stdin's for `-`.
fn read_receipt(path: &std::path::Path) -> Result<String> {
    let limit = verify::MAX_LINE as u64 + 64 * 1024;
    if path.as_os_str() == "-" {
        use std::io::Read;
        let mut text = String::new();
        std::io::stdin().take(limit + 1).read_to_string(&mut text)?;
        anyhow::ensure!(text.len() as u64 <= limit, "the receipt on stdin is larger than {limit} bytes");
        return Ok(text);
    }
    toolhost::readfile::read_regular_text(path, limit).map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))
}
