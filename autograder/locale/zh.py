"""Simplified Chinese translations: {English msgid: Chinese text}. Keep the {fields} of the msgid.

Split by topic so that each part can be edited on its own; MESSAGES is their union.
"""
from .zh_core import MESSAGES as _CORE
from .zh_rules import MESSAGES as _RULES
from .zh_gradients import MESSAGES as _GRADIENTS
from .zh_wall import MESSAGES as _WALL
from .zh_class import MESSAGES as _CLASS
from .zh_audit import MESSAGES as _AUDIT

MESSAGES = {**_CORE, **_RULES, **_GRADIENTS, **_WALL, **_CLASS, **_AUDIT}
