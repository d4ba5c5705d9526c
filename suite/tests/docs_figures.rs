//! Every measured figure in README.md and docs/ names the committed run it comes from, and is recomputed from that
//! run here (issue 35): a figure that no longer matches its run fails this test.
//!
//! **How a document cites a figure.** The figure is the text of a link whose target is a file (or folder) of a
//! committed run under `results/` (or a run kept as a test fixture under `suite/tests/fixtures/`) and whose fragment
//! says how to compute it:
//!
//! - `[2,839 GB/s](../results/<run>/fusion.csv#gbps@dot/fused/n=1048576/device/f64)`: the `gbps` column of the row
//!   whose `key` is `dot/fused/n=1048576/device/f64`. In a CSV without a `key` column (the static comparison's
//!   `kernels.csv`) the selector is `column=value` pairs joined by `,`, and must pick exactly one row:
//!   `registers@target=gfx90a,kernel=matmul_double_buffer`.
//! - `COLUMN@SELECTOR:over:SELECTOR2`: divided by the same column of a second row (a ratio, a share of the vendor);
//!   `:per:COLUMN2` divides by another column of the same row (DRAM bytes per counted byte); `:scale:FACTOR`
//!   multiplies (`:scale:1000` turns ms into µs, `:scale:100` a share into %); they may follow one another.
//! - `min:COLUMN@FILTER` (also `max:`, `mean:`, `count:`): over the rows `FILTER` picks (`column=value` pairs joined
//!   by `,`; `*`: every row), e.g. `mean:object_ms@origin=compiled` of `fusion_compile.csv`; `:scale:F` may follow.
//! - `[1980 MHz](../results/<run>/run.json#json:device.clock_mhz)`: a number in run.json, by its dotted path (list
//!   items by index: `invocations.0.timing.launch_gap_us`).
//! - `[0.998](../results/<compare folder>/#low@matmul)`: a comparison's summary of an experiment (`median@`,
//!   `low@`, `high@` of run 2 / run 1 over the points both runs hold, `points@` their number; `raw-median@` and
//!   the like: the same of the raw rate, which the report adds for runs of one device), computed again by
//!   `suite compare` from the runs its report.md names.
//!
//! The link's text holds exactly one number, the figure as written (`2,839`, `0.86x`, `107.4 µs`, `95%`): it must
//! equal the value rounded as written (to half a unit of its last digit). The link takes the reader to the file the
//! figure comes from, and the fragment names the row.
//!
//! **Figures not yet cited.** A number with a unit of a measurement (GB/s, GFLOP/s, TFLOP/s, TB/s, µs, ms, a ratio
//! `1.3×` or `1.3x`, a `%`) outside code and outside a link's text is reported: a figure names where it comes from,
//! a committed run (checked as above) or, for a figure that is not measured here, its source (a datasheet, a paper,
//! the code that computes it). A paragraph of figures that are not measured may say so once instead, with a comment
//! `<!-- not measured: why -->` in it or on a line of its own right after it (after a table): the occupancy
//! calculator's shares, estimates, tolerances. Documents listed in
//! [`NOT_YET_COVERED`] are not linted (their figure links are still checked).

// Only the Markdown helpers are used here.
#[allow(dead_code)]
mod common;

use std::path::{Component, Path, PathBuf};

use common::markdown::{code_spans, links, without_fences};

/// Documents whose unlinked figures are not reported yet, each with why; their figure links are checked all the
/// same. Remove a document from here once its measured figures are links.
const NOT_YET_COVERED: [(&str, &str); 0] = [];

/// The repository's root, with no `..` in it (figure targets are resolved lexically against it).
fn root() -> PathBuf {
    joined(Path::new(env!("CARGO_MANIFEST_DIR")), "..")
}

/// README.md and docs/*.md, relative to the root.
fn documents() -> Vec<PathBuf> {
    common::markdown::user_documents(&root())
}

