"""Fixtures of the integration tests: scripted OpenAI-compatible servers and the real one."""

from tests.support.llama_server import real_llama_server
from tests.support.openai_server import openai_server

__all__ = ["openai_server", "real_llama_server"]
