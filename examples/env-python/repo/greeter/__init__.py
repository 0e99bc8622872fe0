"""Pages of a tiny site: each title gets its address."""

from akira_example_slug import slugify


def page_path(title):
    """The path of the page with this title."""
    return "/pages/" + slugify(title) + "/"