/// `base/rel` with `.` and `..` resolved lexically.
fn joined(base: &Path, rel: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in base.join(rel).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The one number a figure's text holds, and half a unit of its last written digit. Digits inside words (`FP64`,
/// `sm_90`, `2^20`) are not numbers.
fn written_number(text: &str) -> Result<(f64, f64), String> {
    let chars: Vec<char> = text.chars().collect();
    let mut numbers = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts =
            chars[i].is_ascii_digit() && (i == 0 || !(chars[i - 1].is_alphanumeric() || "_^.".contains(chars[i - 1])));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len()
            && (chars[j].is_ascii_digit()
                || (chars[j] == ',' && chars.get(j + 1).is_some_and(char::is_ascii_digit))
                || (chars[j] == '.' && chars.get(j + 1).is_some_and(char::is_ascii_digit)))
        {
            j += 1;
        }
        let raw: String = chars[i..j].iter().filter(|c| **c != ',').collect();
        // A number glued to letters after it (`2x` is a ratio, but `64x128` a shape) is a number only before x, ×, %.
        let next = chars.get(j).copied();
        let glued = next.is_some_and(|c| c.is_alphanumeric() && c != 'x') || next == Some('^');
        let shape = next == Some('x') && chars.get(j + 1).is_some_and(char::is_ascii_digit);
        if !glued && !shape {
            numbers.push(raw);
        }
        i = j.max(i + 1);
    }
    match numbers.as_slice() {
        [one] => {
            let value: f64 = one.parse().map_err(|e| format!("`{one}` is not a number: {e}"))?;
            let decimals = one.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
            Ok((value, 0.5 * 10f64.powi(-decimals)))
        }
        [] => Err("the link's text holds no number".into()),
        more => {
            Err(format!("the link's text holds {} numbers ({}): a figure link holds one", more.len(), more.join(", ")))
        }
    }
}

/// The value of a figure link's target `path#fragment`, from the committed file it names.
fn evaluate(path: &Path, fragment: &str) -> Result<f64, String> {
    let rel = path.strip_prefix(root()).unwrap_or(path).display().to_string();
    if let Some(dotted) = fragment.strip_prefix("json:") {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{rel}: {e}"))?;
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{rel}: {e}"))?;
        let mut at = &json;
        for part in dotted.split('.') {
            at = match part.parse::<usize>() {
                Ok(i) => &at[i],
                Err(_) => &at[part],
            };
        }
        return at.as_f64().ok_or_else(|| format!("{rel}: `{dotted}` is not a number ({at})"));
    }
    for what in ["median", "low", "high", "points", "raw-median", "raw-low", "raw-high", "raw-points"] {
        if let Some(experiment) = fragment.strip_prefix(&format!("{what}@")) {
            return comparison_summary(path, experiment, what);
        }
    }
    for aggregate in ["min", "max", "mean", "count"] {
        if let Some(rest) = fragment.strip_prefix(&format!("{aggregate}:")) {
            return aggregated(path, aggregate, rest);
        }
    }
    let mut parts = fragment.split(':');
    let head = parts.next().unwrap_or_default();
    let (column, selector) = head.split_once('@').ok_or_else(|| format!("`{fragment}`: expected COLUMN@SELECTOR"))?;
    let rows = suite::report::csv::read_rows(path).map_err(|e| e.to_string())?;
    let row_of = |selector: &str| -> Result<&std::collections::BTreeMap<String, String>, String> {
        let picked: Vec<_> = rows
            .iter()
            .filter(|r| match r.get("key") {
                Some(key) => key == selector,
                None => selector
                    .split(',')
                    .all(|pair| pair.split_once('=').is_some_and(|(c, v)| r.get(c).is_some_and(|x| x == v))),
            })
            .collect();
        match picked.as_slice() {
            [row] => Ok(*row),
            _ => Err(format!("{rel}: `{selector}` picks {} rows, not one", picked.len())),
        }
    };
    let value = |selector: &str| -> Result<f64, String> {
        let row = row_of(selector)?;
        let text = row.get(column).ok_or_else(|| format!("{rel}: no column `{column}`"))?;
        text.trim().parse::<f64>().map_err(|_| format!("{rel}: `{column}` of `{selector}` is `{text}`, not a number"))
    };
    let mut result = value(selector)?;
    while let Some(op) = parts.next() {
        let arg = parts.next().ok_or_else(|| format!("`{fragment}`: `:{op}:` needs an argument"))?;
        match op {
            "over" => result /= value(arg)?,
            "per" => {
                let row = row_of(selector)?;
                let text = row.get(arg).ok_or_else(|| format!("{rel}: no column `{arg}`"))?;
                result /=
                    text.trim().parse::<f64>().map_err(|_| format!("{rel}: `{arg}` is `{text}`, not a number"))?;
            }
            "scale" => result *= arg.parse::<f64>().map_err(|e| format!("`{fragment}`: scale `{arg}`: {e}"))?,
            other => return Err(format!("`{fragment}`: unknown operation `:{other}:` (over, per, scale)")),
        }
    }
    Ok(result)
}

