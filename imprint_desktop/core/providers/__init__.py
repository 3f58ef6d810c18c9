"""Models the research engine can use: the interface (:mod:`.base`), llama.cpp, remote servers.

The interface is :mod:`.base`, with :mod:`.estimate` (token estimates for any script). Local
models are :mod:`.local`; a remote OpenAI-compatible server is :mod:`.remote`.
"""
