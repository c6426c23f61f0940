"""The subcommands of ``lafuzz``, one module each: its command and, beside it, its parser (``add_subcommand``)."""
