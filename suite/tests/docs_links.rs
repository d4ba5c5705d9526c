//! Every relative link and every repository path the documentation names resolves (issue 24), on a CPU.
//!
//! **Files checked**: `README.md`, `docs/*.md`, and the `README.md`, `summary.md` and `report.md` of every folder
//! under `results/`. Lines inside fenced code blocks (opened by three or more backticks or tildes) are skipped: they
//! are commands and file trees, not links.
//!
//! **Links**: `[text](target)` and `![alt](target)` outside inline code. A target with a scheme (`https:`,
//! `mailto:`) is not checked. The path before `#` is resolved relative to the Markdown file's folder and must
//! exist (a file or a folder); an empty path is the file itself (`[x](#anchor)`). An `#anchor` on a Markdown file
//! must be one of its ATX headings (`## ...`) by GitHub's rules: the heading's text (link targets and markup
//! dropped) in lower case, every character that is not a letter, a digit, `_`, `-` or a space dropped, spaces
//! turned into hyphens; a repeated heading gets `-1`, `-2`, ... An anchor on any other file is not checked.
//!
//! **Backticked paths**: an inline code span names a repository path when it contains a `/`, holds none of `<`,
//! `*`, `...`, `…`, `$` or whitespace (placeholders such as `results/lumi-gcd-<job id>/` and `<experiment>.csv`,
//! globs, commands), does not start with `/` or `~` (a path on some other machine), and
//! - its first component is an entry at the repository's root (`suite/`, `scripts/`, `kernels/`, `docs/`,
//!   `results/`, `hip-sys/`, `hip-test-runtime/`, ...) or `.` / `..`: it must exist relative to the repository's
//!   root or to the Markdown file's folder; or
//! - it ends in a source extension (`.rs`, `.hip`, `.h`, `.cpp`, `.cu`, `.sh`, `.sbatch`, `.py`, `.toml`) and is a
//!   fragment relative to a folder the text has named (`report/plot.rs`, `smoke/compare.rs`): it must exist relative
//!   to the root or the file's folder, or be the tail of some file's path in the repository.
//!
//! Other spans with a `/` are not paths (CSV keys such as `triad/n=1048576,group=256`, `time_ms_median/min/max`,
//! `DIR/kernels.md`). A failure lists every broken link and path with its file and line.

// Only the Markdown helpers are used here.
#[allow(dead_code)]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::markdown::{code_spans, without_fences};

/// Extensions of source files, whose fragments (`report/plot.rs`) are checked wherever they stand.
const SOURCE_EXTENSIONS: &[&str] = &["rs", "hip", "h", "cpp", "cu", "sh", "sbatch", "py", "toml"];

/// The repository's root, from this crate's folder (or `suite/..` from the working folder, as
/// `suite::test_deps::crate_path` does for test binaries run without cargo).
fn repository_root() -> PathBuf {
    suite::test_deps::crate_path("..")
}

/// The Markdown files the test checks, relative to `root`, sorted.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut files = common::markdown::user_documents(root);
    let mut runs: Vec<PathBuf> = read_dir(&root.join("results")).into_iter().filter(|p| p.is_dir()).collect();
    runs.sort();
    for run in runs {
        let folder = Path::new("results").join(run.file_name().expect("a listed folder has a name"));
        for name in ["README.md", "summary.md", "report.md"] {
            if root.join(&folder).join(name).is_file() {
                files.push(folder.join(name));
            }
        }
    }
    files
}

/// The entries of `dir`, empty when it cannot be read (the caller's own check then says what is missing).
fn read_dir(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir).map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect()).unwrap_or_default()
}

