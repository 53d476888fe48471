"""The inspector: a web page at ``/_mockllm/ui`` showing the library, the machines, the journal."""
