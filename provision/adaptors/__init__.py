"""SDK adaptors: the only modules that import a cloud or hardware SDK, one module per SDK."""