/// `aggregate` (min, max, mean, count) of `COLUMN@FILTER` over the rows of the CSV at `path` that `FILTER`
/// (`column=value` pairs joined by `,`, or `*` for every row) picks; `count` counts the rows whose column is a
/// number.
fn aggregated(path: &Path, aggregate: &str, spec: &str) -> Result<f64, String> {
    let rel = path.strip_prefix(root()).unwrap_or(path).display().to_string();
    let (spec, scale) = match spec.split_once(":scale:") {
        Some((spec, f)) => (spec, f.parse::<f64>().map_err(|e| format!("`{spec}`: scale `{f}`: {e}"))?),
        None => (spec, 1.0),
    };
    let (column, filter) = spec.split_once('@').ok_or_else(|| format!("`{spec}`: expected COLUMN@FILTER"))?;
    let rows = suite::report::csv::read_rows(path).map_err(|e| e.to_string())?;
    let values: Vec<f64> = rows
        .iter()
        .filter(|r| {
            filter == "*"
                || filter
                    .split(',')
                    .all(|pair| pair.split_once('=').is_some_and(|(c, v)| r.get(c).is_some_and(|x| x == v)))
        })
        .filter_map(|r| r.get(column).and_then(|v| v.trim().parse::<f64>().ok()))
        .collect();
    if values.is_empty() {
        return Err(format!("{rel}: `{filter}` picks no row with a number in `{column}`"));
    }
    Ok(scale
        * match aggregate {
            "min" => values.iter().copied().fold(f64::INFINITY, f64::min),
            "max" => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            "mean" => values.iter().sum::<f64>() / values.len() as f64,
            _ => values.len() as f64,
        })
}

/// `what` (median, low, high, points) of run 2 / run 1 for `experiment` in the comparison folder `dir`, computed
/// again by `suite compare` from the runs its report.md names.
fn comparison_summary(dir: &Path, experiment: &str, what: &str) -> Result<f64, String> {
    let report = std::fs::read_to_string(dir.join("report.md")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let runs: Vec<PathBuf> = report
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(" | `results/"))
        .filter_map(|l| l.split('`').nth(1).map(|d| root().join(d)))
        .collect();
    let runs: Vec<_> = runs
        .iter()
        .enumerate()
        .map(|(i, d)| suite::report::compare::read_run(d, i + 1).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let (md, _) = suite::report::compare::report(&runs, &suite::experiments::registry::known());
    let section = md.split(&format!("\n## {experiment}\n")).nth(1).ok_or(format!("no section {experiment}"))?;
    // The first summary is of the compared values; a second (runs of one device) of the raw rate.
    let (nth, what) = match what.strip_prefix("raw-") {
        Some(w) => (1, w),
        None => (0, what),
    };
    let line = section
        .lines()
        .filter(|l| l.starts_with("Run 2 / run 1 over "))
        .nth(nth)
        .ok_or(format!("{experiment}: no summary {nth} of run 2 / run 1"))?;
    // "Run 2 / run 1 over 36 points: median 0.999, from 0.984 to 1.068."
    let number_after = |word: &str| -> Result<f64, String> {
        let rest = line.split(word).nth(1).ok_or(format!("`{line}` has no `{word}`"))?;
        let n: String = rest.trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        n.trim_end_matches('.').parse::<f64>().map_err(|e| format!("`{line}`: {e}"))
    };
    match what {
        "median" => number_after("median "),
        "low" => number_after("from "),
        "high" => number_after(" to "),
        _ => number_after(" over "),
    }
}

/// A figure link found in a document.
struct Figure {
    line: usize,
    text: String,
    target: String,
}

/// The figure links of the Markdown `text` of `doc`: links to a file or folder under `results/` (or a committed
/// fixture run's CSV under `suite/tests/fixtures/`) with a fragment.
fn figure_links(doc: &Path, text: &str) -> Vec<Figure> {
    let prose = without_fences(text);
    let folder = root().join(doc.parent().unwrap_or(Path::new("")));
    links(&prose)
        .into_iter()
        .filter(|(_, _, target)| {
            target.split_once('#').is_some_and(|(path, fragment)| {
                let file = joined(&folder, path);
                !fragment.is_empty()
                    && ["results", "suite/tests/fixtures"].iter().any(|d| file.starts_with(root().join(d)))
                    && (fragment.contains('@') || fragment.starts_with("json:"))
            })
        })
        .map(|(offset, text, target)| Figure { line: prose[..offset].matches('\n').count() + 1, text, target })
        .collect()
}

/// Checks every figure link of `doc`; one line per problem.
fn check_figures(doc: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(doc)).expect("a readable document");
    let folder = root().join(doc.parent().unwrap_or(Path::new("")));
    let mut out = Vec::new();
    for f in figure_links(doc, &text) {
        let (path, fragment) = f.target.split_once('#').expect("a figure link has a fragment");
        let at = format!("{}:{}: [{}]", doc.display(), f.line, f.text);
        let written = match written_number(&f.text) {
            Ok(w) => w,
            Err(e) => {
                out.push(format!("{at}: {e}"));
                continue;
            }
        };
        match evaluate(&joined(&folder, path), fragment) {
            Ok(value) if (value - written.0).abs() <= written.1 * (1.0 + 1e-9) + 1e-12 => {}
            Ok(value) => out.push(format!("{at}: the run gives {value} ({})", f.target)),
            Err(e) => out.push(format!("{at}: {e}")),
        }
    }
    out
}

