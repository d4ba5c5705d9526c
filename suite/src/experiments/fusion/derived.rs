//! What the fusion experiment derives from its rows: the median times and rates by point ([`Table`], which the
//! plots and headlines read too) and [`RATIOS_CSV`], the seed's ratios with the staged kernels' payoff, written
//! beside the CSV through [`crate::experiments::Results::derived_tables`].

use std::collections::BTreeMap;
use std::path::Path;

use super::{COMPILE_CSV, MEASURES, OPERATIONS, PRECISIONS, RATIOS_CSV};

/// The derived tables: [`RATIOS_CSV`] from the `ok` rows and the staged kernels' compile costs in [`COMPILE_CSV`]
/// in `dir`; none when no row is `ok`.
pub fn tables(rows: &[BTreeMap<String, String>], dir: &Path) -> Vec<(String, String)> {
    let ok: Vec<&BTreeMap<String, String>> = crate::experiments::ok_rows(rows).collect();
    if ok.is_empty() {
        return Vec::new();
    }
    vec![(RATIOS_CSV.to_string(), ratios_csv(&Table::new(&ok), &compile_costs(dir)))]
}

/// A row's precision: its `precision` column, `f32` in CSVs from before FP64 (which had only FP32 rows).
pub(super) fn precision(row: &BTreeMap<String, String>) -> &str {
    row.get("precision").map_or("f32", String::as_str)
}

/// A point of the table: (operation, precision, variant, elements, measure).
type Key = (String, String, String, usize, String);

/// A point's times (ms: median, fastest and slowest repetition; the median where a CSV lacks the others) and rate
/// (GB/s at the median).
#[derive(Debug, Clone, Copy)]
struct Timed {
    median: f64,
    min: f64,
    max: f64,
    gbps: f64,
}

/// Times and rates by point.
pub(super) struct Table(BTreeMap<Key, Timed>);

impl Table {
    pub(super) fn new(rows: &[&BTreeMap<String, String>]) -> Table {
        let mut map = BTreeMap::new();
        for r in rows {
            let s = |c: &str| r.get(c).cloned().unwrap_or_default();
            let (Ok(n), Ok(t), Ok(g)) =
                (s("elements").parse::<usize>(), s("time_ms_median").parse::<f64>(), s("gbps").parse::<f64>())
            else {
                continue;
            };
            let (min, max) =
                (s("time_ms_min").parse::<f64>().unwrap_or(t), s("time_ms_max").parse::<f64>().unwrap_or(t));
            let key = (s("operation"), precision(r).to_string(), s("variant"), n, s("measure"));
            map.insert(key, Timed { median: t, min, max, gbps: g });
        }
        Table(map)
    }

    /// The spread of `slow`'s time over `fast`'s (a speedup of `fast`), from the least to the most favourable
    /// pairing of their repetitions.
    pub(super) fn speedup_spread(
        &self,
        slow: (&str, &str, &str, usize, &str),
        fast: (&str, &str, &str, usize, &str),
    ) -> Option<(f64, f64)> {
        let (a, b) = (self.timed(slow)?, self.timed(fast)?);
        (a.min > 0.0 && b.min > 0.0).then(|| (a.min / b.max, a.max / b.min))
    }

    /// The spread of a point's GB/s: at its slowest and at its fastest repetition.
    pub(super) fn rate_spread(&self, op: &str, p: &str, v: &str, n: usize, m: &str) -> Option<(f64, f64)> {
        let t = self.timed((op, p, v, n, m))?;
        (t.min > 0.0).then(|| (t.gbps * t.median / t.max, t.gbps * t.median / t.min))
    }

    fn timed(&self, (op, p, v, n, m): (&str, &str, &str, usize, &str)) -> Option<Timed> {
        self.0.get(&(op.to_string(), p.to_string(), v.to_string(), n, m.to_string())).copied()
    }

    /// The precisions the table holds rows of, FP32 first.
    pub(super) fn precisions(&self) -> Vec<&'static str> {
        PRECISIONS.into_iter().filter(|p| self.0.keys().any(|k| k.1 == *p)).collect()
    }

    /// The sizes of `op`'s rows in precision `p`, ascending.
    pub(super) fn elements(&self, op: &str, p: &str) -> Vec<usize> {
        let mut e: Vec<usize> = self.0.keys().filter(|k| k.0 == op && k.1 == p).map(|k| k.3).collect();
        e.sort_unstable();
        e.dedup();
        e
    }

    /// Median time of a point, ms.
    pub(super) fn time(&self, op: &str, p: &str, v: &str, n: usize, m: &str) -> Option<f64> {
        self.timed((op, p, v, n, m)).map(|x| x.median)
    }

    /// GB/s of a point at its median time.
    pub(super) fn rate(&self, op: &str, p: &str, v: &str, n: usize, m: &str) -> Option<f64> {
        self.timed((op, p, v, n, m)).map(|x| x.gbps)
    }
}

