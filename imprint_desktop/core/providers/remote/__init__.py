"""A remote OpenAI-compatible server as a provider.

:mod:`.client` is the provider (the deadline race, retries, the connection test), with
:mod:`.server` (the address, key and context window the person set), :mod:`.request` (what is
sent and what its prompt costs), :mod:`.failures` (what goes wrong, retried or worded) and
:mod:`.stated_window` (what a server says of its context window). Its answers are read by
:mod:`.bodies` (bounded reads), through :mod:`.sse` (event-stream framing) into :mod:`.chunks`
(chunk assembly), all failing one way (:mod:`.wire`).
"""