/// Units of a measurement: a number written before one of these is a measured figure unless said otherwise.
const UNITS: [&str; 10] = ["GB/s", "GFLOP/s", "TFLOP/s", "TB/s", "µs", "us", "ms", "×", "x", "%"];

/// Numbers with a measurement's unit in a document's `text`, outside code and figure links and outside paragraphs marked
/// `<!-- not measured: ... -->`: (line, the number with its unit).
fn unlinked_figures(text: &str) -> Vec<(usize, String)> {
    let mut prose = without_fences(text).into_bytes();
    for (a, b) in code_spans(&String::from_utf8_lossy(&prose)) {
        prose[a..b].iter_mut().filter(|c| **c != b'\n').for_each(|c| *c = b' ');
    }
    // A figure in a link's text names where it comes from: a run (checked above), or a datasheet, a paper, the code
    // that computes it.
    let unfenced = String::from_utf8_lossy(&prose).into_owned();
    for (start, link_text, _) in links(&unfenced) {
        prose[start..start + link_text.len() + 2].iter_mut().filter(|c| **c != b'\n').for_each(|c| *c = b' ');
    }
    let prose = String::from_utf8_lossy(&prose).into_owned();
    let mut out = Vec::new();
    let mut line_no = 0;
    let paragraphs: Vec<&str> = prose.split("\n\n").collect();
    // A marker in a paragraph, or alone right after it (after a table), covers that paragraph.
    let marked = |i: usize| {
        paragraphs[i].contains("<!-- not measured")
            || paragraphs.get(i + 1).is_some_and(|next| next.trim_start().starts_with("<!-- not measured"))
    };
    for (index, paragraph) in paragraphs.iter().enumerate() {
        let lines_before = line_no;
        line_no += paragraph.matches('\n').count() + 2;
        if marked(index) {
            continue;
        }
        for (i, line) in paragraph.lines().enumerate() {
            // Link targets are paths, not figures.
            let line: String = strip_link_targets(line);
            for found in numbers_with_units(&line) {
                out.push((lines_before + i + 1, found));
            }
        }
    }
    out
}

/// `line` with the `(target)` of every `[text](target)` blanked.
fn strip_link_targets(line: &str) -> String {
    let mut out = line.to_string();
    for (_, text, target) in links(line) {
        out = out.replacen(&format!("[{text}]({target})"), &format!("[{text}]"), 1);
    }
    out
}

