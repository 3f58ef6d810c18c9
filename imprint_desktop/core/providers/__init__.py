"""Models the research engine can use: the interface (:mod:`.base`), llama.cpp, remote servers.

The interface is :mod:`.base`, with :mod:`.estimate` (token estimates for any script). Local
models are :mod:`.local`. A remote OpenAI-compatible server is :mod:`.remote` (the provider: the
deadline race, retries, the connection test), with :mod:`.remote_config` (the address, key and
context window the person set), :mod:`.remote_request` (what is sent and what its prompt costs),
:mod:`.remote_failures` (what goes wrong, retried or worded) and :mod:`.limits` (what a server
says of its context window). Its answers are read by :mod:`.bodies` (bounded reads), through
:mod:`.sse` (event-stream framing) into :mod:`.chunks` (chunk assembly), all failing one way
(:mod:`.wire`).
"""
