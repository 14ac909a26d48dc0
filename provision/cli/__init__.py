"""The `provision` command line: thin wrappers that call the library and render its records."""
