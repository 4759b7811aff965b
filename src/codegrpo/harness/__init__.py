"""Programs that run inside the sandbox around a completion (read as text, never imported on the host)."""
