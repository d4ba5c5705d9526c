//! What makes the rows of one experiment comparable ([`Fingerprint`], recorded per invocation in `run.json`), and
//! the suite's version and commit that go into it.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::FieldDifference;
use crate::code_objects::CompilerRecord;
use crate::device::Props;

/// Version of the suite that wrote the results.
pub const SUITE_VERSION: &str = env!("CARGO_PKG_VERSION");
/// Git commit the binary was built from (`unknown` outside a git checkout); see [`git_dirty`] for local changes.
pub const GIT_COMMIT: &str = env!("SUITE_GIT_COMMIT");

/// Whether tracked files had uncommitted changes when the binary was built (false outside a git checkout).
pub fn git_dirty() -> bool {
    env!("SUITE_GIT_DIRTY") == "true"
}

/// The commit as people read it: `<hash>`, or `<hash>-dirty` when the tree had uncommitted changes.
pub fn git_describe() -> String {
    format!("{GIT_COMMIT}{}", if git_dirty() { "-dirty" } else { "" })
}

/// What makes the rows of one experiment comparable: rows are added to a folder (`--resume`, or another shard)
/// only when every field equals the one recorded there. The shard is not part of it: shards of one run share it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The experiment's sweep options with warm-up, repetitions and time budget, as JSON.
    pub options: String,
    /// SHA-256 (hex) over the text of the kernel sources the experiment loads and every kernel header.
    pub kernel_sources: String,
    /// Compiler (path and version) and flags per kernel source, or how a prebuilt object was found.
    pub compiler: String,
    /// Platform, device name and architecture.
    pub device: String,
    /// Suite version and git commit, with `-dirty` for a tree with uncommitted changes.
    pub suite: String,
    /// The CSV header.
    pub csv_header: String,
}

impl Fingerprint {
    /// A fingerprint from its parts. `options` holds the sweep and timing options, `sources` the names of the
    /// kernel sources the experiment loads.
    pub fn new(
        options: &serde_json::Value,
        sources: &[&str],
        compilers: &[CompilerRecord],
        device: &Props,
        csv_header: &[String],
    ) -> Fingerprint {
        Fingerprint {
            options: options.to_string(),
            kernel_sources: sources_hash(sources),
            // Only the experiment's own sources: one process that runs several experiments (`suite run`) has
            // loaded the others' too, and a resume of one experiment alone must find the same fingerprint.
            compiler: compilers
                .iter()
                .filter(|c| sources.contains(&c.source.as_str()))
                .map(|c| format!("{}: {} [{}]", c.source, c.compiler, c.flags.join(" ")))
                .collect::<Vec<_>>()
                .join("; "),
            device: format!("{} {} ({})", device.platform.name(), device.name, device.arch),
            suite: format!("{SUITE_VERSION} {}", git_describe()),
            csv_header: csv_header.join(","),
        }
    }

    /// Each field's name and value, in a fixed order.
    pub fn fields(&self) -> [(&'static str, &str); 6] {
        [
            ("options", &self.options),
            ("kernel_sources", &self.kernel_sources),
            ("compiler", &self.compiler),
            ("device", &self.device),
            ("suite", &self.suite),
            ("csv_header", &self.csv_header),
        ]
    }

    /// The first field that differs from `other` (`old`: this value, `new`: the other's).
    pub fn difference(&self, other: &Fingerprint) -> Option<FieldDifference> {
        self.fields()
            .into_iter()
            .zip(other.fields())
            .find(|((_, a), (_, b))| a != b)
            .map(|((field, a), (_, b))| FieldDifference { field, old: a.to_string(), new: b.to_string() })
    }
}

/// SHA-256 over the named kernel sources (sorted) and every header, each name and text length-prefixed. A name
/// that is not an embedded source is hashed as a name alone, so it still changes the hash.
pub(super) fn sources_hash(sources: &[&str]) -> String {
    let mut hash = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    let mut names: Vec<&str> = sources.to_vec();
    names.sort_unstable();
    for name in names {
        field(name.as_bytes());
        field(crate::code_objects::source(name).map(|s| s.text).unwrap_or_default().as_bytes());
    }
    for h in crate::code_objects::headers() {
        field(h.name.as_bytes());
        field(h.text.as_bytes());
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}
