"""Models the research engine can use: the interface (:mod:`.base`), llama.cpp, remote servers.

The interface is :mod:`.base`, with :mod:`.estimate` (token estimates for any script) and
:mod:`.call_markup` (calls a model writes as text, read without llama.cpp for either provider).
Local models are :mod:`.local`; a remote OpenAI-compatible server is :mod:`.remote`.
"""
