"""Robots: scene actors, drives, action mapping, their observation parts and real bounds."""
