"""Allow `python -m provision`."""
from provision.cli.main import run

run()
