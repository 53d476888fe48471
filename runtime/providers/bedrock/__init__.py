"""AWS Bedrock Runtime, in one folder because it is four APIs under one path: the adapter
(``adapter.py``) hands each ``/model/{modelId}/…`` operation to its module (``converse``,
``invoke``, ``embed``), which share the auth, errors and framing of ``wire`` and the AWS
event-stream encoding of ``eventstream``."""
