"""Pure-Python heart of Imprint: no Qt here (checked by import-linter in CI)."""
