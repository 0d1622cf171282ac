"""Translations of the student-facing messages, one module per language (see autograder/i18n.py)."""