/// Every file under `root` as a `/`-separated path relative to it, skipping `.git`, hidden folders and build
/// output (`target*`, `kernels-build`), for the fragment rule.
fn repository_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        for path in read_dir(&root.join(&rel)) {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let child = rel.join(&name);
            if path.is_dir() {
                if !(name.starts_with('.') || name.starts_with("target") || name == "kernels-build") {
                    pending.push(child);
                }
            } else {
                out.push(child.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out
}

/// Checks links and backticked paths in the Markdown `text` of the file `file` (relative to `root`); returns one
/// line per problem, `file:line: what`.
fn check(root: &Path, file: &Path, text: &str) -> Vec<String> {
    let folder = file.parent().unwrap_or(Path::new(""));
    let prose = without_fences(text);
    let spans = code_spans(&prose);
    let line_of = |offset: usize| prose[..offset].matches('\n').count() + 1;
    let mut problems = Vec::new();
    let mut report =
        |offset: usize, what: String| problems.push(format!("{}:{}: {what}", file.display(), line_of(offset)));

    // Links, outside inline code.
    let mut masked = prose.clone().into_bytes();
    for &(start, end) in &spans {
        masked[start..end].iter_mut().filter(|b| **b != b'\n').for_each(|b| *b = b' ');
    }
    let masked = String::from_utf8(masked).expect("only ASCII bytes were replaced");
    for (offset, target) in link_targets(&masked) {
        if let Err(why) = check_link(root, folder, text, &target) {
            report(offset, format!("link `{target}`: {why}"));
        }
    }

    // Backticked repository paths.
    let mut all_files: Option<Vec<String>> = None;
    for &(start, end) in &spans {
        let token = prose[start..end].trim_matches('`');
        match path_kind(root, token) {
            PathKind::NotAPath => {}
            PathKind::Anchored => {
                if !exists(root, folder, token) {
                    report(start, format!("path `{token}`: no such file or folder from the root or {}", shown(folder)));
                }
            }
            PathKind::Fragment => {
                let files = all_files.get_or_insert_with(|| repository_files(root));
                let tail = format!("/{}", token.trim_start_matches("./"));
                if !exists(root, folder, token) && !files.iter().any(|f| format!("/{f}").ends_with(&tail)) {
                    report(start, format!("path `{token}`: no file in the repository ends with it"));
                }
            }
        }
    }
    problems
}

/// What a backticked token is under the rules of the module's doc.
#[derive(Debug, PartialEq)]
enum PathKind {
    NotAPath,
    /// Starts at the repository's root (or `.`/`..`): resolved from the root or the Markdown file's folder.
    Anchored,
    /// A source file named relative to a folder the text has named: the tail of some file's path.
    Fragment,
}

fn path_kind(root: &Path, token: &str) -> PathKind {
    let placeholder = ['<', '*', '$', '…'].iter().any(|c| token.contains(*c))
        || token.contains("...")
        || token.chars().any(char::is_whitespace);
    if placeholder || !token.contains('/') || token.starts_with('/') || token.starts_with('~') {
        return PathKind::NotAPath;
    }
    let first = token.split('/').next().unwrap_or_default();
    if first == "." || first == ".." || (!first.is_empty() && root.join(first).exists()) {
        return PathKind::Anchored;
    }
    let extension = Path::new(token).extension().and_then(|e| e.to_str()).unwrap_or_default();
    if SOURCE_EXTENSIONS.contains(&extension) {
        PathKind::Fragment
    } else {
        PathKind::NotAPath
    }
}

fn exists(root: &Path, folder: &Path, path: &str) -> bool {
    root.join(path).exists() || root.join(folder).join(path).exists()
}

fn shown(folder: &Path) -> String {
    if folder.as_os_str().is_empty() {
        "the root".to_string()
    } else {
        format!("{}/", folder.display())
    }
}

/// Checks one link target from the Markdown file in `folder` (relative to `root`) whose text is `own_text`.
fn check_link(root: &Path, folder: &Path, own_text: &str, target: &str) -> Result<(), String> {
    let scheme = target.split_once(':').is_some_and(|(s, _)| {
        !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
    });
    if scheme {
        return Ok(());
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let resolved = root.join(folder).join(path);
    if !path.is_empty() && !resolved.exists() {
        return Err(format!("{} does not exist", shown_path(folder, path)));
    }
    let Some(anchor) = anchor else { return Ok(()) };
    let anchors = if path.is_empty() {
        heading_anchors(own_text)
    } else if resolved.extension().is_some_and(|e| e == "md") && resolved.is_file() {
        let text =
            std::fs::read_to_string(&resolved).map_err(|e| format!("cannot read {}: {e}", resolved.display()))?;
        heading_anchors(&text)
    } else {
        return Ok(());
    };
    if anchors.iter().any(|a| a == anchor) {
        Ok(())
    } else {
        Err(format!("no heading with the anchor `#{anchor}` (it has: {})", anchors.join(", ")))
    }
}

fn shown_path(folder: &Path, path: &str) -> String {
    let joined = folder.join(path);
    format!("{} (from the root: {})", path, joined.display())
}

/// The targets of `[text](target)` and `![alt](target)` in `text`, with their offsets; a title after the target
/// (`(path "title")`) is dropped and `<...>` around it removed.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("](") {
        let start = from + found + 2;
        let rest = &text[start..];
        let target = if let Some(angled) = rest.strip_prefix('<') {
            angled.split('>').next().unwrap_or_default().to_string()
        } else {
            let mut depth = 0usize;
            let end = rest
                .char_indices()
                .find(|&(_, c)| match c {
                    '(' => {
                        depth += 1;
                        false
                    }
                    ')' if depth > 0 => {
                        depth -= 1;
                        false
                    }
                    ')' => true,
                    c => c.is_whitespace(),
                })
                .map_or(rest.len(), |(i, _)| i);
            rest[..end].to_string()
        };
        if !target.is_empty() {
            out.push((from + found, target));
        }
        from = start;
    }
    out
}

/// The anchors of the ATX headings of the Markdown `text`, as GitHub makes them, in order.
fn heading_anchors(text: &str) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = Vec::new();
    for line in without_fences(text).lines() {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with([' ', '\t']) {
            continue;
        }
        let title = line[hashes..].trim().trim_end_matches('#').trim_end();
        let slug = slug(title);
        let count = seen.entry(slug.clone()).or_insert(0);
        anchors.push(if *count == 0 { slug.clone() } else { format!("{slug}-{count}") });
        *count += 1;
    }
    anchors
}

