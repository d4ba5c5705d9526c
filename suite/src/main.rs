//! The `suite` binary: parse the command line, run, print the error chain once, exit with the error's status
//! (`app::Error::exit_code`: 2 bad arguments, 3 a results folder refused the run, 1 anything else).

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = suite::cli::Cli::parse();
    match suite::app::run(&cli) {
        Ok(code) => code,
        Err(e) => {
            let (text, code) = suite::app::error_report(e);
            eprintln!("{text}");
            ExitCode::from(code)
        }
    }
}
