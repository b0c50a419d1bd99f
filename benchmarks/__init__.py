"""Side-by-side benchmarks; each script prints its figures and the ratio to a reference run."""
