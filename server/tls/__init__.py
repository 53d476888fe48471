"""``mockllm serve --tls``: HTTPS and WSS on the same port, with a certificate for loopback that
mockllm makes (files.py: the files a host serves with; loopback.py: making them)."""
