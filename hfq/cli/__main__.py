"""``python -m hfq.cli``: the ``hfq`` command."""

from hfq.cli.app import main

if __name__ == "__main__":
    raise SystemExit(main())
