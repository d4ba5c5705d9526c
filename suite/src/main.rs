//! The `suite` binary: parse the command line, run, print the error chain once, exit.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = suite::cli::Cli::parse();
    match suite::app::run(&cli).map_err(anyhow::Error::from) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", suite::app::error_text(e.chain()));
            ExitCode::FAILURE
        }
    }
}
