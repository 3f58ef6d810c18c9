"""Settings: the declarations (:mod:`.schema`), the TOML store (:mod:`.store`) and secrets in the
OS keyring (:mod:`.secrets`). Pure Python, no Qt."""
