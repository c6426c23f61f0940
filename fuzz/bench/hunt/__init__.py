"""A time-to-bug benchmark: how fast the default campaign finds bugs planted in the tree, one at a time.

A catalogue of planted bugs (``bugs.toml``, read by ``catalogue``) says for each bug one edit of one file and a
small targeted case that proves it wrong. ``python -m fuzz.bench.hunt`` copies the tree, plants a bug, runs the
README's campaign there for a budget and records whether and when a new finding came, and its minimal case
(``hunting``); it writes the table and a plot of bugs found against time (``results``). ``--check`` runs each
bug's targeted case planted and unplanted instead, which validates the catalogue (``targeted``). See
docs/hunt.md.
"""
