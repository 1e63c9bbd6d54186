"""The scheduler node: loader, materialiser, dispatcher, recorder, reaper, API servicers."""
