"""``python -m hfq.service``: the service's commands (:mod:`hfq.service.commands`)."""

import sys

from hfq.service.commands import main

sys.exit(main())
