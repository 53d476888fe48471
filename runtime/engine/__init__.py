"""Stage 5 of the pipeline: the engine -- conversations, conditions, step selection, the journal."""
