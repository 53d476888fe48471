"""Stage 1 of the pipeline, text → tree: the Lark parser, the transformer, error recovery, the loader."""
