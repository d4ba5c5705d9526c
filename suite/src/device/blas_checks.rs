//! Size checks of the vendor BLAS reductions (sdot, sasum, ddot, dasum), shared by both platforms: the buffers must
//! hold `n` elements of the routine's type, and `n` must fit the libraries' 32-bit count.

use super::{Error, RawAlloc, Result};

/// Checks that a vendor BLAS reduction over `n` FP32 elements fits its buffers (`inputs` of n floats, one float
/// for the result) and the library's 32-bit element count; returns `n` as that count.
pub fn check_blas_reduction(
    what: &'static str,
    n: usize,
    inputs: &[&dyn RawAlloc],
    result: &dyn RawAlloc,
) -> Result<i32> {
    check_blas_reduction_of(what, n, std::mem::size_of::<f32>(), inputs, result)
}

/// [`check_blas_reduction`] for elements of `element_bytes` (4: FP32, 8: FP64): `inputs` of n elements, one
/// element for the result.
pub fn check_blas_reduction_of(
    what: &'static str,
    n: usize,
    element_bytes: usize,
    inputs: &[&dyn RawAlloc],
    result: &dyn RawAlloc,
) -> Result<i32> {
    let count = i32::try_from(n)
        .map_err(|_| Error::SizeMismatch { what, detail: format!("n = {n} exceeds the BLAS's 32-bit count") })?;
    let need = n
        .checked_mul(element_bytes)
        .ok_or(Error::SizeMismatch { what, detail: format!("{n} elements of {element_bytes} bytes overflow") })?;
    for x in inputs {
        if x.bytes() < need {
            return Err(Error::SizeMismatch {
                what,
                detail: format!("an input holds {} bytes, needs {need}", x.bytes()),
            });
        }
    }
    if result.bytes() < element_bytes {
        return Err(Error::SizeMismatch {
            what,
            detail: format!("the result holds {} bytes, needs {element_bytes}", result.bytes()),
        });
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use std::any::Any;

    use super::*;

    /// A host stand-in of `bytes` bytes for the size checks, which read nothing else.
    struct Sized(usize);

    impl RawAlloc for Sized {
        fn device_ptr(&self) -> u64 {
            0
        }
        fn bytes(&self) -> usize {
            self.0
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    /// A BLAS reduction's buffers are checked in its own element size: what holds n floats is too small for n
    /// doubles, and the result needs a whole element.
    #[test]
    fn blas_reductions_check_their_buffers_in_their_element_size() {
        let (floats, doubles) = (Sized(4 * 100), Sized(8 * 100));
        assert_eq!(check_blas_reduction("sdot", 100, &[&floats, &floats], &Sized(4)).unwrap(), 100);
        assert_eq!(check_blas_reduction_of("ddot", 100, 8, &[&doubles, &doubles], &Sized(8)).unwrap(), 100);
        let err = check_blas_reduction_of("ddot", 100, 8, &[&doubles, &floats], &Sized(8)).unwrap_err();
        assert_eq!(
            err.to_string(),
            Error::SizeMismatch { what: "ddot", detail: "an input holds 400 bytes, needs 800".into() }.to_string()
        );
        let err = check_blas_reduction_of("dasum", 100, 8, &[&doubles], &Sized(4)).unwrap_err();
        assert!(err.to_string().contains("the result holds 4 bytes, needs 8"), "{err}");
        let err = check_blas_reduction_of("dasum", 1 << 31, 8, &[&doubles], &Sized(8)).unwrap_err();
        assert!(err.to_string().contains("exceeds the BLAS's 32-bit count"), "{err}");
    }
}
