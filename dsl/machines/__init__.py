"""Stage 4 of the pipeline, tree → machines: the compiler, the compiled tables, their diagrams."""
