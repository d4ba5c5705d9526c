//! Every `suite` command quoted in README.md and docs/ parses (issue 35): a `suite run` is run with `--dry-run`,
//! which parses its experiment and flags exactly as the run would and plans it on a part (no GPU), and must exit 0;
//! every other command must parse with the suite's own command line. A command is taken from inline code and from
//! fenced blocks: `suite` (or a path ending in it, `target/release/suite`) followed by its global options and a
//! subcommand, up to the end of the span or line (a `#` comment, `|`, `;` or `&&` ends it, and so does a word ending
//! in `,` `;` `)` `.` or `:`, the end of a clause in prose). Syntax summaries with placeholders (`<experiment>`,
//! `[--out DIR]`, `...`, `$VAR`, an upper-case word such as `DIR` or `N`) are templates, not commands, and are left
//! out. A fenced line that begins with the command (after `VAR=value` words) is a command to type and must parse
//! whole; elsewhere (a code span in prose, a fenced tree of files) a command may be named without the arguments it
//! requires (`suite plot`, `suite bench launch --baseline`), but every word it does give must parse.

#[allow(dead_code)]
mod common;

use std::path::{Path, PathBuf};

use common::markdown::{code_spans, without_fences};
use common::suite_without_gpu;

/// Documents whose commands are not checked yet, each with why; remove one once its commands parse.
const NOT_YET_COVERED: [(&str, &str); 0] = [];

/// The subcommands of `suite`.
const SUBCOMMANDS: [&str; 11] =
    ["info", "kernels", "run", "experiments", "bench", "occupancy", "merge", "status", "compare", "plot", "help"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// README.md and docs/*.md, relative to the root, less [`NOT_YET_COVERED`].
fn documents() -> Vec<PathBuf> {
    common::markdown::user_documents(&root())
        .into_iter()
        .filter(|p| !NOT_YET_COVERED.iter().any(|(d, _)| Path::new(d) == p))
        .collect()
}

/// A command quoted in a document: the words after `suite`, and whether it is to be typed as it stands (a fenced
/// line that begins with it) rather than named in prose.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Quoted {
    words: Vec<String>,
    whole: bool,
}

/// The `suite` commands in `text` (one line of a fence or one code span): the words after `suite`, when the first
/// that is not a global option is a subcommand. `fenced`: `text` is a line of a fenced block.
fn commands_in(text: &str, fenced: bool) -> Vec<Quoted> {
    let text = text.split(" #").next().unwrap_or_default();
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let is_suite = *w == "suite" || w.ends_with("/suite");
        // `cargo test -p suite` names the crate, not the binary.
        if !is_suite || (i > 0 && words[i - 1] == "-p") {
            continue;
        }
        let mut rest: Vec<String> = Vec::new();
        for w in &words[i + 1..] {
            if ["|", ";", "&&", "||", ">", "2>&1"].contains(w) {
                break;
            }
            // An ellipsis stays whole: it marks a template.
            let bare = if w.chars().all(|c| c == '.' || c == '…') {
                w
            } else {
                w.trim_end_matches([',', '.', ':', ')', ';'])
            };
            rest.push(bare.to_string());
            if bare.len() < w.len() {
                break;
            }
        }
        let mut j = 0;
        while j < rest.len() && rest[j].starts_with("--") {
            // Global options and their values: --platform X, --device N, --kernels-dir DIR.
            j += if rest[j].contains('=') { 1 } else { 2 };
        }
        if rest.get(j).is_some_and(|s| SUBCOMMANDS.contains(&s.as_str())) {
            let whole = fenced && words[..i].iter().all(|w| w.contains('='));
            out.push(Quoted { words: rest, whole });
        }
    }
    out
}

/// Whether a command is a template rather than a command (placeholders in it).
fn is_template(command: &[String]) -> bool {
    command.iter().any(|w| {
        ["<", ">", "[", "]", "...", "…", "$", "|", "{"].iter().any(|p| w.contains(p))
            || (w.len() > 1 || w == "N" || w == "S")
                && w.chars().all(|c| c.is_ascii_uppercase() || c == '/' || c == '_')
    })
}

/// Every command of every document: (file, line, the command).
fn quoted_commands() -> Vec<(PathBuf, usize, Quoted)> {
    let mut out = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(root().join(&doc)).expect("a readable document");
        let prose = without_fences(&text);
        // Fenced lines: where the prose was blanked.
        for (n, (line, blank)) in text.lines().zip(prose.lines()).enumerate() {
            if blank.trim().is_empty() && !line.trim().is_empty() {
                out.extend(commands_in(line, true).into_iter().map(|c| (doc.clone(), n + 1, c)));
            }
        }
        for (a, b) in code_spans(&prose) {
            let span = prose[a..b].trim_matches('`');
            let line = prose[..a].matches('\n').count() + 1;
            out.extend(commands_in(span, false).into_iter().map(|c| (doc.clone(), line, c)));
        }
    }
    out
}

