"""The model manager (installed, search, recommended, downloads) and the first-run welcome that
picks a model."""
