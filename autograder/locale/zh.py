"""Simplified Chinese translations: {English msgid: Chinese text}. Keep the {fields} of the msgid."""
MESSAGES = {
}
