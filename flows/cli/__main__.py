"""`python -m flows.cli ...` runs the `medasr` command."""

from flows.cli.commands import main

main()
