"""Stage 6 of the pipeline: the reply plan -- a step's reply resolved for one request."""
