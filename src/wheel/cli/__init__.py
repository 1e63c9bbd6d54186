"""Every `wheel` command: parse the arguments, build one configuration, run. Nothing else
lives here, and nothing outside this package imports click (`main.py` is the group)."""
