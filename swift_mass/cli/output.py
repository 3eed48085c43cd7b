"""How a ``swift-mass`` subcommand's result reaches the operator: JSON with
``--json``, else the subcommand's text, and the exit status."""
import json
import sys


def failed(err):
    """Say why a subcommand failed, on stderr; its exit status, 1."""
    print('swift-mass: %s: %s' % (type(err).__name__, err), file=sys.stderr)
    return 1


def show(args, result, text):
    """Print ``result`` as JSON (``args.json``) or ``text(result)``."""
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True, default=str))
    else:
        print(text(result))


def emit(args, compute, text, failing=lambda result: False):
    """Run ``compute()`` and :func:`show` its result.  Exit status 1 when it
    raises (saying why) or when ``failing(result)``, else 0."""
    try:
        result = compute()
    except Exception as err:
        return failed(err)
    show(args, result, text)
    return 1 if failing(result) else 0
