"""The HTTP app: the Starlette app and its provider endpoints (app), how a reply is written to the wire
(responder, streaming), the admin API under ``/_mockllm`` (admin), the route table built from the
provider registry (routes) and the deadline on a request body (body_deadline)."""
