"""Figures and tables for people to read."""
