"""Chinese for gradient and stability checks (see zh.py)."""
MESSAGES = {
}
