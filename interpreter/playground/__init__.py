"""The local web playground (`jinjamark serve`)."""
