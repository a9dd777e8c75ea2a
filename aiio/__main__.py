"""`python -m aiio` runs the command line."""

from aiio.cli import main

if __name__ == "__main__":
    main()
