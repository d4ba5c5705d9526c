//! Kernel sources, compilation, cache, metadata and loading (lands in this series).
