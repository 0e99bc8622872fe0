"""The dependency of Akira's env-python example, served by the example's local package index."""

import re

__version__ = "1.0.0"


def slugify(text):
    """Lowercase text, with each run of anything but letters and digits made one hyphen."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
