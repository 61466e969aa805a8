//! Open-model constant-rate HTTP load generator: attack → results stream → report/plot/encode.