/// What getting the staged kernel cost, ms: a cold compile (with its load) and a cache hit (with its load).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct CompileCost {
    cold_ms: Option<f64>,
    cached_ms: Option<f64>,
}

/// The staged kernels' cost by (operation, precision, elements), from [`COMPILE_CSV`] (FP32 where it has no
/// precision column: written before FP64): the cold time from rows that compiled, the cached time (a cache lookup
/// plus the load) from every row.
fn compile_costs(dir: &Path) -> BTreeMap<(String, String, usize), CompileCost> {
    let Ok(rows) = crate::report::csv::read_rows(&dir.join(COMPILE_CSV)) else { return BTreeMap::new() };
    let mut out: BTreeMap<(String, String, usize), CompileCost> = BTreeMap::new();
    for r in &rows {
        let num = |c: &str| r.get(c).and_then(|v| v.parse::<f64>().ok());
        let (Some(op), Some(n), Some(object), Some(load), Some(cached)) = (
            r.get("operation"),
            r.get("elements").and_then(|v| v.parse::<usize>().ok()),
            num("object_ms"),
            num("load_ms"),
            num("cached_object_ms"),
        ) else {
            continue;
        };
        let entry = out.entry((op.clone(), precision(r).to_string(), n)).or_default();
        if r.get("origin").map(String::as_str) == Some("compiled") {
            entry.cold_ms = Some(object + load);
        }
        entry.cached_ms = Some(cached + load);
    }
    out
}

/// The derived ratios, one line per (operation, precision, elements, measure): each is the first variant's speed
/// over the second's (time of the second / time of the first, both in that precision), plus the calls after which
/// getting the staged kernel (cold: compiled; cached: from the kernel cache) is paid back by its device-time saving
/// per call over the generic fused kernel (empty when it saves nothing).
fn ratios_csv(table: &Table, compile: &BTreeMap<(String, String, usize), CompileCost>) -> String {
    let mut text = String::from(
        "operation,precision,elements,measure,fused_over_unfused,staged_over_fused,fused_over_vendor,\
         staged_over_vendor,fused_over_hand,vendor_over_hand,staged_compile_ms,staged_payoff_calls,staged_cached_ms,\
         staged_cached_payoff_calls\n",
    );
    let fmt = |x: Option<f64>| x.map(|v| format!("{v:.4}")).unwrap_or_default();
    for op in OPERATIONS {
        for p in table.precisions() {
            for n in table.elements(op, p) {
                for m in MEASURES {
                    ratios_line(&mut text, table, compile, (op, p, n, m), fmt);
                }
            }
        }
    }
    text
}