/// What is wrong with `quoted`, if anything: a `suite run` with arguments, or one to be typed, must exit 0 with
/// `--dry-run`; the others must parse, a command named in prose less the arguments it leaves out.
fn check(quoted: &Quoted, cache: &Path, scratch: &Path) -> Result<(), String> {
    let command = &quoted.words;
    let run_at = command.iter().position(|w| w == "run");
    let first_sub = command.iter().position(|w| SUBCOMMANDS.contains(&w.as_str()));
    let is_run = run_at.is_some() && run_at == first_sub;
    let named_only = !quoted.whole && command.len() == run_at.map_or(0, |r| r + 1);
    if is_run && !named_only && !command.iter().any(|w| w == "--help") {
        let mut args: Vec<String> = Vec::new();
        let mut words = command.iter();
        while let Some(w) = words.next() {
            // A results folder of the docs' own (results/...) is replaced by a scratch one: only the parse counts.
            if w == "--out" {
                words.next();
                args.extend(["--out".to_string(), scratch.join("out").display().to_string()]);
            } else {
                args.push(w.clone());
            }
        }
        if !args.iter().any(|w| w == "--dry-run") {
            args.push("--dry-run".into());
        }
        let out = suite_without_gpu(cache).args(&args).output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(format!("`suite {}` exits {}: {}", args.join(" "), out.status, stderr.trim()));
        }
        return Ok(());
    }
    let mut argv = vec!["suite".to_string()];
    argv.extend(command.iter().cloned());
    let Err(e) = <suite::cli::Cli as clap::Parser>::try_parse_from(&argv) else {
        return Ok(());
    };
    use clap::error::ErrorKind;
    // `--help` and `--version` stop the parse on purpose.
    let stops = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
    // Named in prose: the arguments it requires left out, or a flag named without its value.
    let named = !quoted.whole
        && (e.kind() == ErrorKind::MissingRequiredArgument
            || (e.kind() == ErrorKind::InvalidValue
                && command.last().is_some_and(|w| w.starts_with("--"))
                && e.to_string().contains("a value is required")));
    if stops || named {
        return Ok(());
    }
    Err(format!("`suite {}` does not parse: {}", command.join(" "), e.to_string().trim()))
}

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|w| w.to_string()).collect()
}

#[test]
fn the_extractor_finds_commands_and_leaves_templates_and_the_crate_alone() {
    let found =
        commands_in("cargo test -p suite --lib x; target/release/suite --platform nvidia run --full # all", true);
    assert_eq!(found, [Quoted { words: words(&["--platform", "nvidia", "run", "--full"]), whole: false }]);
    let typed = commands_in("DEVICE_LIB_PATH=/x suite kernels compare --arch gfx90a --out d", true);
    assert_eq!(
        typed,
        [Quoted { words: words(&["kernels", "compare", "--arch", "gfx90a", "--out", "d"]), whole: true }]
    );
    // Prose in a fence: the clause ends the command.
    let tree =
        commands_in("kernel_tools.rs (suite kernels build|inspect|compare, suite occupancy calc), bench.rs", true);
    assert_eq!(tree.last().map(|q| q.words.clone()), Some(words(&["occupancy", "calc"])));
    assert!(commands_in("the suite pins cuBLAS to no TF32", false).is_empty());
    assert!(is_template(&words(&["merge", "DIR"])));
    assert!(is_template(&words(&["run", "<experiment>", "--help"])));
    assert!(!is_template(&words(&["run", "matmul", "--sizes", "2^20"])));
}

/// The checker refuses what a reader would be refused: a kernel that no longer exists, a flag that never did, a
/// command to type that lacks what it requires; a command named in prose may leave its arguments out.
#[test]
fn a_command_that_does_not_parse_is_reported() {
    let cache = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let check = |w: &[&str], whole: bool| check(&Quoted { words: words(w), whole }, cache.path(), scratch.path());
    let e = check(&["run", "matmul", "--kernels", "naive,padded", "--sizes", "256"], false)
        .expect_err("a removed rung must fail");
    assert!(e.contains("padded"), "{e}");
    assert!(check(&["compare", "a", "b", "--no-such-flag"], false).is_err());
    assert!(check(&["compare"], true).is_err(), "a command to type needs its runs");
    assert!(check(&["compare"], false).is_ok(), "`suite compare` named in prose");
    assert!(check(&["bench", "launch", "--baseline"], false).is_ok(), "a flag named in prose");
    assert!(check(&["bench", "launch", "--no-such-flag"], false).is_err());
}

#[test]
fn every_command_quoted_in_the_docs_parses() {
    let cache = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let commands: Vec<_> = quoted_commands().into_iter().filter(|(_, _, c)| !is_template(&c.words)).collect();
    assert!(commands.len() >= 25, "only {} commands found in the docs", commands.len());
    let mut checked = std::collections::BTreeSet::new();
    let mut problems = Vec::new();
    for (doc, line, command) in &commands {
        if !checked.insert(command.clone()) {
            continue;
        }
        if let Err(e) = check(command, cache.path(), scratch.path()) {
            problems.push(format!("{}:{line}: {e}", doc.display()));
        }
    }
    assert!(problems.is_empty(), "{} quoted commands fail:\n{}", problems.len(), problems.join("\n"));
}