/// The numbers of `line` followed by a measurement's unit ([`UNITS`]), e.g. `2,839 GB/s`, `1.3×`, `95%`.
fn numbers_with_units(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit()
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || "_^.-/=".contains(chars[i - 1])));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len()
            && (chars[j].is_ascii_digit()
                || (",.".contains(chars[j]) && chars.get(j + 1).is_some_and(char::is_ascii_digit)))
        {
            j += 1;
        }
        let rest: String = chars[j..].iter().collect();
        let spaced = rest.starts_with(' ');
        let after = rest.strip_prefix(' ').unwrap_or(&rest);
        let unit = UNITS.iter().find(|u| {
            after.starts_with(**u) && after[u.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric() || **u == "%")
        });
        if let Some(u) = unit {
            // `64x128x8` is a shape, not a ratio.
            let shape = *u == "x" && after[1..].starts_with(|c: char| c.is_ascii_digit());
            if !shape {
                let number: String = chars[i..j].iter().collect();
                out.push(format!("{number}{}{u}", if spaced { " " } else { "" }));
            }
        }
        i = j.max(i + 1);
    }
    out
}

#[test]
fn every_figure_link_matches_its_run() {
    let problems: Vec<String> = documents().iter().flat_map(|d| check_figures(d)).collect();
    let checked: usize = documents()
        .iter()
        .map(|d| figure_links(d, &std::fs::read_to_string(root().join(d)).unwrap_or_default()).len())
        .sum();
    assert!(checked >= 100, "only {checked} figure links in the documents");
    assert!(problems.is_empty(), "{} figures differ from their runs:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn every_measured_figure_is_a_link_to_its_run() {
    let mut found = Vec::new();
    for doc in documents() {
        if NOT_YET_COVERED.iter().any(|(d, _)| Path::new(d) == doc) {
            continue;
        }
        let text = std::fs::read_to_string(root().join(&doc)).expect("a readable document");
        for (line, figure) in unlinked_figures(&text) {
            found.push(format!("{}:{line}: {figure}", doc.display()));
        }
    }
    assert!(
        found.is_empty(),
        "{} figures with a measurement's unit are not links to the run they come from (docs_figures.rs says how to \
         cite one, and how to mark a paragraph of figures that are not measured):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The checker itself: a figure matches its run to the digits written, a stale one fails, and the written number
/// is read as a person reads it.
#[test]
fn the_checker_reads_figures_as_written_and_catches_a_stale_one() {
    assert_eq!(written_number("2,839 GB/s"), Ok((2839.0, 0.5)));
    assert_eq!(written_number("0.86x"), Ok((0.86, 0.005)));
    assert_eq!(written_number("107.4 µs"), Ok((107.4, 0.05)));
    assert_eq!(written_number("FP64 at 2^20: 95%"), Ok((95.0, 0.5)));
    assert!(written_number("64x128x8 at 0.91x").is_ok_and(|w| w.0 == 0.91));
    assert!(written_number("103/112 µs").is_err());
    assert_eq!(
        numbers_with_units("fused 2.15× at 2^25, 2968 GB/s, 64x128x8, sm_90 12.5%"),
        ["2.15×", "2968 GB/s", "12.5%"]
    );
    // A figure of the H100 quick run: the FP64 fused dot at 2^20 as committed, and the same written stale.
    let run = root().join("results/2026-11-25-h100-sm_90-quick-counters-issues25-27/fusion.csv");
    let key = "dot/fused/n=1048576/device/f64";
    let value = evaluate(&run, &format!("gbps@{key}")).expect("the row is there");
    let rows = suite::report::csv::read_rows(&run).expect("the CSV reads");
    let row = rows.iter().find(|r| r["key"] == key).expect("the row");
    assert_eq!(value, row["gbps"].parse::<f64>().expect("a number"));
    let us = evaluate(&run, &format!("time_ms_median@{key}:scale:1000")).expect("a time");
    assert!((us - 1000.0 * row["time_ms_median"].parse::<f64>().expect("a number")).abs() < 1e-9);
    assert!(evaluate(&run, "gbps@no/such/key").is_err_and(|e| e.contains("picks 0 rows")));
}