/// One line of [`ratios_csv`]: the point (operation, precision, elements, measure).
fn ratios_line(
    text: &mut String,
    table: &Table,
    compile: &BTreeMap<(String, String, usize), CompileCost>,
    (op, p, n, m): (&str, &str, usize, &str),
    fmt: impl Fn(Option<f64>) -> String,
) {
    let t = |v: &str| table.time(op, p, v, n, m);
    let over = |a: &str, b: &str| Some(t(b)? / t(a)?);
    let cost = compile.get(&(op.to_string(), p.to_string(), n)).copied().unwrap_or_default();
    let saving = t("fused").zip(t("fused_staged")).map(|(g, s)| g - s);
    let payoff = |c: Option<f64>| match (c, saving) {
        (Some(c), Some(s)) if s > 0.0 && m == "device" => format!("{:.0}", (c / s).ceil()),
        _ => String::new(),
    };
    let ms = |c: Option<f64>| c.map(|c| format!("{c:.3}")).unwrap_or_default();
    text.push_str(&format!(
        "{op},{p},{n},{m},{},{},{},{},{},{},{},{},{},{}\n",
        fmt(over("fused", "unfused")),
        fmt(over("fused_staged", "fused")),
        fmt(over("fused", "vendor")),
        fmt(over("fused_staged", "vendor")),
        fmt(over("fused", "hand")),
        fmt(over("vendor", "hand")),
        ms(cost.cold_ms),
        payoff(cost.cold_ms),
        ms(cost.cached_ms),
        payoff(cost.cached_ms),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(op: &str, v: &str, n: usize, m: &str, t: f64) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("status".to_string(), "ok".to_string()),
            ("operation".into(), op.into()),
            ("variant".into(), v.into()),
            ("elements".into(), n.to_string()),
            ("measure".into(), m.into()),
            ("time_ms_median".into(), t.to_string()),
            ("gbps".into(), (1.0 / t).to_string()),
        ])
    }

    fn dot_rows() -> Vec<BTreeMap<String, String>> {
        vec![
            row("dot", "hand", 1024, "device", 0.02),
            row("dot", "unfused", 1024, "device", 0.04),
            row("dot", "fused", 1024, "device", 0.02),
            row("dot", "fused_staged", 1024, "device", 0.01),
            row("dot", "vendor", 1024, "device", 0.03),
        ]
    }

    /// The same dot in FP64, each time twice FP32's except the vendor's (three times).
    fn dot_rows_f64() -> Vec<BTreeMap<String, String>> {
        dot_rows()
            .into_iter()
            .map(|mut r| {
                let t: f64 = r["time_ms_median"].parse().unwrap();
                let t = if r["variant"] == "vendor" { 3.0 * t } else { 2.0 * t };
                r.insert("time_ms_median".into(), t.to_string());
                r.insert("precision".into(), "f64".into());
                r
            })
            .collect()
    }

    #[test]
    fn ratios_and_payoff_come_from_the_rows() {
        // FP32 rows without a precision column (a CSV from before FP64), and FP64 rows with one.
        let rows: Vec<_> = dot_rows().into_iter().chain(dot_rows_f64()).collect();
        let refs: Vec<&BTreeMap<String, String>> = rows.iter().collect();
        let table = Table::new(&refs);
        let cost = CompileCost { cold_ms: Some(500.0), cached_ms: Some(0.2) };
        let cost_f64 = CompileCost { cold_ms: Some(600.0), cached_ms: Some(0.2) };
        let compile = BTreeMap::from([
            (("dot".to_string(), "f32".to_string(), 1024), cost),
            (("dot".to_string(), "f64".to_string(), 1024), cost_f64),
        ]);
        let text = ratios_csv(&table, &compile);
        assert!(text.starts_with("operation,precision,elements,measure,fused_over_unfused,"), "{text}");
        let line = text.lines().find(|l| l.starts_with("dot,f32,1024,device")).unwrap();
        // Staging saves 0.01 ms per call: 500 ms pay back after 50000 calls, 0.2 ms after 20.
        assert_eq!(line, "dot,f32,1024,device,2.0000,2.0000,1.5000,3.0000,1.0000,0.6667,500.000,50000,0.200,20");
        let e2e = text.lines().find(|l| l.starts_with("dot,f32,1024,end_to_end")).unwrap();
        assert_eq!(e2e, "dot,f32,1024,end_to_end,,,,,,,500.000,,0.200,");
        // FP64's ratios are within FP64: its vendor (ddot) took 3x FP32's, the rest 2x; staging saves 0.02 ms.
        let line = text.lines().find(|l| l.starts_with("dot,f64,1024,device")).unwrap();
        assert_eq!(line, "dot,f64,1024,device,2.0000,2.0000,2.2500,4.5000,1.0000,0.4444,600.000,30000,0.200,10");
    }

    /// The table the runner, `suite plot` and `suite merge` write: the ratios with the compile costs read from
    /// the folder's compile CSV (FP32 where the CSV has no precision column, as written before FP64); nothing
    /// without an `ok` row.
    #[test]
    fn the_derived_table_reads_the_compile_costs_beside_the_csv() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(COMPILE_CSV),
            "operation,elements,defines,origin,object_ms,load_ms,cached_object_ms\n\
             dot,1024,FUSION_N=1024u,compiled,500.0,0.0,0.2\n",
        )
        .unwrap();
        let written = tables(&dot_rows(), dir.path());
        assert_eq!(written.len(), 1);
        assert_eq!(written[0].0, RATIOS_CSV);
        assert!(
            written[0]
                .1
                .contains("\ndot,f32,1024,device,2.0000,2.0000,1.5000,3.0000,1.0000,0.6667,500.000,50000,0.200,20\n"),
            "{}",
            written[0].1
        );
        let mut failed = dot_rows();
        failed.iter_mut().for_each(|r| {
            r.insert("status".into(), "fail".into());
        });
        assert!(tables(&failed, dir.path()).is_empty());
    }
}
