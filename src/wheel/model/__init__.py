"""wheel's domain types, shared by the store, the scheduler and the API edges.

Plain frozen dataclasses and enums: no I/O, no protobuf, no database types.
"""
