"""``python -m lorestore``: the ``lorestore`` command run by an interpreter whose scripts folder
is not on PATH (a virtual environment not activated, a host configured with ``python -m``)."""

from lorestore.cli.entry import main

main()
