//! `mcp-gateway audit verify FILE…`: checks an audit trail's hash chain.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

/// What `mcp-gateway audit` does.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Checks the chain of an audit trail's files, given oldest first
    /// (`audit.jsonl.2 audit.jsonl.1 audit.jsonl`), and names the first record altered,
    /// removed or out of order. Exit status 0 when it holds, 1 when not, 2 when a file
    /// cannot be read.
    Verify {
        /// The trail's files, oldest first.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
}

/// Runs `command`.
pub(super) fn run(command: &AuditCommand) -> ExitCode {
    match command {
        AuditCommand::Verify { files } => verify(files),
    }
}

fn verify(files: &[PathBuf]) -> ExitCode {
    match crate::audit::verify(files) {
        Ok(v) => {
            let from = match v.starts_mid_chain {
                true => " (the first file continues an older one)",
                false => "",
            };
            println!(
                "good: {} records in {} files, seq {} to {}{from}; {} lost records reported; head {}",
                v.records, v.files, v.first_seq, v.last_seq, v.gaps, v.head
            );
            ExitCode::SUCCESS
        }
        Err(e @ crate::audit::VerifyError::Io { .. }) => {
            eprintln!("gateway: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            println!("broken: {e}");
            ExitCode::from(1)
        }
    }
}

/// Opens the audit log `settings` describe, for a gateway serving HTTP (`http`) or stdio
/// (whose standard output is the protocol's); the exit status when it cannot be opened.
pub(super) fn open(
    settings: &crate::config::AuditSettings,
    http: bool,
) -> Result<crate::audit::AuditLog, u8> {
    if settings.stdout && !http {
        eprintln!("gateway: gateway.audit.stdout: standard output carries the protocol on stdio; give `file`, or serve --http");
        return Err(2);
    }
    settings.open(super::telemetry_sinks()).map_err(|e| {
        let file = settings.file.as_ref().map(|(p, _)| p.display().to_string());
        eprintln!(
            "gateway: gateway.audit: cannot open {}: {e}",
            file.unwrap_or_else(|| "the audit log".into())
        );
        2
    })
}
