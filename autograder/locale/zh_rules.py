"""Chinese for complexity and forbidden-API checks (see zh.py)."""
MESSAGES = {
}
