"""The chat: the transcript, the composer, the conversations, the cards that ask the person, the
toolbar, and what an answer's citations and links open (:mod:`.chat_session` wires them to the
bridge)."""
