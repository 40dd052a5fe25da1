"""Running things: the engine process, the one child supervisor, actions and metrics."""
