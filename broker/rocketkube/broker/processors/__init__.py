"""Request processors: one module per request family, each exposing ``table(ctx)``."""
