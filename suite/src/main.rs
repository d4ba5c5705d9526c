//! The `suite` binary: parse the command line, run, print the error chain once, exit with the error's status
//! (`app::Error::exit_code`: 2 bad arguments, 3 a results folder refused the run, 1 anything else).

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = suite::cli::Cli::parse();
    match suite::app::run(&cli) {
        Ok(code) => code,
        Err(e) => {
            let code = e.exit_code();
            eprintln!("error: {}", suite::app::error_text(anyhow::Error::from(e).chain()));
            ExitCode::from(code)
        }
    }
}
