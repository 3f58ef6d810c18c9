"""Models the research engine can use: the interface (:mod:`.base`), llama.cpp, remote servers."""
