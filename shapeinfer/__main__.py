"""``python -m shapeinfer``: the ``shapeinfer`` command."""

from shapeinfer_cli.main import entry

if __name__ == "__main__":
    entry()
