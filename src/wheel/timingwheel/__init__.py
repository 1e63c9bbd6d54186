"""The in-memory hierarchical timing wheel and its asyncio driver (pure: no I/O, injected clock)."""
