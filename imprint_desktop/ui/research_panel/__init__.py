"""The research panel beside the chat (budgets, activity, evidence) and a finished reply's research
record (:mod:`.record_dialog`)."""
