"""The result model and its readers: figures, history, monitoring, charts."""
