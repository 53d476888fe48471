"""The echo responder: replies without a script, with tool arguments generated from JSON Schemas."""
