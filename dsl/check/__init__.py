"""Stage 3 of the pipeline: the semantic checks a parsed library must pass before it compiles."""
