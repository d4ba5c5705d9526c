//! Reading Markdown the way the documentation tests need: fenced blocks blanked, inline code spans found, links
//! with their text and target. Offsets stay those of the text, so a problem can name its line.

use std::path::{Path, PathBuf};

/// The documents a user reads, relative to `root`: README.md, then docs/*.md sorted.
pub fn user_documents(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| Path::new("docs").join(p.file_name().expect("a name")))
        .collect();
    docs.sort();
    let mut all = vec![PathBuf::from("README.md")];
    all.extend(docs);
    all
}

/// `text` with every line of a fenced code block blanked, so offsets and line numbers stay those of `text`.
pub fn without_fences(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let marker: String = trimmed.chars().take_while(|&c| c == '`' || c == '~').collect();
        let opens = marker.len() >= 3 && marker.chars().all(|c| c == marker.chars().next().unwrap_or('`'));
        let inside = match &fence {
            Some(open) => {
                if opens && marker.starts_with(open.as_str()) && trimmed[marker.len()..].trim().is_empty() {
                    fence = None;
                }
                true
            }
            None if opens => {
                fence = Some(marker);
                true
            }
            None => false,
        };
        if inside {
            out.extend(line.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
        } else {
            out.push_str(line);
        }
    }
    out
}

/// The byte ranges of the inline code spans of `text`, backticks included: a run of n backticks up to the next
/// run of exactly n (CommonMark's rule); an unmatched run is literal.
pub fn code_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let run_at = |i: usize| bytes[i..].iter().take_while(|&&b| b == b'`').count();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let n = run_at(i);
        let mut j = i + n;
        let mut close = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let m = run_at(j);
                if m == n {
                    close = Some(j + m);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                spans.push((i, end));
                i = end;
            }
            None => i += n,
        }
    }
    spans
}

/// The links `[text](target)` of `text` (images too), outside inline code: (offset of the `[`, text, target). A
/// title after the target is dropped; nested brackets in the text are allowed.
pub fn links(text: &str) -> Vec<(usize, String, String)> {
    let spans = code_spans(text);
    let in_code = |i: usize| spans.iter().any(|&(a, b)| (a..b).contains(&i));
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("](") {
        let close = from + found;
        from = close + 2;
        if in_code(close) {
            continue;
        }
        // The matching `[`, on the same line.
        let mut depth = 0usize;
        let mut open = None;
        for i in (0..close).rev() {
            match bytes[i] {
                b'\n' => break,
                b']' => depth += 1,
                b'[' if depth > 0 => depth -= 1,
                b'[' => {
                    open = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let Some(open) = open else { continue };
        let rest = &text[close + 2..];
        let end = rest.find(|c: char| c == ')' || c.is_whitespace()).unwrap_or(rest.len());
        out.push((open, text[open + 1..close].to_string(), rest[..end].to_string()));
    }
    out
}
