//! `toolhost audit`: checking an audit log (`verify`) and making the key pair
//! that signs one (`keygen`), so that an operator needs no other tool.

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
        AuditCommand::Verify { files, key } => {
            let key = PublicKey::load(key).map_err(anyhow::Error::msg)?;
            match verify::verify(files, &key) {
                Ok(summary) => {
                    println!("{}", verify::describe(&summary, files));
                    Ok(ExitCode::SUCCESS)
                }
                Err(broken) => {
                    eprintln!("error: {broken}");
                    Ok(ExitCode::from(1))
                }
            }
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
