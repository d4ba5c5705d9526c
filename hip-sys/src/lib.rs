//! Raw HIP runtime and rocBLAS FFI (lands in this series).
