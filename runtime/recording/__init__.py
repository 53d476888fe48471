"""Recorded traffic → readable scripts.

A recorded exchange (an HTTP request and the answer a real API gave, from the recording proxy or an
imported cassette) is read with the same wire knowledge the server speaks: the request through the
provider's own adapter (so conditions see what serving sees), the answer through one small reader per
provider (:mod:`.readers`). :mod:`.translate` groups the exchanges into conversations by the serving
keys and builds one syntax tree per conversation, which the formatter prints. A new provider is one
reader more."""
