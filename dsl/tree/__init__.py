"""Stage 2 of the pipeline: the syntax tree -- nodes, their canonical descriptions, reply templates."""
