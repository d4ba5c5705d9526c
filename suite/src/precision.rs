//! The floating-point precisions the suite sweeps (FP32, FP64): one type for every experiment, kernel generator,
//! peak and report that needs to say which (the `precision` column of matmul's and fusion's rows).

use serde::Serialize;

/// A floating-point precision the experiments sweep: each row says which (`precision` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// IEEE binary32, `float`: unit roundoff 2⁻²⁴. The default: every row written before FP64 existed was FP32.
    #[default]
    F32,
    /// IEEE binary64, `double`: unit roundoff 2⁻⁵³.
    F64,
}

impl Precision {
    /// Both, in sweep order.
    pub const ALL: [Precision; 2] = [Precision::F32, Precision::F64];

    /// The name in CSV rows, keys and on the command line: `f32`, `f64`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }

    /// `FP32`, `FP64`, for titles and text.
    pub fn label(self) -> &'static str {
        match self {
            Precision::F32 => "FP32",
            Precision::F64 => "FP64",
        }
    }

    /// Bytes per element.
    pub fn bytes(self) -> u64 {
        match self {
            Precision::F32 => 4,
            Precision::F64 => 8,
        }
    }

    /// Parses `f32` or `f64` (also `fp32`, `fp64`, any case); a row without a precision (a CSV from before the
    /// column existed) is FP32, see [`Precision::of_row`].
    pub fn parse(text: &str) -> Result<Precision, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "f32" | "fp32" => Ok(Precision::F32),
            "f64" | "fp64" => Ok(Precision::F64),
            other => Err(format!("`{other}` is not a precision; use f32 or f64")),
        }
    }

    /// Unit roundoff u = 2⁻ᵖ for p significand bits: the largest relative error of one rounding to nearest.
    pub fn unit_roundoff(self) -> f64 {
        match self {
            Precision::F32 => f64::from(f32::EPSILON) / 2.0,
            Precision::F64 => f64::EPSILON / 2.0,
        }
    }

    /// The precision of a CSV row: its `precision` column, FP32 where the column is missing or empty (every row
    /// written before FP64 existed was FP32).
    pub fn of_row(row: &std::collections::BTreeMap<String, String>) -> Precision {
        row.get("precision").and_then(|p| Precision::parse(p).ok()).unwrap_or(Precision::F32)
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
