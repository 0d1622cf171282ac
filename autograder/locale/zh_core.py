"""Chinese for the grader's messages: checks, limits, reports, feedback pages (see zh.py)."""
MESSAGES = {
}
