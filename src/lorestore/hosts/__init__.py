"""The agent hosts lorestore installs into (Claude Code, Cursor, Codex): what install writes
(formats.py, edits.py, install.py), the skill text (skill.py), the lifecycle hooks' payloads
and answers (events.py) and their runtime (hook.py), and ``lorestore doctor`` (doctor.py)."""

HOSTS = ("claude-code", "cursor", "codex")