/// GitHub's anchor of a heading's text: link targets dropped (`[text](url)` is `text`), lower case, characters other
/// than letters, digits, `_`, `-` and spaces dropped, spaces turned into hyphens.
fn slug(title: &str) -> String {
    let mut text = String::new();
    let mut rest = title;
    while let Some(at) = rest.find("](") {
        text.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        rest = after.find(')').map_or("", |close| &after[close + 1..]);
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || c == '_' || c == '-' || c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn every_link_and_backticked_path_in_the_docs_resolves() {
    let root = repository_root();
    let files = documents(&root);
    assert!(files.len() > 10, "found only {files:?} under {}: is this the repository's root?", root.display());
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        problems.extend(check(&root, file, &text));
    }
    assert!(problems.is_empty(), "{} broken links or paths:\n{}", problems.len(), problems.join("\n"));
}

/// The checker itself, on a small fixture repository: what resolves passes, each kind of break is reported once
/// with its line, and placeholders, URLs, code spans and fenced blocks are left alone.
#[test]
fn the_checker_reports_broken_links_and_paths_and_nothing_else() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    for dir in ["docs", "suite/src/report", "results/run"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(root.join("suite/src/report/plot.rs"), "").unwrap();
    std::fs::write(root.join("results/run/a.png"), "").unwrap();
    std::fs::write(
        root.join("docs/other.md"),
        "# Other\n\n## Run options, exit status (`--resume`)\n## Twice\n## Twice\n",
    )
    .unwrap();
    let text = "\
# Fixture

A good [link](other.md), a good [anchor](other.md#run-options-exit-status---resume), [the second
Twice](other.md#twice-1), [this file](#fixture), a ![plot](../results/run/a.png) and a [site](https://example.com/x).
A broken [link](missing.md) and a broken [anchor](other.md#nowhere).
Paths: `suite/src/report/plot.rs`, `report/plot.rs`, `results/run/`, `../results/run/a.png`; placeholders
`results/lumi-gcd-<job id>/`, `kernels/*.hip`, `$SUITE_OUT/x.rs`, `suite/src/...`; not paths: `triad/n=1,group=256`,
`DIR/kernels.md`, `/tmp/quick`, `[code](nowhere.md)`.
Broken: `suite/src/report/nosuch.rs` and `report/nosuch.rs`.

```sh
scripts/nosuch.sh  [fenced](nowhere.md) `suite/nosuch.rs`
```
";
    let problems = check(root, Path::new("docs/fixture.md"), text);
    assert_eq!(problems.len(), 4, "{problems:#?}");
    assert!(problems[0].starts_with("docs/fixture.md:5: link `missing.md`: missing.md"), "{problems:#?}");
    assert!(problems[1].starts_with("docs/fixture.md:5: link `other.md#nowhere`: no heading"), "{problems:#?}");
    assert!(problems[1].contains("run-options-exit-status---resume, twice, twice-1"), "{problems:#?}");
    assert!(problems[2].starts_with("docs/fixture.md:9: path `suite/src/report/nosuch.rs`"), "{problems:#?}");
    assert!(problems[3].starts_with("docs/fixture.md:9: path `report/nosuch.rs`"), "{problems:#?}");
}

#[test]
fn anchors_follow_githubs_rules() {
    let cases = [
        ("Run options, exit status, resume, shards and merge", "run-options-exit-status-resume-shards-and-merge"),
        (
            "Shapes that fit gfx90a, and the default kernels per architecture",
            "shapes-that-fit-gfx90a-and-the-default-kernels-per-architecture",
        ),
        ("Reference run at every size (H200)", "reference-run-at-every-size-h200"),
        ("The `timing` column: graph/stream", "the-timing-column-graphstream"),
        ("µs per step, 2²⁰ items", "µs-per-step-2²⁰-items"),
        ("snake_case and [a link](https://example.com)", "snake_case-and-a-link"),
    ];
    for (title, anchor) in cases {
        assert_eq!(slug(title), anchor, "{title}");
    }
    assert_eq!(heading_anchors("# A\n```\n# not a heading\n```\n## A\n#no\n### B ###\n"), ["a", "a-1", "b"]);
}
