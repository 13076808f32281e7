"""bulk."""
