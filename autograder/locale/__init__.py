"""The gettext catalogues: <lang>/LC_MESSAGES/grader.po (the grader's messages, read by
autograder/i18n.py; template grader.pot) and notebooks.po (the notebooks' text, applied at release
by autograder/commands/notebook_i18n.py; template notebooks.pot)."""
