//! Reading benchmark output (ours, perftest's, the original C suite's) into measurements (being
//! built).
