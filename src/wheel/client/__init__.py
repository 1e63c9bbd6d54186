"""The Python SDK: an asyncio client and the sync client that wraps it."""
