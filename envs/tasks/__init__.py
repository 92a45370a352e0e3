"""Tasks, one file each (scene contents, episodes, goals, success, reward terms, goal markers); arena.py holds
the pieces they share."""
