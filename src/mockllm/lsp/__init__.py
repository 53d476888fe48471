"""The language server behind `mockllm lsp`: pure editor functions (what completes where, what a
position refers to) and the pygls adapter in :mod:`mockllm.lsp.server` that serves them."""
