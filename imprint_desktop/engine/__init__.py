"""Qt glue between the widgets and the pure-Python engine: threads, the bridge, download workers."""
