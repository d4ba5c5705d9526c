//! Turning command-line values into validated options. Errors name the flag to fix.

/// A flag's value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: {problem}")]
pub struct Error {
    /// The flag, e.g. `--sizes`.
    pub flag: &'static str,
    /// What is wrong and what is accepted.
    pub problem: String,
}

/// Parses one size: a positive integer (`1000`) or a power of two (`2^20`).
pub fn parse_size(flag: &'static str, text: &str) -> Result<usize, Error> {
    let text = text.trim();
    let bad = || Error { flag, problem: format!("`{text}` is not a size: use a positive integer or 2^N") };
    let value = if let Some(exp) = text.strip_prefix("2^") {
        let exp: u32 = exp.parse().map_err(|_| bad())?;
        1usize.checked_shl(exp).filter(|_| exp < usize::BITS).ok_or_else(bad)?
    } else {
        text.parse::<usize>().map_err(|_| bad())?
    };
    if value == 0 {
        return Err(Error { flag, problem: "sizes must be at least 1".into() });
    }
    Ok(value)
}

/// Parses a list of sizes; an empty list gives `default`.
pub fn parse_sizes(flag: &'static str, texts: &[String], default: &[usize]) -> Result<Vec<usize>, Error> {
    if texts.is_empty() {
        return Ok(default.to_vec());
    }
    texts.iter().map(|t| parse_size(flag, t)).collect()
}

/// Checks the repetition count: at least one timed launch, so there is a median to report.
pub fn check_reps(reps: u32) -> Result<u32, Error> {
    if reps == 0 {
        return Err(Error { flag: "--reps", problem: "at least 1 timed repetition is needed".into() });
    }
    Ok(reps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_accept_integers_and_powers_of_two() {
        let cases: [(&str, Option<usize>); 8] = [
            ("1000", Some(1000)),
            (" 3000 ", Some(3000)),
            ("2^10", Some(1024)),
            ("2^0", Some(1)),
            ("0", None),
            ("-5", None),
            ("2^99", None),
            ("1e3", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_size("--sizes", text).ok(), want, "{text}");
        }
        let err = parse_size("--sizes", "abc").unwrap_err();
        assert_eq!(err.to_string(), "--sizes: `abc` is not a size: use a positive integer or 2^N");
    }

    #[test]
    fn empty_list_means_default() {
        assert_eq!(parse_sizes("--sizes", &[], &[7]).unwrap(), vec![7]);
        assert_eq!(parse_sizes("--sizes", &["1".into(), "2^3".into()], &[7]).unwrap(), vec![1, 8]);
        assert!(check_reps(0).is_err());
    }
}
